"""An experiment's ``report.md`` and ``figures/*.png``, one writer per report kind.

Every report opens with the question, the command that reproduces it, the scale, budget,
grid and seeds, how many runs are in, and a table per configuration; then the answer in
the research plan's terms (docs: ``../shared/docs/research-plan.md``, section 8):

- ``generic``: best fitness vs evaluations per configuration.
- ``network-scaling`` (8.1): N_max, the largest network full CMA-ES solves in at least
  half its seeds, and where sep-CMA-ES / OpenAI-ES overtake it.
- ``bipedal`` (8.2), ``pong`` (8.3): whether and how fast the target was reached.
- ``worker-scaling`` (8.4): speedup and efficiency against 0.7x linear.
- ``neuromod-vs-cmaes`` (8.5): two arms, a Mann-Whitney U test on the final test means.

Works on a partial experiment (the runs that have a ``summary.json``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import figures, kinds
from .results import load, missing_trials, param_value, per_config, speedup_table

ALPHA = 0.05  # significance level of the head-to-head test (8.5)
BASELINE = "cmaes"  # the strategy whose breakdown 8.1 looks for


# ---- formatting ------------------------------------------------------------------------
def fmt(x: Any, digits: int = 4) -> str:
    """A table cell: ``—`` for missing, thousands separators for large numbers."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if isinstance(x, (bool, str, np.bool_)) or not math.isfinite(float(x)):
        return str(x)
    x = float(x)
    return f"{x:,.0f}" if abs(x) >= 10_000 or x == int(x) else f"{x:.{digits}g}"


def md_table(df: pd.DataFrame) -> list[str]:
    """A markdown table of ``df``'s cells as :func:`fmt` writes them."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(fmt(v).replace("|", "\\|") for v in row) + " |")
    return lines


def _of(t: pd.DataFrame) -> list[str]:
    """``solved/runs`` per row of a :func:`per_config` table."""
    return [f"{s}/{n}" for s, n in zip(t["solved"], t["runs"], strict=True)]


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


@dataclass
class Context:
    """What a report writer reads (the loaded experiment) and the figures it saved."""

    exp_dir: Path
    meta: dict[str, Any]
    results: pd.DataFrame
    curves: pd.DataFrame
    saved: list[Path] = field(default_factory=list)

    @property
    def spec(self) -> dict[str, Any]:
        return self.meta.get("spec") or {}

    @property
    def grid(self) -> list[str]:
        return [k for k in (self.spec.get("grid") or {}) if k in self.results.columns]

    def figure(self, name: str, fig: Any, caption: str) -> str:
        """Save ``fig`` as figures/<name>.png; the markdown that shows it."""
        folder = self.exp_dir / kinds.FIGURES_DIR
        folder.mkdir(exist_ok=True)
        figures.save_figure(fig, folder / f"{name}.png")
        self.saved.append(folder / f"{name}.png")
        return f"![{caption}]({kinds.FIGURES_DIR}/{name}.png)"


# ---- what every report starts with -----------------------------------------------------
def _settings(spec: dict[str, Any]) -> list[str]:
    budget = ", ".join(f"{k}={v}" for k, v in (spec.get("budget") or {}).items()) or "none"
    grid = "; ".join(f"{k}: {', '.join(str(param_value(v)) for v in vals)}"
                     for k, vals in (spec.get("grid") or {}).items()) or "none"
    base = json.dumps(spec.get("base") or {}, sort_keys=True)
    return [f"- scale: {spec.get('scale') or 'none (the file as written)'}",
            f"- budget: {budget}",
            f"- grid: {grid}", f"- seeds: {spec.get('seeds', '?')}", f"- base: `{base}`"]


def _progress(ctx: Context) -> str:
    planned = len(ctx.meta.get("trials") or [])
    missing = missing_trials(ctx.meta, ctx.results)
    line = f"**Runs:** {len(ctx.results)} finished of {planned} trials"
    if missing:
        shown = ", ".join(missing[:10]) + (", ..." if len(missing) > 10 else "")
        line += f"; {len(missing)} missing (failed or not run yet: {shown})"
    return line + "."


def config_summary(ctx: Context) -> pd.DataFrame:
    """The per-configuration table every report shows."""
    by = ctx.grid or ["config"]
    t = per_config(ctx.results, by)
    return pd.DataFrame({
        **{k: t[k] for k in by},
        "runs": t["runs"], "solved/runs": _of(t),
        "success rate": t["success_rate"],
        "median evals to solve": t["evals_to_solve"],
        "median wall to solve (s)": t["wall_to_solve"],
        "median test mean": t["test_mean"], "median s/gen": t["s_per_gen"],
        "max peak mem (MB)": t["peak_mem_mb"],
    })


def header(ctx: Context) -> list[str]:
    spec = ctx.spec
    source, scale = spec.get("source", "<experiment.yaml>"), spec.get("scale", "laptop")
    lines = [f"# {spec.get('name', ctx.exp_dir.name)} ({spec.get('report', 'generic')})", "",
             f"**Question.** {spec.get('question') or '—'}", ""]
    if spec.get("description"):
        lines += [str(spec["description"]).strip(), ""]
    lines += ["Reproduce:", "", "```",
              f"python -m islands.experiment run {source}"
              + (f" --scale {scale}" if scale else ""), "```", ""]
    lines += _settings(spec) + ["", _progress(ctx), "", "## Results per configuration", ""]
    lines += md_table(config_summary(ctx)) if len(ctx.results) else ["No finished runs yet."]
    return lines + ["", "Medians of the times to solve are over the solved runs only.", ""]


# ---- generic ---------------------------------------------------------------------------
def generic_report(ctx: Context) -> list[str]:
    fig = figures.fitness_vs_evals(ctx.results, ctx.curves)
    return ["## Learning curves", "",
            ctx.figure("fitness_vs_evals", fig, "best fitness vs evaluations"), ""]


# ---- 8.1 network scaling ---------------------------------------------------------------
def scaling_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per (parameter count, strategy), smallest network first."""
    return (per_config(results, ["num_params", "strategy"])
            .sort_values(["num_params", "strategy"], ignore_index=True))


