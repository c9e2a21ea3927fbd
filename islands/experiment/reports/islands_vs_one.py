"""The ``islands-vs-one`` report: k islands against one population k times larger.

Per task, one row per arm of ``experiments/islands-vs-one.yaml``: its shape (``islands``: k
islands with migration; ``isolated``: k islands, no migrants; ``one``: one island with
``popsize_scale`` k), success rate, the Kaplan-Meier median *training episodes* to solve
(confirmed solves; unsolved runs censored at the episodes they spent) with its 95% interval,
and the median seconds and episodes per second where the runs had the machine to
themselves (k islands are k processes; one island steps its envs on EnvPool threads beside
one main thread, so the two shapes need not use the same cores equally). Then, per k, the
archipelago against the one population: the ratio of medians and whether their intervals
overlap (the issue's bar: "fewer episodes, intervals that do not overlap"), a log-rank
p-value and, seed by seed, which shape solved first (a sign test); one sentence per task
answers "do islands help here, and by how much".
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..cells import cell_stats, ran
from ..figures import km_curves
from ..stats import KM
from .common import Context, fmt, footnotes, km_cell, md_table, wall_cell
from .versus import km_of, versus

SHAPES = ("islands", "isolated", "one")  # in the order the table lists them


def arm_shape(fields: dict[str, Any]) -> tuple[str, int]:
    """(shape, k) of an arm's launcher fields: one island k times larger, k isolated
    islands (``migrants: 0``), or k islands with migration."""
    islands = int(fields.get("islands") or 1)
    if islands == 1:
        return "one", int(fields.get("popsize_scale") or 1)
    return ("isolated" if fields.get("migrants") == 0 else "islands"), islands


def _km(runs: pd.DataFrame) -> KM:
    return km_of(runs, "episodes_used")


def task_rows(runs: pd.DataFrame, arms: dict[str, dict]) -> pd.DataFrame:
    """One row per arm of one task's runs, in the order the arms came."""
    rows = []
    for arm, cell in runs.groupby("arm", sort=False):
        shape, k = arm_shape(arms.get(arm, {}))
        km, c = _km(cell), cell_stats(cell)
        alone = bool((cell["concurrency"].fillna(1) <= 1).all())
        rows.append({
            "arm": arm, "k": k, "shape": shape,
            "popsize per island": cell["popsize"].iloc[0] * (k if shape == "one" else 1),
            "solved": f"{int(c['solved'])}/{int(c['runs'])}",
            "median training episodes [95% CI]": km_cell(km.median, km.low, km.high,
                                                         km.no_count),
            "median s to solve": wall_cell(pd.Series(c)) if alone else "— (runs shared "
                                                                       "the machine)",
            # the system factor: k processes against one island's EnvPool threads
            "episodes/s": (cell["total_episodes"] / cell["wall_s"]).median() if alone
            else math.nan,
            "median confirmation": c["confirmation_mean"],
            "_km": km, "_runs": cell})
    return pd.DataFrame(rows).sort_values(
        ["k", "shape"], key=lambda s: s.map(SHAPES.index) if s.name == "shape" else s,
        kind="stable")


def compare(a: pd.Series, b: pd.Series) -> dict[str, Any]:
    """Arm ``a`` (a row of :func:`task_rows`) against arm ``b`` in training episodes, on the
    seeds both ran (:func:`~islands.experiment.reports.versus.versus`)."""
    return versus(a["_runs"], b["_runs"], "episodes_used")


def _verdict(c: dict[str, Any], a: str, b: str) -> str:
    if math.isnan(c["ratio"]):
        return f"{a} vs {b}: no median to compare"
    side = "fewer" if c["ratio"] < 1 else "more"
    how = ("intervals apart" if c["apart"] else "intervals overlap")
    pair = c.get("paired")
    seeds = "" if pair is None else (
        f"; first on {pair.a_first} of {pair.pairs} seeds, behind on {pair.b_first}, sign "
        f"test p = {fmt(pair.sign_p, 2)}")
    only = (f" on the {c['seeds']} seeds both ran ({c['unshared']} other runs left out)"
            if c.get("unshared") else "")
    return (f"{a} used {fmt(c['ratio'], 3)}x the episodes of {b}{only} ({side}; {how}, "
            f"log-rank p = {fmt(c['p'], 2)}{seeds})")


