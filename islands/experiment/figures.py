"""The figures of an experiment report, each drawn from the ``results`` / ``curves`` tables
(:mod:`islands.experiment.collect`) and returned as a matplotlib Figure.

The report writers (:mod:`.reports`) save them as PNG;
``notebooks/experiment_analysis.ipynb`` shows the same figures. They are built on
``matplotlib.figure.Figure`` with an Agg canvas rather than through pyplot: no global
backend is switched (the notebook keeps its inline one) and no pyplot figure stays open in
a long process.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from .cells import per_config, score_of, speedup_table

DPI = 110
EVALS_LABEL = "fitness evaluations (all islands)"
EFFICIENCY_GOAL = 0.7  # the research plan's "> 0.7x linear speedup" (8.4)


def new_figure(size: tuple[float, float] = (7.0, 4.3)) -> tuple[Any, Any]:
    """A Figure with one axes on an Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.grid(alpha=0.3)
    return fig, ax


def save_figure(fig: Any, path: str | os.PathLike) -> None:
    """Write the PNG and drop the figure's artists (its memory)."""
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    fig.clear()


def _empty(ax: Any, text: str = "no finished runs") -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)


# ---- learning curves -------------------------------------------------------------------
def _at(x_run: np.ndarray, y_run: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """A run's best-so-far as a step function of evaluations, read at ``xs`` (NaN before its
    first report; held after its last, since the best of a finished run stays)."""
    i = np.searchsorted(x_run, xs, side="right") - 1
    return np.where(i >= 0, y_run[np.clip(i, 0, None)], np.nan)


def median_curve(curves: pd.DataFrame, x: str = "total_evals",
                 points: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """(xs, median over runs of the best fitness so far at xs) for the runs in ``curves``."""
    runs = [(g[x].to_numpy(float), g["best_fitness"].to_numpy(float))
            for _, g in curves.groupby("trial", sort=False)]
    if not runs:
        return np.zeros(0), np.zeros(0)
    xs = np.linspace(min(r[0][0] for r in runs), max(r[0][-1] for r in runs), points)
    ys = pd.DataFrame({i: _at(rx, ry, xs) for i, (rx, ry) in enumerate(runs)})
    return xs, ys.replace([np.inf, -np.inf], np.nan).median(axis=1).to_numpy()


def target_of(results: pd.DataFrame) -> float | None:
    """The runs' target where they share one, else None."""
    t = results["target"].dropna().unique() if "target" in results else []
    return float(t[0]) if len(t) == 1 else None


def fitness_vs_evals(results: pd.DataFrame, curves: pd.DataFrame, by: str = "config",
                     target: float | None = None, title: str = "") -> Any:
    """Best training fitness so far against evaluations per group ``by``: the median over
    its runs (thick), each run (thin), each run's final score (point, at its total
    evaluations: its confirmation mean, or its selecting test's for runs that predate
    confirmations) and the target (dashed; default: the runs' common target)."""
    fig, ax = new_figure((8.0, 4.8))
    score = score_of(results)[0]
    point = "confirmation mean" if score == "confirmation_mean" else "selecting test"
    target = target_of(results) if target is None else target
    merged = curves.merge(results[["trial", by]], on="trial")
    groups = list(dict.fromkeys(results[by])) if len(results) else []
    for n, key in enumerate(groups):
        color = f"C{n % 10}"
        sub = merged[merged[by] == key]
        for _, g in sub.groupby("trial", sort=False):
            ax.step(g["total_evals"], g["best_fitness"], where="post", color=color, lw=0.7,
                    alpha=0.35)
        xs, med = median_curve(sub)
        runs = results[results[by] == key]
        name = key if by == "config" else f"{by}={key}"  # config values are "k=v, ..."
        ax.plot(xs, med, color=color, lw=2.2, label=f"{name} (median of {len(runs)})")
        ax.scatter(runs["total_evals"], runs[score], color=color, edgecolor="black",
                   zorder=3, s=28)
    if groups:
        ax.scatter([], [], color="white", edgecolor="black",
                   label=f"final {point} (per run)")
    if target is not None:
        ax.axhline(target, color="grey", ls="--", lw=1.2, label=f"target {target:g}")
    ax.set(xlabel=EVALS_LABEL, ylabel="best training fitness so far",
           title=title or "best fitness vs evaluations")
    if groups:
        ax.legend(fontsize=7, loc="lower right")
    else:
        _empty(ax)
    return fig


def final_scores(results: pd.DataFrame, by: str, value: str = "test_mean") -> Any:
    """Each run's final score (``value``) per group ``by``, with the group medians."""
    fig, ax = new_figure((6.0, 4.0))
    groups = list(dict.fromkeys(results[by])) if len(results) else []
    rng = np.random.default_rng(0)  # fixed jitter: the same picture every time
    for n, key in enumerate(groups):
        y = results.loc[results[by] == key, value].to_numpy(float)
        ax.scatter(n + rng.uniform(-0.08, 0.08, len(y)), y, color=f"C{n % 10}", zorder=3)
        if np.isfinite(y).any():
            ax.hlines(np.nanmedian(y), n - 0.25, n + 0.25, color="black", lw=2)
    ax.set_xticks(range(len(groups)), [str(g) for g in groups])
    ax.set(xlabel=by, ylabel=value.replace("_", " "), title="final score per run (bar: median)")
    if not groups:
        _empty(ax)
    return fig


# ---- survival ----------------------------------------------------------------------------
def km_curves(results: pd.DataFrame, by: str = "config", x: str = "evals_used") -> Any:
    """Kaplan-Meier curves per group ``by``: the fraction of runs not yet solved against
    evaluations (``x``), with the 95% band; a run that never solved holds the curve up
    (censored, marked +) instead of leaving it."""
    from .stats import kaplan_meier

    fig, ax = new_figure((7.5, 4.5))
    groups = list(dict.fromkeys(results[by])) if len(results) else []
    for n, key in enumerate(groups):
        runs = results[results[by] == key]
        km = kaplan_meier(runs[x], runs["solved"])
        color = f"C{n % 10}"
        xs = np.concatenate([[0.0], km.times])
        lost = f", {km.no_count} no count" if km.no_count else ""
        ax.step(xs, np.concatenate([[1.0], km.surv]), where="post", color=color, lw=2,
                label=f"{key if by == 'config' else f'{by}={key}'} ({km.events}/{km.n} "
                f"solved{lost})")
        ax.fill_between(xs, np.concatenate([[1.0], km.band_low]),
                        np.concatenate([[1.0], km.band_high]), step="post", color=color,
                        alpha=0.12)
        cens = runs.loc[~runs["solved"].astype(bool), x].dropna().to_numpy(float)
        if len(cens):
            ax.scatter(cens, [km.surv[-1] if len(km.surv) else 1.0] * len(cens),
                       marker="+", color=color, s=60, zorder=3)
    ax.axhline(0.5, color="grey", ls=":", lw=1)
    ax.set(xlabel=EVALS_LABEL if x == "evals_used" else x.replace("_", " "),
           ylabel="fraction of runs not yet solved", ylim=(-0.02, 1.02),
           title="Kaplan-Meier: time to solve (+ censored: budget, clock or crash)")
    if groups:
        ax.legend(fontsize=7, loc="upper right")
    else:
        _empty(ax)
    return fig


# ---- network scaling (8.1) -------------------------------------------------------------
def _vs_params(results: pd.DataFrame, column: str, ylabel: str, logy: bool,
               band: tuple[str, str] | None = None) -> Any:
    fig, ax = new_figure()
    t = per_config(results, ["num_params", "strategy"]).sort_values("num_params")
    t = t.replace([np.inf, -np.inf], np.nan)  # "not reached": no point
    for n, (strategy, g) in enumerate(t.groupby("strategy", sort=False)):
        ax.plot(g["num_params"], g[column], marker="o", color=f"C{n % 10}", label=strategy)
        if band is not None:
            lo, hi = g[band[0]].to_numpy(float), g[band[1]].to_numpy(float)
            y = g[column].to_numpy(float)
            ok = np.isfinite(y) & np.isfinite(lo)
            hi = np.where(np.isfinite(hi), hi, np.nanmax(np.r_[y[ok], lo[ok], 1.0]) * 2)
            ax.errorbar(g["num_params"].to_numpy(float)[ok], y[ok],
                        yerr=[y[ok] - lo[ok], hi[ok] - y[ok]], fmt="none",
                        color=f"C{n % 10}", capsize=3, alpha=0.6)
    if t.empty:
        _empty(ax)
    else:
        ax.set_xscale("log")
        if logy and (t[column] > 0).any():
            ax.set_yscale("log")
        ax.legend(fontsize=8, title="strategy")
    ax.set(xlabel="policy parameters (log scale)", ylabel=ylabel)
    return fig


def success_vs_params(results: pd.DataFrame) -> Any:
    """Success rate (solved runs / runs) against parameter count, one line per strategy."""
    fig = _vs_params(results, "success_rate", "success rate (solved / runs)", logy=False,
                     band=("success_low", "success_high"))
    fig.axes[0].set_ylim(-0.05, 1.05)
    fig.axes[0].set_title("success rate vs network size (bars: 95% Wilson)")
    return fig


def evals_vs_params(results: pd.DataFrame) -> Any:
    """Kaplan-Meier median evaluations to solve (with its interval) against parameter
    count; a cell whose median was not reached has no point."""
    fig = _vs_params(results, "evals_to_solve", "median evaluations to solve", logy=True,
                     band=("evals_low", "evals_high"))
    fig.axes[0].set_title("evaluations to solve vs network size (KM median, 95%)")
    return fig


def s_per_gen_vs_params(results: pd.DataFrame) -> Any:
    """Median seconds per generation against parameter count (CMA-ES's O(n^2) shows here)."""
    fig = _vs_params(results, "s_per_gen", "median seconds per generation", logy=True)
    fig.axes[0].set_title("time per generation vs network size")
    return fig


# ---- worker scaling (8.4) --------------------------------------------------------------
def speedup_vs_islands(results: pd.DataFrame) -> Any:
    """The algorithmic speedup k x A(k) (with its interval) against islands, the speedup
    k x A(k) x R(k) where the system factor was measured, linear and 0.7x linear."""
    fig, ax = new_figure()
    t = speedup_table(results).replace([np.inf, -np.inf], np.nan)
    if t.empty:
        _empty(ax)
    else:
        k, k0 = t["islands"].to_numpy(float), float(t["islands"].iloc[0])
        ax.plot(k, k / k0, color="grey", ls="--", label="linear")
        ax.plot(k, EFFICIENCY_GOAL * k / k0, color="grey", ls=":",
                label=f"{EFFICIENCY_GOAL:g} x linear (plan)")
        scale = k / k0
        alg = scale * t["algorithmic"].to_numpy(float)
        ok = np.isfinite(alg)
        # the interval, drawn within a factor 4 of the point (an unbounded end reaches it)
        lo = np.clip(scale * t["algorithmic_low"].to_numpy(float), alg / 4, alg)
        hi = np.clip(scale * np.nan_to_num(t["algorithmic_high"].to_numpy(float), nan=np.inf),
                     alg, alg * 4)  # NaN here: an unbounded end (inf was replaced above)
        ax.plot(k[ok], alg[ok], marker="o", color="C0", lw=2,
                label="algorithmic: (k/k0) x E(k0)/E(k), with its interval")
        ax.vlines(k[ok], lo[ok], hi[ok], color="C0", lw=1.5, alpha=0.6)
        for col, marker, what in (("algorithmic_upper", "v", "at most (E(k) not reached)"),
                                  ("algorithmic_bound", "^", "at least (E(k0) not reached)")):
            b = scale * t[col].to_numpy(float)
            if np.isfinite(b).any():
                ax.scatter(k[np.isfinite(b)], b[np.isfinite(b)], marker=marker, color="C0",
                           s=70, label=f"algorithmic, {what}")
        ax.plot(k, k / k0 * t["efficiency"].to_numpy(float), marker="s", color="C3", lw=0,
                ms=8, label="x R(k) where measured: speedup S(k)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.legend(fontsize=8)
    ax.set(xlabel="islands k", ylabel="speedup",
           title="speedup vs islands (bars: interval, drawn up to 4x the point)")
    return fig


def throughput_vs_islands(results: pd.DataFrame) -> Any:
    """Evaluations per second per island of every run against islands: filled where each
    island had a core and the trial ran alone (what R(k) uses), hollow elsewhere."""
    fig, ax = new_figure()
    if results.empty:
        _empty(ax)
    else:
        alone = ((results["concurrency"] == 1)
                 & ~results["shared_cpus"].fillna(True).astype(bool)).to_numpy()
        k = results["islands"].to_numpy(float)
        r = results["evals_per_s_island"].to_numpy(float)
        ax.scatter(k[alone], r[alone], color="C1", label="own core, alone (measured)")
        ax.scatter(k[~alone], r[~alone], facecolor="none", edgecolor="C1",
                   label="shared CPUs or beside other trials")
        ax.set_xscale("log", base=2)
        ax.legend(fontsize=8)
    ax.set(xlabel="islands k", ylabel="evaluations per second per island",
           title="per-island throughput vs islands")
    return fig
