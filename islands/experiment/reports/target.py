"""The ``bipedal`` (plan 8.2) and ``pong`` (plan 8.3) reports: was the task's target reached,
and how fast?

Per configuration: how many runs reached the target (Wilson interval), the Kaplan-Meier
median evaluations and minutes to it (unsolved runs censored, never dropped), and the
test figures. The answer names the configuration with the highest success; where no run
reached the target it gives the best confirmation mean (fresh episodes, unbiased), else the
best selecting test, and says which it is.
"""

from __future__ import annotations

import math

import pandas as pd

from ..cells import per_config
from ..figures import fitness_vs_evals, target_of
from .common import BY_EVALS, Context, _minutes, evals_cell, fmt, footnotes, md_table, rate_cell


def _best_test(done: pd.DataFrame) -> str:
    """The best confirmation mean (unbiased), else the best selecting test, named."""
    conf, test = done["confirmation_mean"].max(), done["test_mean"].max()
    if not math.isnan(conf):
        return f"best confirmation mean {fmt(conf)} (selecting test {fmt(test)})"
    if not math.isnan(test):
        return f"best selecting test {fmt(test)} (no confirmations: the runs predate them)"
    return ""


def target_sentence(results: pd.DataFrame) -> str:
    """Reached the target in k of n runs (Wilson interval) with the Kaplan-Meier median
    evaluations / minutes (the configuration with the highest success), or not reached
    with the best confirmation mean."""
    done = results[results["status"] != "missing"] if len(results) else results
    if done.empty:
        return "No finished runs yet."
    env = ", ".join(map(str, done["env"].dropna().unique()))
    target = target_of(done)
    t = per_config(done).sort_values(["success_rate", "evals_to_solve"],
                                     ascending=[False, True], ignore_index=True)
    best, where = t.iloc[0], "" if len(t) == 1 else f" with {t['config'].iloc[0]}"
    if best.solved > 0:
        wall = ("seconds not given: censored by the evaluation budget"
                if best.wall_censored_by_evals else "not reached"
                if math.isinf(best.wall_to_solve) else _minutes(best.wall_to_solve))
        return (f"{env}: reached {fmt(target)} in {rate_cell(best)} runs{where}; median "
                f"{evals_cell(best)} evaluations / {wall} (Kaplan-Meier, unsolved runs "
                "censored).")
    top = _best_test(done)
    if not top:
        return (f"{env}: not reached (target {fmt(target)}) in {len(done)} runs; no run "
                "reached a test.")
    return f"{env}: not reached (target {fmt(target)}) in {len(done)} runs; {top}."


def target_report(ctx: Context, title: str) -> list[str]:
    t = per_config(ctx.results)
    table = pd.DataFrame({
        "configuration": t["config"],
        "reached/runs [95% CI]": [rate_cell(r) for _, r in t.iterrows()],
        "median evals to target [95% CI]": [evals_cell(r) for r in t.itertuples()],
        "median wall to target (min)": [BY_EVALS if r.wall_censored_by_evals
                                        else r.wall_to_solve / 60 for r in t.itertuples()],
        "tested": t["tested"], "median confirmation mean": t["confirmation_mean"],
        "median selecting test": t["test_mean"],
        "best confirmation mean": t["best_confirmation_mean"],
        "median evals used": t["total_evals"]})
    fig = fitness_vs_evals(ctx.done, ctx.curves, title=title)
    return [f"## {title}", "", *md_table(table), "", *footnotes(ctx.done, t),
            f"**Answer.** {target_sentence(ctx.results)}", "",
            ctx.figure("fitness_vs_evals", fig, "best fitness vs evaluations"), ""]


def bipedal_report(ctx: Context) -> list[str]:
    return target_report(ctx, "BipedalWalker (plan 8.2)")


def pong_report(ctx: Context) -> list[str]:
    return target_report(ctx, "Pong from pixels (plan 8.3)")