def _overtakes(c: pd.Series, s: pd.Series) -> str | None:
    """Why strategy row ``s`` beats the baseline row ``c`` at one size, or None."""
    if s.success_rate > c.success_rate:
        return f"success {s.success_rate:.0%} vs {c.success_rate:.0%}"
    if (s.success_rate == c.success_rate and s.success_rate > 0
            and s.evals_to_solve < c.evals_to_solve):
        return f"equal success, median {fmt(s.evals_to_solve)} vs {fmt(c.evals_to_solve)} evals"
    return None


def scaling_answer(results: pd.DataFrame) -> dict[str, Any]:
    """N_max (the largest parameter count at which cmaes solves in >= half its seeds, None
    if none) and the crossover: the smallest size at which another strategy has a higher
    success rate than cmaes, or the same with fewer median evaluations."""
    t = scaling_table(results)
    base = t[t["strategy"] == BASELINE]
    ok = base[base["success_rate"] >= 0.5]
    n_max = None if ok.empty else int(ok["num_params"].max())
    crossover = None
    for _, c in base.iterrows():  # smallest size first
        rivals = t[(t["num_params"] == c.num_params) & (t["strategy"] != BASELINE)]
        for _, s in rivals.iterrows():
            why = _overtakes(c, s)
            if why and crossover is None:
                crossover = {"num_params": int(s.num_params), "strategy": s.strategy,
                             "hidden": s.hidden, "why": why}
    return {"table": t, "n_max": n_max, "crossover": crossover,
            "n_max_hidden": None if n_max is None else ok.loc[
                ok["num_params"] == n_max, "hidden"].iloc[0]}


def scaling_sentence(ans: dict[str, Any], env: str) -> str:
    strategies = set(ans["table"]["strategy"])
    if not strategies:
        return "No finished runs yet."
    if BASELINE not in strategies:
        return f"No {BASELINE} runs, so no N_max (strategies run: {', '.join(strategies)})."
    if ans["n_max"] is None:
        first = (f"Full CMA-ES solved {env} in at least half its seeds at none of the sizes "
                 "tried (N_max: none)")
    else:
        first = (f"Full CMA-ES solved {env} in at least half its seeds up to N_max = "
                 f"{ans['n_max']:,} parameters (hidden {ans['n_max_hidden']})")
    c = ans["crossover"]
    if c is None:
        return first + "; no other strategy overtook it at the sizes tried."
    return (first + f"; {c['strategy']} overtakes it from {c['num_params']:,} parameters "
            f"(hidden {c['hidden']}: {c['why']}).")


