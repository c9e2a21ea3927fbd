"""An experiment's ``report.md`` and ``figures/*.png``, one writer per report kind.

Every report opens with the question, the command that reproduces it, the scale, budget,
grid and seeds, its provenance (:mod:`.provenance`), what became of every trial (failures
listed with their reasons), and a table per configuration whose numbers carry 95%
intervals (:mod:`.stats`): success rates with Wilson intervals, times to solve as
Kaplan-Meier medians in which unsolved, timed-out and crashed runs are censored, never
dropped. Then the answer in the research plan's terms (its section 8):

- ``generic``: best fitness vs evaluations per configuration.
- ``network-scaling`` (8.1): N_max and where sep-CMA-ES / OpenAI-ES overtake full CMA-ES
  (:mod:`.scaling_report`).
- ``bipedal`` (8.2), ``pong`` (8.3): whether and how fast the target was reached.
- ``worker-scaling`` (8.4): efficiency as algorithmic x system factor against 0.7x linear
  (:mod:`.scaling_report`).
- ``mujoco``: training episodes to ARS's thresholds against ARS V2-t (:mod:`.mujoco_report`).
- ``islands-vs-one``: k islands with and without migration against one population k times
  larger, per task (:mod:`.shape_report`).
- ``neuromod-vs-cmaes`` (8.5): two arms at an equal evaluation budget: log-rank test on the
  evaluations to solve, Mann-Whitney U on the final confirmation means (the selecting
  tests' only for runs that predate confirmations; no training fitness stands in for a
  missing test).

An answer says "no difference shown" where intervals overlap or a cell has fewer than
:data:`MIN_RUNS` runs. Works on a partial experiment (missing trials are listed).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from . import figures, names, stats
from .cells import per_config, score_of
from .collect import param_value
from .mujoco_report import mujoco_report
from .reporting import (  # noqa: F401  (fmt, md_table, header: the notebook's too)
    ALPHA,
    BY_EVALS,
    MIN_RUNS,
    Context,
    _minutes,
    config_appendix,
    evals_cell,
    few,
    fmt,
    footnotes,
    header,
    km_cell,
    md_table,
    rate_cell,
    with_interval,
)
from .scaling_report import (  # noqa: F401  (the notebook and tests use them from here)
    network_scaling_report,
    scaling_answer,
    scaling_sentence,
    speedup_sentence,
    worker_scaling_report,
)
from .shape_report import islands_vs_one_report
from .store import load


# ---- generic ---------------------------------------------------------------------------
def generic_report(ctx: Context) -> list[str]:
    fig = figures.fitness_vs_evals(ctx.results, ctx.curves)
    return ["## Learning curves", "",
            ctx.figure("fitness_vs_evals", fig, "best fitness vs evaluations"), ""]


# ---- 8.2 / 8.3 reaching a target -------------------------------------------------------
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
    target = figures._target_of(done)
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
    fig = figures.fitness_vs_evals(ctx.done, ctx.curves, title=title)
    return [f"## {title}", "", *md_table(table), "", *footnotes(ctx.done, t),
            f"**Answer.** {target_sentence(ctx.results)}", "",
            ctx.figure("fitness_vs_evals", fig, "best fitness vs evaluations"), ""]


def bipedal_report(ctx: Context) -> list[str]:
    return target_report(ctx, "BipedalWalker (plan 8.2)")


def pong_report(ctx: Context) -> list[str]:
    return target_report(ctx, "Pong from pixels (plan 8.3)")


# ---- 8.5 neuromodulated vs plain networks ----------------------------------------------
def arms_of(ctx: Context) -> tuple[str | None, list[Any], str]:
    """(column, its two values, a note): ``policy`` when it takes two values, else the grid
    field with exactly two values."""
    grid = ctx.spec.get("grid") or {}
    candidates = ["policy"] + [k for k in grid if k != "policy"]
    for col in candidates:
        values = ([param_value(v) for v in grid[col]] if col in grid
                  else list(dict.fromkeys(ctx.results.get(col, pd.Series()).dropna())))
        if len(values) == 2 and col in ctx.results.columns:
            values = sorted(values, key=lambda v: v != "neuromod")  # neuromod first
            note = "" if col == "policy" else f"Arms by `{col}` (the grid field with two values)."
            return col, values, note
    return None, [], "No two arms: neither `policy` nor a grid field takes exactly two values."


def _arm(runs: pd.DataFrame, score: str) -> dict[str, Any]:
    """One arm: its runs' success, Kaplan-Meier evaluations to solve, and the final scores
    (``score``) of the runs that have one; the others are listed as failures with a
    reason."""
    km = stats.kaplan_meier(runs["evals_used"], runs["solved"])
    tested = runs[score].dropna()
    untested = runs[runs[score].isna()]
    lo, hi = stats.wilson(int(runs["solved"].sum()), len(runs))
    return {
        "n": len(runs), "solved": int(runs["solved"].sum()), "success_low": lo,
        "success_high": hi, "km": km, "scores": tested.tolist(),
        "median": tested.median() if len(tested) else math.nan,
        "q25": tested.quantile(0.25) if len(tested) else math.nan,
        "q75": tested.quantile(0.75) if len(tested) else math.nan,
        "selecting": runs["test_mean"].median(),
        "evals": runs["total_evals"].median(), "times": runs["evals_used"].tolist(),
        "events": runs["solved"].tolist(), "clock": int(runs["stopped_by_clock"].sum()),
        "failures": [f"{r.trial} ({r.status}: "
                     + (r.reason if r.status in ("crashed", "oom", "timeout") else
                        "no final test: no candidate reached the target in training")
                     + ")" for r in untested.itertuples()],
    }


def head_to_head(results: pd.DataFrame, col: str, arms: list[Any]) -> dict[str, Any]:
    """Per arm :func:`_arm`; a log-rank test on the evaluations to solve (every run, the
    unsolved censored at their budget) and a two-sided Mann-Whitney U test on the final
    scores (:func:`score_of`; runs that have one; each arm needs >= 2)."""
    from scipy.stats import mannwhitneyu

    done = results[results["status"] != "missing"]
    score, name = score_of(done)
    out: dict[str, Any] = {"arms": {a: _arm(done[done[col] == a], score) for a in arms},
                           "score": score, "score_name": name}
    (sa, sb) = out["arms"].values()
    out["logrank_p"] = stats.logrank(sa["times"], sa["events"], sb["times"], sb["events"])
    out["u"] = out["p"] = math.nan
    if len(sa["scores"]) >= 2 and len(sb["scores"]) >= 2:
        test = mannwhitneyu(sa["scores"], sb["scores"], alternative="two-sided")
        out["u"], out["p"] = float(test.statistic), float(test.pvalue)
    out["clock"] = sa["clock"] + sb["clock"]
    return out


def _evals_clause(h: dict[str, Any], arms: list[Any]) -> str:
    (a, sa), (b, sb) = h["arms"].items()
    ka, kb = sa["km"], sb["km"]
    meds = (f"median {km_cell(ka.median, ka.low, ka.high, ka.no_count)} vs "
            f"{km_cell(kb.median, kb.low, kb.high, kb.no_count)}; solved "
            f"{sa['solved']}/{sa['n']} vs {sb['solved']}/{sb['n']}")
    p = h["logrank_p"]
    if math.isnan(p):
        return f"Evaluations to solve: no test ({a} vs {b}: {meds}; no run solved)."
    stat = f"log-rank p = {p:.3g}"
    if p < ALPHA and not few(sa["n"], sb["n"]):
        first = (ka.median, -sa["solved"] / sa["n"]) <= (kb.median, -sb["solved"] / sb["n"])
        hi, lo = (a, b) if first else (b, a)
        return f"{hi} solves in fewer evaluations than {lo} ({a} vs {b}: {meds}; {stat} < {ALPHA})."
    why = f"fewer than {MIN_RUNS} runs per arm" if few(sa["n"], sb["n"]) else f"{stat} >= {ALPHA}"
    return f"No difference shown in evaluations to solve ({a} vs {b}: {meds}; {why})."


def _scores_clause(h: dict[str, Any]) -> str:
    (a, sa), (b, sb) = h["arms"].items()
    what = f"Final {h['score_name']}"
    n = (f"runs with a final test: {len(sa['scores'])} of {sa['n']} vs "
         f"{len(sb['scores'])} of {sb['n']}")
    if math.isnan(h["p"]):
        return f"{what}: no test ({n}; each arm needs >= 2)."
    meds = f"median {fmt(sa['median'])} vs {fmt(sb['median'])}"
    stat = f"Mann-Whitney U = {h['u']:g}, p = {h['p']:.3g}"
    if h["p"] < ALPHA and not few(len(sa["scores"]), len(sb["scores"])):
        (hi, shi), (lo, slo) = ((a, sa), (b, sb)) if sa["median"] >= sb["median"] else \
            ((b, sb), (a, sa))
        meds = f"median {fmt(shi['median'])} vs {fmt(slo['median'])}"
        return f"{what}: {hi} higher than {lo} ({meds}; {stat} < {ALPHA}; {n})."
    why = (f"fewer than {MIN_RUNS} runs with a final test in an arm"
           if few(len(sa["scores"]), len(sb["scores"])) else f"p >= {ALPHA}")
    return f"{what}: no difference shown ({meds}; {stat}; {n}; {why})."


def head_to_head_sentence(h: dict[str, Any], arms: list[Any]) -> str:
    (a, sa), (b, sb) = h["arms"].items()
    if min(sa["n"], sb["n"]) == 0:
        empty = a if sa["n"] == 0 else b
        return f"No test: arm {empty} has no finished runs."
    text = _evals_clause(h, arms) + " " + _scores_clause(h)
    if h["clock"]:
        text = (f"Cannot conclude at equal evaluations: {h['clock']} run(s) were stopped by the "
                f"clock before the evaluation budget. " + text)
    return text


def neuromod_report(ctx: Context) -> list[str]:
    col, arms, note = arms_of(ctx)
    lines = ["## Neuromodulated vs plain network (plan 8.5)", ""] + ([note, ""] if note else [])
    if col is None:
        return lines
    h = head_to_head(ctx.results, col, arms)
    score = "confirmation mean" if h["score"] == "confirmation_mean" else "selecting test"
    table = pd.DataFrame([{
        col: a, "runs": s["n"],
        "solved/runs [95% CI]": (f"{s['solved']}/{s['n']} [{s['success_low']:.0%}, "
                                 f"{s['success_high']:.0%}]" if s["n"] else "—"),
        "median evals to solve [95% CI]": km_cell(s["km"].median, s["km"].low, s["km"].high,
                                                  s["km"].no_count),
        "tested": len(s["scores"]), f"median {score}": s["median"], "IQR low": s["q25"],
        "IQR high": s["q75"], "median selecting test": s["selecting"],
        "median evals used": s["evals"], "clock-stopped": s["clock"]}
        for a, s in h["arms"].items()])
    lines += md_table(table) + [""]  # one selecting-test column where it is the score
    lines += footnotes(ctx.done)
    failures = [f for s in h["arms"].values() for f in s["failures"]]
    if failures:
        lines += ["Runs without a final test mean (failures; no training fitness stands in): "
                  + "; ".join(failures) + ".", ""]
    r = ctx.done
    return lines + [f"**Answer.** {head_to_head_sentence(h, arms)}", "",
                    ctx.figure("fitness_vs_evals",
                               figures.fitness_vs_evals(r, ctx.curves, by=col), "curves"),
                    ctx.figure("final_scores", figures.final_scores(r, col, h["score"]),
                               f"final {score}s"),
                    ""]


REPORTS: dict[str, Callable[[Context], list[str]]] = {
    "generic": generic_report,
    "network-scaling": network_scaling_report,
    "bipedal": bipedal_report,
    "pong": pong_report,
    "worker-scaling": worker_scaling_report,
    "neuromod-vs-cmaes": neuromod_report,
    "mujoco": mujoco_report,
    "islands-vs-one": islands_vs_one_report,
}


def write_report(exp_dir: str | os.PathLike) -> Path:
    """Load the experiment, write report.md and figures/*.png; returns report.md's path."""
    exp = Path(exp_dir)
    meta, results, curves = load(exp)
    kind = (meta.get("spec") or {}).get("report") or "generic"
    if kind not in REPORTS:
        raise ValueError(f"unknown report kind {kind!r} (one of {', '.join(REPORTS)})")
    ctx = Context(exp, meta, results, curves)
    text = "\n".join(header(ctx) + REPORTS[kind](ctx) + config_appendix(ctx)) + "\n"
    path = exp / names.REPORT_MD
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path
