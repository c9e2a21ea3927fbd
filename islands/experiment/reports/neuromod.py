"""The ``neuromod-vs-cmaes`` report (plan 8.5): two arms at an equal evaluation budget.

The arms are the two values of ``policy`` (neuromodulated first), else of the one grid
field that takes exactly two (:func:`arms_of`). Per arm: success with its Wilson interval,
the Kaplan-Meier median evaluations to solve, and the final scores. Two tests answer:
log-rank on the evaluations to solve (every run, the unsolved censored at their budget) and
a two-sided Mann-Whitney U on the final confirmation means (the selecting tests' only for
runs that predate confirmations; no training fitness stands in for a missing test). Where
the test says p >= :data:`.common.ALPHA` or an arm has fewer than :data:`.common.MIN_RUNS`
runs, the answer is "no difference shown"; runs the clock stopped before their budget make
"equal evaluations" untrue, and the answer says so first.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..cells import score_of
from ..collect import param_value
from ..figures import final_scores, fitness_vs_evals
from ..stats import kaplan_meier, logrank, wilson
from .common import ALPHA, MIN_RUNS, Context, few, fmt, footnotes, km_cell, md_table


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
    km = kaplan_meier(runs["evals_used"], runs["solved"])
    tested = runs[score].dropna()
    untested = runs[runs[score].isna()]
    lo, hi = wilson(int(runs["solved"].sum()), len(runs))
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
    out["logrank_p"] = logrank(sa["times"], sa["events"], sb["times"], sb["events"])
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
                               fitness_vs_evals(r, ctx.curves, by=col), "curves"),
                    ctx.figure("final_scores", final_scores(r, col, h["score"]),
                               f"final {score}s"),
                    ""]
