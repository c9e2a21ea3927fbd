"""One arm's runs against another's, on the seeds both ran.

Arms pooled from batches of other seeds would otherwise compare different episodes' luck
(LunarLander's k = 4 migration ratio was 0.91x over all runs and 1.04x on the shared
seeds: docs/results/islands-vs-one/README.md). The comparison is on one column of the runs:
``episodes_used`` (training episodes, the islands-vs-one and mujoco reports) or
``wall_used`` (seconds, real or virtual: the cluster-scaling report), each unsolved run
censored where it stopped.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..stats import KM, Paired, kaplan_meier, logrank, overlap, paired


def km_of(runs: pd.DataFrame, column: str = "episodes_used") -> KM:
    return kaplan_meier(runs[column], runs["solved"])


def shared(ra: pd.DataFrame, rb: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """Both arms' runs on the seeds both ran, and how many runs that left out (runs
    without a seed, a hand-made table, are taken whole)."""
    if "seed" not in ra or "seed" not in rb:
        return ra, rb, 0
    seeds = set(ra["seed"]) & set(rb["seed"])
    sa, sb = ra[ra["seed"].isin(seeds)], rb[rb["seed"].isin(seeds)]
    return sa, sb, len(ra) - len(sa) + len(rb) - len(sb)


def seed_by_seed(ra: pd.DataFrame, rb: pd.DataFrame, column: str) -> Paired | None:
    """``stats.paired`` over runs already on shared seeds; None without seeds or runs."""
    if "seed" not in ra or "seed" not in rb or ra.empty:
        return None
    a, b = ra.set_index("seed").sort_index(), rb.set_index("seed").sort_index()
    return paired(a[column], a["solved"].astype(bool), b[column], b["solved"].astype(bool))


def versus(ra: pd.DataFrame, rb: pd.DataFrame, column: str = "episodes_used"
           ) -> dict[str, Any]:
    """Runs ``ra`` against runs ``rb`` on their shared seeds: the ratio of Kaplan-Meier
    medians of ``column`` (a / b, below 1: ``a`` needs less), whether their 95% intervals
    are apart, the log-rank p, the seed-by-seed tests (``paired``), the seeds compared and
    how many runs the pairing left out (``unshared``)."""
    sa, sb, unshared = shared(ra, rb)
    ka, kb = km_of(sa, column), km_of(sb, column)
    p = logrank(sa[column], sa["solved"], sb[column], sb["solved"])
    ratio = ka.median / kb.median if kb.median and math.isfinite(kb.median) else math.nan
    apart = not overlap((ka.low, ka.high), (kb.low, kb.high))
    return {"ratio": ratio, "apart": apart, "p": p, "paired": seed_by_seed(sa, sb, column),
            "seeds": sa["seed"].nunique() if "seed" in sa else len(sa),
            "unshared": unshared, "km": (ka, kb)}
