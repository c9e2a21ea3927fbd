"""Per-cell statistics over an experiment's results table (:mod:`.collect`): what a report
puts in one cell of its tables, and 8.4's speedup table.

A cell is a configuration's runs that ran. Its times to solve are Kaplan-Meier medians
(:mod:`.stats`) in which unsolved, timed-out and crashed runs are censored at what they
used. Two things keep a figure out of a cell rather than let it mislead: a run that left no
count is counted (``*_no_count``), not placed at 0; and a median of seconds is not given
where runs stopped by their evaluation budget used fewer seconds than a solved run took
(:func:`censored_by_evals`). Test figures: the confirmation's mean (fresh episodes,
unbiased) with the selecting test's beside it.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from .stats import kaplan_meier, ratio_interval, wilson

# What became of a trial. ``timeout``: stopped by the clock (``time_budget``) unsolved;
# ``unsolved``: stopped on its evaluation (or generation) budget; ``missing``: not run yet
# (or still running), left out of every count.
STATUSES = ("solved", "unsolved", "timeout", "crashed", "oom", "missing")
FAILED = ("crashed", "oom")


# survival times: (column, the time to solve, the total it falls back to)
USED = (("evals_used", "evals_to_solve", "total_evals"),
        ("episodes_used", "episodes_to_solve", "total_episodes"),
        ("wall_used", "wall_to_solve", "wall_s"))


def complete(results: pd.DataFrame) -> pd.DataFrame:
    """The results table with its derived columns (computed again, so a table written
    before one existed gets it): each ``*_used`` is a solved run's time to solve, else the
    run's total, where it is censored. A run solved by its final test (after its budget)
    whose summary predates its count to solve has none: the genome was found within the
    run, so its total bounds the time (``solved_at_total``). ``confirmed`` None and no
    ``confirmation_mean`` where the table predates those columns."""
    r = results.copy()
    if "confirmed" not in r:
        r["confirmed"] = None
    if "confirmation_mean" not in r:
        r["confirmation_mean"] = math.nan
    solved = r["solved"].fillna(False).astype(bool)
    for used, to_solve, total in USED:
        r[used] = pd.to_numeric(r[to_solve].where(solved & r[to_solve].notna(), r[total]),
                                errors="coerce")
    r["solved_at_total"] = solved & r[[u[1] for u in USED]].isna().any(axis=1)
    return r


def ran(results: pd.DataFrame) -> pd.DataFrame:
    """The trials that ran (every status but ``missing``)."""
    return results[results["status"] != "missing"] if len(results) else results


def score_of(done: pd.DataFrame) -> tuple[str, str]:
    """(column, name) of the runs' final score: the confirmation's mean (fresh episodes,
    unbiased) where the runs have confirmations, else the selecting test's (older runs)."""
    if "confirmation_mean" in done and done["confirmation_mean"].notna().any():
        return "confirmation_mean", "confirmation means"
    return "test_mean", "selecting-test means (the runs predate confirmations)"


def censored_by_evals(runs: pd.DataFrame) -> int:
    """Runs stopped by their evaluation (or generation) budget after fewer seconds than a
    solved run of the cell took. Seconds to solve are then censored on another axis: such a
    run stopped early in seconds because its evaluations ran fast, not because it was
    unlucky, and it would not have solved later (its budget was spent); a Kaplan-Meier fit
    on seconds would take it as "might solve later" and bias the median. Where every such
    run used more seconds than every solve, the fit over the solves' range is exact."""
    solved = runs["solved"].astype(bool)
    if not solved.any():
        return 0
    last = runs.loc[solved, "wall_used"].max()
    return int(((runs["status"] == "unsolved") & (runs["wall_used"] < last)).sum())


def _tests(runs: pd.DataFrame) -> dict[str, Any]:
    """The runs' test figures: the confirmation (fresh episodes) and the selecting test."""
    conf, test = runs["confirmation_mean"].dropna(), runs["test_mean"].dropna()
    return {"confirmations": len(conf),
            "confirmation_mean": conf.median() if len(conf) else math.nan,
            "best_confirmation_mean": conf.max() if len(conf) else math.nan,
            "tested": len(test), "test_mean": test.median() if len(test) else math.nan,
            "best_test_mean": test.max() if len(test) else math.nan}


def cell_stats(runs: pd.DataFrame) -> dict[str, Any]:
    """One cell's statistics over the runs that ran: status counts, the success rate with
    its Wilson interval, the Kaplan-Meier median evaluations and seconds to solve with their
    intervals and runs without a count (seconds: NaN where :func:`censored_by_evals`), the
    median confirmation and selecting-test means, solved runs counted at their totals or
    unconfirmed, and the most trials that ran beside its runs."""
    n, k = len(runs), int(runs["solved"].sum()) if len(runs) else 0
    lo, hi = wilson(k, n)
    ev = kaplan_meier(runs["evals_used"], runs["solved"])
    wall = kaplan_meier(runs["wall_used"], runs["solved"])
    early = censored_by_evals(runs) if n else 0
    counts = runs["status"].value_counts()
    solved = runs["solved"].astype(bool)
    return {
        "runs": n, "solved": k, "success_rate": k / n if n else math.nan,
        "success_low": lo, "success_high": hi,
        **{f"n_{s}": int(counts.get(s, 0)) for s in STATUSES[1:-1]},
        "evals_to_solve": ev.median, "evals_low": ev.low, "evals_high": ev.high,
        "evals_no_count": ev.no_count,
        **({"wall_to_solve": math.nan, "wall_low": math.nan, "wall_high": math.nan} if early
           else {"wall_to_solve": wall.median, "wall_low": wall.low, "wall_high": wall.high}),
        "wall_no_count": wall.no_count, "wall_censored_by_evals": early,
        "solved_at_total": int(runs["solved_at_total"].sum()),
        "unconfirmed": int((solved & runs["confirmed"].isna()).sum()),
        **_tests(runs),
        "best_fitness": runs["best_fitness"].max(), "s_per_gen": runs["s_per_gen"].median(),
        "peak_mem_mb": runs["peak_mem_mb"].max(),
        "env_steps_per_s": runs["env_steps_per_s"].median(),
        "evals_per_s_island": runs["evals_per_s_island"].median(),
        "total_evals": runs["total_evals"].median(),
        "concurrency": runs["concurrency"].max(),
        "shared_cpus": bool(runs["shared_cpus"].fillna(False).astype(bool).any()),
        "stopped_by_clock": int(runs["stopped_by_clock"].sum()),
    }


