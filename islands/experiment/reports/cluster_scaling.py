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
experiment has one, how much faster than the fastest synchronous one-population arm (an
arm with ``eval_workers``) on the seeds both ran, with the log-rank and sign tests. One
sentence per task.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..cells import ran
from ..stats import ratio_interval
from .common import Context, fmt, km_cell, md_table
from .versus import km_of, versus

EFFICIENCY_BAR = 0.7  # the research plan's 8.4: > 0.7x linear


def _kind(mixed: Any) -> str:
    return "heterogeneous" if bool(mixed) else "homogeneous"


def cells(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (kind of cluster, cores, arm) of one task's virtual runs."""
    rows = []
    runs = runs.assign(kind=runs["cluster_mixed"].map(_kind))
    for (kind, cores, arm), cell in runs.groupby(["kind", "cluster_cpus", "arm"], sort=True):
        t, e = km_of(cell, "wall_used"), km_of(cell, "episodes_used")
        rows.append({"kind": kind, "cores": int(cores), "arm": arm,
                     "solved": f"{int(cell.solved.sum())}/{len(cell)}", "_t": t,
                     "median virtual s to solve [95% CI]": km_cell(t.median, t.low, t.high),
                     "core-hours": cores * t.median / 3600,
                     "median episodes [95% CI]": km_cell(e.median, e.low, e.high),
                     "_runs": cell})
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    return df.join(df.apply(lambda r: _scaling(df, r), axis=1, result_type="expand"))


def _scaling(df: pd.DataFrame, r: pd.Series) -> dict[str, Any]:
    """Speedup and efficiency of ``r`` against its arm on the smallest cluster of its kind;
    none where the arm did not run there (a choosing arm run at one size only)."""
    same = df[(df.kind == r.kind) & (df.arm == r.arm)]
    base = same.loc[same.cores.idxmin()]
    if base.cores != df[df.kind == r.kind].cores.min():
        return {"speedup": math.nan, "efficiency": math.nan, "efficiency interval": "—"}
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
    """Per cluster, the arm with the lowest median, and how much faster it solved than the
    fastest synchronous arm there (the strongest baseline: with its step-size choices run
    beside it, the best of them), on the seeds both ran (:func:`versus.versus`: ratio of
    medians, intervals, log-rank and sign test)."""
    out = []
    for (kind, cores), c in t.groupby(["kind", "cores"], sort=True):
        median = c["_t"].map(lambda k: k.median)
        best = c.loc[median.idxmin()]
        line = (f"{cores} cores ({kind}): {best.arm} first, median "
                f"{fmt(best['_t'].median, 3)} s")
        base = c[c.arm.isin(sync) & (c.arm != best.arm)]
        if not base.empty:
            b = base.loc[median[base.index].idxmin()]
            line += ", " + _against(versus(b["_runs"], best["_runs"], "wall_used"), b.arm)
        out.append(line)
    return out


def _against(v: dict[str, Any], arm: str) -> str:
    """``1.8x faster than sync (intervals apart; log-rank p = 0.01; first on 9 of 10 seeds,
    sign test p = 0.02)``; ``v``: the baseline's runs against the winner's."""
    pair = v["paired"]
    seeds = "" if pair is None else (
        f"; first on {pair.b_first} of {pair.pairs} seeds, sign test p = "
        f"{fmt(pair.sign_p, 2)}")
    only = f" on the {v['seeds']} seeds both ran" if v["unshared"] else ""
    return (f"{fmt(v['ratio'], 3)}x faster than {arm}{only} "
            f"({'intervals apart' if v['apart'] else 'intervals overlap'}; log-rank p = "
            f"{fmt(v['p'], 2)}{seeds})")


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
