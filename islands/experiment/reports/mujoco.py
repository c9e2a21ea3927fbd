"""The ``mujoco`` report: training episodes to ARS's thresholds, against ARS V2-t.

H. Mania, A. Guy and B. Recht (2018), "Simple random search provides a competitive approach
to reinforcement learning", arXiv:1803.07055, Table 1: the median number of episodes ARS
V2-t (linear policy, state normalization, top directions) needed to reach each task's
threshold over its seeds, on the Gym v1 tasks. islands counts *training* episodes (every
evaluation's, and the re-evaluations of candidates and migrants); the 100-episode tests of
candidates are counted apart. A run's episodes to threshold are those spent when the
genome that later passed its test (and its confirmation) was found; unsolved runs are
censored at the episodes they spent (Kaplan-Meier), never dropped. A solved run whose summary
has no count (an older one, solved by the final hall-of-fame test) counts at the episodes it
spent, an upper bound, never at 0; the report counts those runs. A task run in more than
one shape (its runs' ``islands``) gets a row per shape, and each shape of islands is set
against ARS's own (one island of the row's size) on the seeds both ran.
"""

from __future__ import annotations

import math

import pandas as pd

from ...envdefaults import mujoco_task
from ..cells import ran
from ..stats import kaplan_meier
from .common import Context, fmt, footnotes, km_cell, md_table

# Table 1 of Mania et al. (2018): median episodes of ARS V2-t to the threshold (the env
# table's targets: islands.envdefaults.MUJOCO), keyed by task name without its version.
ARS_V2T_EPISODES = {"Swimmer": 427, "Hopper": 1973, "HalfCheetah": 1707,
                    "Walker2d": 24000, "Ant": 20800, "Humanoid": 142600}


def task_row(env_id: str, runs: pd.DataFrame) -> dict:
    """One task: runs, solved, the Kaplan-Meier median training episodes with its interval
    (``episodes_used``: a solved run without a count at its total), ARS V2-t's count, their
    ratio, how many runs solved within 3x ARS's count and the median confirmation and
    selecting-test means."""
    spent, solved = runs["episodes_used"], runs["solved"].astype(bool)
    km = kaplan_meier(spent, solved)
    islands = int(runs["islands"].iloc[0]) if "islands" in runs else 1
    ars = ARS_V2T_EPISODES.get(mujoco_task(env_id), math.nan)
    # a run counted at its total is within 3x only if its total is: an upper bound
    within = int((solved & (spent <= 3 * ars)).sum())
    return {"task": env_id, "shape": shape_name(islands), "runs": len(runs),
            "solved": int(solved.sum()),
            "median training episodes [95% CI]": km_cell(km.median, km.low, km.high,
                                                         km.no_count),
            "ARS V2-t": ars, "ratio to ARS": km.median / ars,
            "solved within 3x ARS": f"{within}/{len(runs)}",
            "median confirmation mean": runs["confirmation_mean"].median(),
            "median selecting test": runs["test_mean"].median()}


def shape_name(islands: int) -> str:
    """How a row's runs were shaped: ARS ran one population of the row's size."""
    return "1 island (ARS's shape)" if islands == 1 else f"{islands} islands"


def _islands(done: pd.DataFrame) -> pd.Series:
    """Each run's island count (1 where a run kept before the column had none)."""
    return done["islands"].fillna(1).astype(int) if "islands" in done else pd.Series(1, done.index)


def _by_shape(done: pd.DataFrame) -> list[tuple[str, int, pd.DataFrame]]:
    """(task, islands, runs) per task and shape: the ``islands`` column, so runs kept before
    an experiment named its arms fall under the shape they ran."""
    k = _islands(done)
    return [(env, int(n), runs) for (env, n), runs in
            done.assign(_k=k).groupby(["env", "_k"], sort=False)]


def mujoco_table(results: pd.DataFrame) -> pd.DataFrame:
    rows = [task_row(env, runs) for env, _, runs in _by_shape(ran(results))]
    return pd.DataFrame(rows)