def network_scaling_report(ctx: Context) -> list[str]:
    r = ctx.results
    ans = scaling_answer(r)
    t = ans["table"]
    table = pd.DataFrame({
        "parameters": t["num_params"], "hidden": t["hidden"], "strategy": t["strategy"],
        "runs": t["runs"], "success rate": t["success_rate"],
        "median evals to solve": t["evals_to_solve"], "median s/gen": t["s_per_gen"],
        "max peak mem (MB)": t["peak_mem_mb"]})
    env = ", ".join(map(str, r["env"].unique())) if len(r) else "the task"
    return ["## Network scaling (plan 8.1)", "", *md_table(table), "",
            f"**N_max** (largest network cmaes solves in >= half its seeds): "
            f"{'none' if ans['n_max'] is None else format(ans['n_max'], ',')}.", "",
            f"**Answer.** {scaling_sentence(ans, env)}", "",
            ctx.figure("success_vs_params", figures.success_vs_params(r), "success rate"),
            ctx.figure("evals_vs_params", figures.evals_vs_params(r), "evaluations to solve"),
            ctx.figure("s_per_gen_vs_params", figures.s_per_gen_vs_params(r),
                       "seconds per generation"), ""]


# ---- 8.2 / 8.3 reaching a target -------------------------------------------------------
def target_sentence(results: pd.DataFrame) -> str:
    """Reached the target in k of n seeds with median evaluations / minutes (the best
    configuration), or not reached with the best test mean."""
    if results.empty:
        return "No finished runs yet."
    env = ", ".join(map(str, results["env"].unique()))
    target = figures._target_of(results)
    t = per_config(results).sort_values(["success_rate", "evals_to_solve"],
                                        ascending=[False, True], ignore_index=True)
    best, where = t.iloc[0], "" if len(t) == 1 else f" with {t['config'].iloc[0]}"
    if best.solved > 0:
        return (f"{env}: reached {fmt(target)} in {best.solved} of {best.runs} seeds{where}, "
                f"median {fmt(best.evals_to_solve)} evaluations / "
                f"{_minutes(best.wall_to_solve)}.")
    top = results["test_mean"].max()
    if math.isnan(top):
        return (f"{env}: not reached (target {fmt(target)}); no test ran, best training "
                f"fitness {fmt(results['best_fitness'].max())}.")
    return f"{env}: not reached (target {fmt(target)}); best test mean {fmt(top)}."


def target_report(ctx: Context, title: str) -> list[str]:
    t = per_config(ctx.results)
    table = pd.DataFrame({
        "configuration": t["config"], "reached/runs": _of(t),
        "median evals to target": t["evals_to_solve"],
        "median wall to target (min)": t["wall_to_solve"] / 60,
        "median test mean": t["test_mean"], "best test mean": t["best_test_mean"],
        "median evals used": t["total_evals"]})
    fig = figures.fitness_vs_evals(ctx.results, ctx.curves, title=title)
    return [f"## {title}", "", *md_table(table), "",
            f"**Answer.** {target_sentence(ctx.results)}", "",
            ctx.figure("fitness_vs_evals", fig, "best fitness vs evaluations"), ""]


def bipedal_report(ctx: Context) -> list[str]:
    return target_report(ctx, "BipedalWalker (plan 8.2)")


def pong_report(ctx: Context) -> list[str]:
    return target_report(ctx, "Pong from pixels (plan 8.3)")


# ---- 8.4 worker scaling ----------------------------------------------------------------
def _ks(rows: pd.DataFrame) -> str:
    return ", ".join(f"{k:g}" for k in rows["islands"])