def per_config(results: pd.DataFrame, by: str | list[str] = "config") -> pd.DataFrame:
    """One row per configuration (``by``) of the trials that ran (:func:`cell_stats`).
    Keeps the order in which configurations come."""
    keys = [by] if isinstance(by, str) else list(by)
    done = ran(results)
    rows = []
    for key, runs in done.groupby(keys, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(keys, key, strict=True))
        if "hidden" not in keys:
            row["hidden"] = runs["hidden"].iloc[0]
        rows.append(row | cell_stats(runs))
    columns = keys + ([] if "hidden" in keys else ["hidden"]) + list(cell_stats(done.head(0)))
    return pd.DataFrame(rows, columns=columns)


def _measured_rate(runs: pd.DataFrame, column: str = "evals_per_s_island") -> float:
    """Median of a per-island rate over the runs whose clock measured the system: each
    island on a core of its own (no shared CPUs) and no other trial beside it."""
    ok = runs[(runs["concurrency"] == 1) & ~runs["shared_cpus"].fillna(True).astype(bool)
              & runs["status"].isin(["solved", "unsolved", "timeout"])]
    if column == "steps_per_s_island":
        ok = ok.assign(steps_per_s_island=ok["env_steps_per_s"] / ok["islands"])
    return float(ok[column].median()) if len(ok) else math.nan


def speedup_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per number of islands k, against the fewest islands k0 (1 in a scaling grid):
    E(k), the Kaplan-Meier median evaluations to solve with its interval; the algorithmic
    factor A(k) = E(k0) / E(k) (interval: every ratio the two intervals allow); r(k), the
    median evaluations per second per island where the clock measured it (cores of its
    own, nothing beside it; NaN elsewhere); the system factor R(k) = r(k) / r(k0); the
    efficiency A(k) x R(k) (against linear from k0), the speedup (k / k0) x efficiency, and
    T(k), the Kaplan-Meier median seconds to solve, where R(k) was measured."""
    t = per_config(results, "islands")
    if t.empty:
        return t.assign(**{c: [] for c in SPEEDUP_COLUMNS})
    t = t.sort_values("islands", ignore_index=True)
    done = ran(results)
    t["rate"] = [_measured_rate(done[done["islands"] == k]) for k in t["islands"]]
    # the hardware's part alone: an evaluation of a better policy runs longer episodes, so
    # evaluations per second also move with how far the runs got
    t["step_rate"] = [_measured_rate(done[done["islands"] == k], "steps_per_s_island")
                      for k in t["islands"]]
    e0 = (t["evals_to_solve"].iloc[0], t["evals_low"].iloc[0], t["evals_high"].iloc[0])
    t["algorithmic"] = [e0[0] / e if 0 < e < math.inf and math.isfinite(e0[0]) else math.nan
                        for e in t["evals_to_solve"]]
    bounds = [ratio_interval((e0[1], e0[2]), (lo, hi))
              for lo, hi in zip(t["evals_low"], t["evals_high"], strict=True)]
    bounds[0] = (1.0, 1.0) if math.isfinite(e0[0]) else bounds[0]  # the baseline itself
    t["algorithmic_low"], t["algorithmic_high"] = zip(*bounds, strict=True)
    # E(k0) not reached: more than half the k0 runs were still unsolved at their budget,
    # so E(k0) > the most evaluations a k0 run used, and A(k) > that / E(k)
    # (a lower bound); E(k) not reached while E(k0) is: A(k) < E(k0) / the most a k run used
    follow = {k: float(done.loc[done["islands"] == k, "evals_used"].max()) for k in t["islands"]}
    k0 = t["islands"].iloc[0]
    t["algorithmic_bound"] = [follow[k0] / e if math.isinf(e0[0]) and 0 < e < math.inf
                              else math.nan for e in t["evals_to_solve"]]
    t["algorithmic_upper"] = [e0[0] / follow[k] if math.isfinite(e0[0]) and math.isinf(e)
                              and follow[k] > 0 else math.nan
                              for k, e in zip(t["islands"], t["evals_to_solve"], strict=True)]
    t["system"] = t["rate"] / t["rate"].iloc[0]
    t["system_measured"] = t["system"].notna()
    t["efficiency"] = t["algorithmic"] * t["system"]
    t["efficiency_low"] = t["algorithmic_low"] * t["system"]
    t["efficiency_high"] = t["algorithmic_high"] * t["system"]
    t["speedup"] = t["islands"] / t["islands"].iloc[0] * t["efficiency"]
    t.loc[~t["system_measured"], "wall_to_solve"] = math.nan
    return t


SPEEDUP_COLUMNS = ("rate", "step_rate", "algorithmic", "algorithmic_low", "algorithmic_high",
                   "algorithmic_bound", "algorithmic_upper", "system",
                   "system_measured", "efficiency", "efficiency_low", "efficiency_high",
                   "speedup")