def task_answer(env: str, t: pd.DataFrame) -> str:
    """One sentence for one task: per k, islands with migration against one population.
    A difference is shown where the medians' intervals are apart; where they overlap but
    the log-rank test (every run's time, not just the medians) gives p < 0.05 the sentence
    says so, as weaker evidence, and weaker still where the seed-by-seed sign test does
    not agree (p >= 0.05: HalfCheetah's k = 4, log-rank 0.039, sign test 0.34)."""
    parts: list[str] = []
    found: dict[str, list] = {"help": [], "cost": [], "ahead": [], "behind": [],
                              "unpaired": []}
    for k, cell in t.groupby("k", sort=True):
        by = {r["shape"]: r for _, r in cell.iterrows()}
        if "islands" not in by or "one" not in by:
            continue
        c = compare(by["islands"], by["one"])
        parts.append(f"k = {k}: " + _verdict(c, f"{k} islands", "one population"))
        fewer = c["ratio"] < 1
        pair = c["paired"]
        if c["apart"]:
            found["help" if fewer else "cost"].append(k)
        elif c["p"] < 0.05 and pair is not None and not pair.sign_p < 0.05:
            found["unpaired"].append(k)
        elif c["p"] < 0.05:
            found["ahead" if fewer else "behind"].append(k)
        if "isolated" in by:
            m = compare(by["islands"], by["isolated"])
            parts[-1] += (f"; migration: {fmt(m['ratio'], 3)}x the isolated islands' episodes"
                          + (f" on the {m['seeds']} seeds both ran" if m["unshared"] else ""))
    if not parts:
        return f"**{env}.** Not enough arms yet to compare."
    return f"**{env}: {_headline(found)}.** " + "; ".join(parts) + "." + _own_size(t)


def _own_size(t: pd.DataFrame) -> str:
    """One island of the row's own popsize (k = 1, ARS's exact setup) against the row's
    default shape of 2 islands, where both ran: whether the archipelago costs episodes
    before it can help (docs/results/islands-vs-one/, section 10). "" otherwise."""
    one = t[(t["k"] == 1) & (t["shape"] == "one")]
    two = t[(t["k"] == 2) & (t["shape"] == "islands")]
    if one.empty or two.empty:
        return ""
    c = compare(one.iloc[0], two.iloc[0])
    return " At the row's own size: " + _verdict(c, "1 island", "2 islands") + "."


def _headline(found: dict[str, list]) -> str:
    ks = {how: ", ".join(map(str, k)) for how, k in found.items()}
    if found["help"]:
        return f"islands help at k = {ks['help']}"
    if found["cost"]:
        return f"islands cost episodes at k = {ks['cost']}"
    weak = "by the log-rank test; the medians' intervals overlap"
    if found["ahead"]:
        return f"islands ahead at k = {ks['ahead']} {weak}"
    if found["behind"]:
        return f"islands behind at k = {ks['behind']} {weak}"
    if found["unpaired"]:
        return (f"no difference shown seed by seed at k = {ks['unpaired']} (the log-rank "
                "test separates the shapes, the sign test on shared seeds does not)")
    return "no difference shown between islands and one population"


def islands_vs_one_report(ctx: Context) -> list[str]:
    done = ran(ctx.results)
    out = ["## The archipelago against one population", ""]
    if done.empty or "arm" not in done:
        return out + ["No finished runs yet.", ""]
    arms = ctx.spec.get("arms") or {}
    answers = []
    for env, runs in done.groupby("env", sort=False):
        t = task_rows(runs, arms)
        shown = t[[c for c in t.columns if not c.startswith("_")]]
        fig = km_curves(runs, by="arm", x="episodes_used")
        fig.axes[0].set_xlabel("training episodes (all islands)")
        out += [f"### {env}", "", *md_table(shown), "",
                ctx.figure(f"km_episodes_{env}", fig, f"{env}: runs not yet solved"), ""]
        answers.append(task_answer(env, t))
    return out + [*footnotes(done), "**Answers.**", "", *[f"- {a}" for a in answers], ""]