def speedup_sentence(t: pd.DataFrame) -> str:
    """The verdict against the plan's > 0.7x linear speedup."""
    if t.empty:
        return "No finished runs yet."
    k0 = t["islands"].iloc[0]
    more, unsolved = t.iloc[1:], t[t["solved"] == 0]
    thr = more.dropna(subset=["throughput_ratio"]).tail(1)
    tail = "" if unsolved.empty else f" Unsolved in every run at k = {_ks(unsolved)}."
    if not thr.empty:
        r = thr.iloc[0]
        tail = (f" Env-step throughput at k = {r.islands:g} is {r.throughput_ratio:.2f}x "
                f"k = {k0:g} (efficiency {r.throughput_efficiency:.2f}).") + tail
    if math.isnan(t["wall_to_solve"].iloc[0]):
        return f"No speedup: the k = {k0:g} runs did not solve.{tail}"
    measured = more.dropna(subset=["efficiency"])
    if measured.empty:
        return f"No speedup measured: no run with more than {k0:g} islands solved.{tail}"
    good = measured[measured["efficiency"] > figures.EFFICIENCY_GOAL]
    bad = measured[measured["efficiency"] <= figures.EFFICIENCY_GOAL]
    last = measured.iloc[-1]
    at = f"S({last.islands:g}) = {last.speedup:.2f}, efficiency {last.efficiency:.2f}"
    if bad.empty:
        verdict = f"meets the plan's > 0.7x linear at every k up to {last.islands:g} ({at})"
    elif good.empty:
        verdict = f"is below the plan's 0.7x linear at every k > {k0:g} ({at})"
    else:
        verdict = (f"meets the plan's > 0.7x linear at k = {_ks(good)} and falls short at "
                   f"k = {_ks(bad)} ({at})")
    return f"Wall-clock speedup to solve {verdict}.{tail}"


def worker_scaling_report(ctx: Context) -> list[str]:
    t = speedup_table(ctx.results)
    table = pd.DataFrame({
        "islands k": t["islands"], "solved/runs": _of(t),
        "median wall to solve (s)": t["wall_to_solve"], "speedup S(k)": t["speedup"],
        "efficiency S(k)/k": t["efficiency"], "median env steps/s": t["env_steps_per_s"],
        "throughput ratio": t["throughput_ratio"],
        "throughput efficiency": t["throughput_efficiency"]})
    r = ctx.results
    lines = ["## Worker scaling (plan 8.4)", "", *md_table(table), "",
             "T(k): median wall-clock seconds to solve over the solved runs (— where none "
             "solved); S(k) = T(1) / T(k); the plan asks for efficiency > 0.7."]
    if len(t) and t["islands"].iloc[0] != 1:
        lines.append(f"No k = 1 runs: the baseline is k = {t['islands'].iloc[0]:g}.")
    return lines + ["", f"**Answer.** {speedup_sentence(t)}", "",
                    ctx.figure("speedup_vs_islands", figures.speedup_vs_islands(r), "speedup"),
                    ctx.figure("throughput_vs_islands", figures.throughput_vs_islands(r),
                               "throughput"), ""]


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


def final_score(results: pd.DataFrame) -> pd.Series:
    """A run's final test mean, or its best training fitness when it has no test."""
    return results["test_mean"].fillna(results["best_fitness"])


def comparison(results: pd.DataFrame) -> tuple[pd.Series, bool, str]:
    """What the arms are compared on: (values, higher is better, name). The final score at
    the shared budget; but where every run stopped at the target, the budget never bound
    and the scores are all "passed": then the evaluations each run needed (fewer: better)."""
    if len(results) and (results["stop_reason"] == "target").all():
        return results["evals_to_solve"], False, "evaluations to solve"
    return final_score(results), True, "final score"