def shape_answers(results: pd.DataFrame) -> list[str]:
    """Per task run in more than one shape: each shape against ARS's (one island), on the
    seeds both ran (islands_vs_one.compare: ratio of medians, log-rank, sign test)."""
    from .islands_vs_one import _km, _verdict, compare

    out = []
    by_task: dict[str, dict[int, pd.DataFrame]] = {}
    for env, k, runs in _by_shape(ran(results)):
        by_task.setdefault(env, {})[k] = runs
    for env, shapes in by_task.items():
        if 1 not in shapes or len(shapes) < 2:
            continue
        one = pd.Series({"_runs": shapes[1], "_km": _km(shapes[1])})
        for k, runs in sorted(shapes.items()):
            if k == 1:
                continue
            c = compare(pd.Series({"_runs": runs, "_km": _km(runs)}), one)
            out.append(f"**{env}.** " + _verdict(c, shape_name(k), "ARS's shape") + ".")
    return out


def where_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per run (task, shape, seed): on how many machines, over how many days and segments
    (a start and each resume) it ran, its hours and its first start and last end (UTC)."""
    cols = ["segments", "machines", "days", "run_hours", "first_start", "last_end"]
    done = ran(results)
    if "segments" not in done or not (pd.to_numeric(done["segments"]) > 0).any():
        return pd.DataFrame()
    k = _islands(done)
    t = done[["env", "seed", *cols]].rename(columns={"run_hours": "hours",
                                                    "first_start": "first start (UTC)",
                                                    "last_end": "last end (UTC)"})
    # a seed run in two shapes is two rows: say which is which
    t.insert(1, "shape", k.map(shape_name))
    t = t.sort_values(["env", "seed", "shape"]).reset_index(drop=True)
    t["seed"] = t["seed"].astype(str)  # a name, not a count to print with a comma
    none = ~(pd.to_numeric(t["segments"], errors="coerce") > 0)  # ran before the record
    t = t.astype(object)
    t.loc[none, [c for c in t.columns if c not in ("env", "shape", "seed")]] = "no record"
    for c in ("first start (UTC)", "last end (UTC)"):  # "2026-11-29 02:01"
        t[c] = t[c].map(lambda v: v[:16].replace("T", " ") if isinstance(v, str) else v)
    return t


def mujoco_report(ctx: Context) -> list[str]:
    t = mujoco_table(ctx.results)
    if t.empty:
        return ["## MuJoCo locomotion against ARS", "", "No finished runs yet.", ""]
    beat = int((t["ratio to ARS"] <= 1).sum())  # rows: a task in each shape it ran
    pairs = zip(t["task"], t["shape"], t["ratio to ARS"], strict=True)
    ratios = ", ".join(f"{task} ({shape}) {fmt(r)}" for task, shape, r in pairs)
    return ["## MuJoCo locomotion against ARS", "", *md_table(t), "",
            *footnotes(ran(ctx.results)),
            f"**Answer.** The median training episodes to the threshold are at most ARS "
            f"V2-t's on {beat} of {len(t)} rows (Kaplan-Meier medians; ARS's figures are "
            f"its paper's, on the Gym v1 tasks; these runs use EnvPool's v4 builds). "
            f"Ratios: {ratios}.", "", *_shape_section(ctx.results),
            *_where_section(ctx.results)]


def _shape_section(results: pd.DataFrame) -> list[str]:
    answers = shape_answers(results)
    if not answers:
        return []
    return ["## The default shape against ARS's", "",
            "Where a task ran in islands and in ARS's shape (one island of the row's size), "
            "on the seeds both ran:", "", *[f"- {a}" for a in answers], ""]


def _where_section(results: pd.DataFrame) -> list[str]:
    w = where_table(results)
    if w.empty:
        return []
    return ["## Where the runs ran", "",
            "A segment is a start or a resume (`islands.experiment keep`, then `resume` on "
            "another machine); machines are told apart by host and boot id, days are UTC "
            "calendar days; a segment whose machine was lost outright left no record.", "",
            *md_table(w), ""]
