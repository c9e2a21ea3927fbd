"""The ``cluster-scaling`` report: time to solve on virtual clusters of 16 to 1,024 cores.

Every run is a virtual one (``runtime: virtual`` over a ``cluster/virtual/`` file: the real
algorithm on real episodes, its clock the cluster's model). Per task, one row per cluster
and arm: the cluster's worker cores and whether its nodes differ (speeds, stragglers,
failures), success, the Kaplan-Meier median *virtual* seconds to solve with its 95% interval
(unsolved runs censored at the seconds they ran), the core-hours that median costs (cores x
seconds), the median training episodes, and against the same arm on the smallest cluster of
the same kind: speedup T(small) / T(N) and efficiency speedup / (N / small) with a
conservative interval (:func:`~islands.experiment.stats.ratio_interval`), the research
plan's 8.4 bar being 0.7. Per cluster, the arm that solves first and, where the
experiment has one, its ratio to the synchronous one-population baseline (the arm with
``eval_workers``). One sentence per task.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..cells import ran
from ..stats import KM, kaplan_meier, overlap, ratio_interval
from .common import Context, fmt, km_cell, md_table

EFFICIENCY_BAR = 0.7  # the research plan's 8.4: > 0.7x linear


def _km(runs: pd.DataFrame, column: str) -> KM:
    return kaplan_meier(runs[column], runs["solved"])


def _kind(mixed: Any) -> str:
    return "heterogeneous" if bool(mixed) else "homogeneous"


def cells(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (kind of cluster, cores, arm) of one task's virtual runs."""
    rows = []
    runs = runs.assign(kind=runs["cluster_mixed"].map(_kind))
    for (kind, cores, arm), cell in runs.groupby(["kind", "cluster_cpus", "arm"], sort=True):
        t, e = _km(cell, "wall_used"), _km(cell, "episodes_used")
        rows.append({"kind": kind, "cores": int(cores), "arm": arm,
                     "solved": f"{int(cell.solved.sum())}/{len(cell)}", "_t": t,
                     "median virtual s to solve [95% CI]": km_cell(t.median, t.low, t.high),
                     "core-hours": cores * t.median / 3600,
                     "median episodes [95% CI]": km_cell(e.median, e.low, e.high)})
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    return df.join(df.apply(lambda r: _scaling(df, r), axis=1, result_type="expand"))


def _scaling(df: pd.DataFrame, r: pd.Series) -> dict[str, Any]:
    """Speedup and efficiency of ``r`` against its arm on the smallest cluster of its kind."""
    same = df[(df.kind == r.kind) & (df.arm == r.arm)]
    base = same.loc[same.cores.idxmin()]
    tb, tn = base["_t"], r["_t"]
    n = r.cores / base.cores
    speed = tb.median / tn.median if tn.median and math.isfinite(tn.median) else math.nan
    lo, hi = ratio_interval((tb.low, tb.high), (tn.low, tn.high))
    return {"speedup": speed, "efficiency": speed / n,
            "efficiency interval": f"[{fmt(lo / n, 3)}, {fmt(hi / n, 3)}]"
            if r.cores != base.cores else "—"}


def baseline_arms(arms: dict[str, dict]) -> set[str]:
    """The synchronous one-population arms (``eval_workers`` set)."""
    return {a for a, f in arms.items() if (f or {}).get("eval_workers")}


def fastest(t: pd.DataFrame, sync: set[str]) -> list[str]:
    """Per cluster, the arm with the lowest median, and its ratio to the synchronous arm."""
    out = []
    for (kind, cores), c in t.groupby(["kind", "cores"], sort=True):
        best = c.loc[c["_t"].map(lambda k: k.median).idxmin()]
        line = (f"{cores} cores ({kind}): {best.arm} first, median "
                f"{fmt(best['_t'].median, 3)} s")
        base = c[c.arm.isin(sync) & (c.arm != best.arm)]
        if not base.empty:
            b = base.iloc[0]
            ratio = b["_t"].median / best["_t"].median
            apart = not overlap((best["_t"].low, best["_t"].high), (b["_t"].low, b["_t"].high))
            line += (f", {fmt(ratio, 3)}x faster than {b.arm} "
                     f"({'intervals apart' if apart else 'intervals overlap'})")
        out.append(line)
    return out


def task_answer(env: str, t: pd.DataFrame, sync: set[str]) -> str:
    if t.empty:
        return f"**{env}.** No finished runs yet."
    big = t[t.cores == t.cores.max()]
    eff = ", ".join(f"{r.arm} ({r.kind}) {fmt(r.efficiency, 2)}" for r in big.itertuples()
                    if math.isfinite(r.efficiency) and r.cores != t.cores.min())
    meets = [r.arm for r in big.itertuples() if r.efficiency >= EFFICIENCY_BAR]
    head = (f"efficiency >= {EFFICIENCY_BAR} at {int(t.cores.max())} cores for "
            f"{', '.join(sorted(set(meets)))}" if meets else
            f"no arm keeps efficiency >= {EFFICIENCY_BAR} at {int(t.cores.max())} cores")
    if t.cores.nunique() < 2:  # efficiency is against the smallest cluster: none yet
        head = f"one cluster size so far ({int(t.cores.max())} cores): no scaling yet"
    return (f"**{env}: {head}.** " + "; ".join(fastest(t, sync))
            + (f". Efficiency at {int(t.cores.max())} cores: {eff}." if eff else "."))


def cluster_scaling_report(ctx: Context) -> list[str]:
    done = ran(ctx.results)
    out = ["## Time to solve on virtual clusters", ""]
    if done.empty or "cluster_cpus" not in done or done["cluster_cpus"].isna().all():
        return out + ["No finished virtual runs yet.", ""]
    done = done[done["cluster_cpus"].notna()]
    sync = baseline_arms(ctx.spec.get("arms") or {})
    answers = []
    for env, runs in done.groupby("env", sort=False):
        t = cells(runs)
        shown = t[[c for c in t.columns if not c.startswith("_")]]
        out += [f"### {env}", "", *md_table(shown), ""]
        answers.append(task_answer(env, t, sync))
    return out + ["**Answers.**", "", *[f"- {a}" for a in answers], ""]