def head_to_head(results: pd.DataFrame, col: str, arms: list[Any]) -> dict[str, Any]:
    """Per arm the compared values (:func:`comparison`), and a two-sided Mann-Whitney U
    test between the arms when each has >= 2 runs."""
    from scipy.stats import mannwhitneyu

    score, higher, name = comparison(results)
    out: dict[str, Any] = {"fallbacks": int(results["test_mean"].isna().sum()), "arms": {},
                           "higher_is_better": higher, "metric": name}
    for a in arms:
        sel = results[col] == a
        s = score[sel].dropna()
        out["arms"][a] = {"n": len(s), "scores": s.tolist(), "median": s.median(),
                          "q25": s.quantile(0.25), "q75": s.quantile(0.75),
                          "solved": int(results.loc[sel, "solved"].sum()),
                          "evals": results.loc[sel, "total_evals"].median()}
    a, b = (out["arms"][x]["scores"] for x in arms)
    out["u"] = out["p"] = math.nan
    if len(a) >= 2 and len(b) >= 2:
        test = mannwhitneyu(a, b, alternative="two-sided")
        out["u"], out["p"] = float(test.statistic), float(test.pvalue)
    return out


def head_to_head_sentence(h: dict[str, Any], arms: list[Any]) -> str:
    (a, sa), (b, sb) = h["arms"].items()
    if min(sa["n"], sb["n"]) == 0:
        empty = a if sa["n"] == 0 else b
        return f"No test: arm {empty} has no finished runs (needs >= 2 seeds per arm)."
    if math.isnan(h["p"]):
        return f"No test: needs >= 2 seeds per arm ({a}: {sa['n']}, {b}: {sb['n']})."
    first = (sa["median"] >= sb["median"]) == h.get("higher_is_better", True)
    hi, lo = (a, b) if first else (b, a)
    metric = h.get("metric", "final score")
    meds = f"median {fmt(h['arms'][hi]['median'])} vs {fmt(h['arms'][lo]['median'])}"
    stat = f"Mann-Whitney U = {h['u']:g}, p = {h['p']:.3g}"
    where = ("at the same budget" if metric == "final score"
             else f"on {metric}, as every run reached the target")
    if h["p"] < ALPHA:
        return f"{hi} is better than {lo} {where} ({meds}; {stat} < {ALPHA})."
    which = ("the medians are equal" if sa["median"] == sb["median"]
             else f"{hi} has the better median")
    return (f"No significant difference between {hi} and {lo} {where} ({stat} "
            f">= {ALPHA}); {which} ({meds}).")


def neuromod_report(ctx: Context) -> list[str]:
    col, arms, note = arms_of(ctx)
    lines = ["## Neuromodulated vs plain network (plan 8.5)", ""] + ([note, ""] if note else [])
    if col is None:
        return lines
    h = head_to_head(ctx.results, col, arms)
    table = pd.DataFrame([{col: a, "runs": s["n"], "solved/runs": f"{s['solved']}/{s['n']}",
                           f"median {h['metric']}": s["median"], "IQR low": s["q25"],
                           "IQR high": s["q75"], "median evals used": s["evals"]}
                          for a, s in h["arms"].items()])
    lines += md_table(table) + [""]
    if h["fallbacks"]:
        lines += [f"{h['fallbacks']} run(s) have no test mean: their best training fitness "
                  "stands in as the final score.", ""]
    r = ctx.results
    return lines + [f"**Answer.** {head_to_head_sentence(h, arms)}", "",
                    ctx.figure("fitness_vs_evals",
                               figures.fitness_vs_evals(r, ctx.curves, by=col), "curves"),
                    ctx.figure("final_scores", figures.final_scores(
                        r.assign(final_score=final_score(r)), col, "final_score"),
                               "final scores"),
                    ""]


REPORTS: dict[str, Callable[[Context], list[str]]] = {
    "generic": generic_report,
    "network-scaling": network_scaling_report,
    "bipedal": bipedal_report,
    "pong": pong_report,
    "worker-scaling": worker_scaling_report,
    "neuromod-vs-cmaes": neuromod_report,
}


def write_report(exp_dir: str | os.PathLike) -> Path:
    """Load the experiment, write report.md and figures/*.png; returns report.md's path."""
    exp = Path(exp_dir)
    meta, results, curves = load(exp)
    kind = (meta.get("spec") or {}).get("report") or "generic"
    if kind not in REPORTS:
        raise ValueError(f"unknown report kind {kind!r} (one of {', '.join(REPORTS)})")
    ctx = Context(exp, meta, results, curves)
    text = "\n".join(header(ctx) + REPORTS[kind](ctx)) + "\n"
    path = exp / kinds.REPORT_MD
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path
