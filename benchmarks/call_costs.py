"""Seconds per env step of each island's calls, a real arm's against a virtual arm's, by the
calls' mean episode length: where a virtual clock runs fast or slow (issue 60, item 3).

    python benchmarks/call_costs.py REAL_DIR VIRTUAL_DIR

Each DIR is an experiment directory (``runs/t*/metrics.parquet``). A row's ``call_s`` is
the call's seconds (real, or the cost model's); an island slowed on purpose sleeps its
``slowdown_s`` (its run's config) a generation inside its calls, taken out here so that
its compute is compared. A second table: the real arm's other islands' seconds per step by
the share of each call that overlapped a sleeping island's sleep (does an island step
faster while its neighbour sleeps?). Prints the tables and a final JSON line (its ratio:
the virtual seconds per step over the real ones, all calls)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from islands.config import ConfigError
from islands.output import benchmarking as bench
from islands.runtime.calibration_runs import call_table, run_dirs

BINS = [0, 200, 400, 700, 1001]  # mean steps per episode of a call (Hopper's are <= 1000)
OVERLAP = [-0.01, 0.05, 0.2, 0.4, 0.7, 1.01]


def calls(exp: Path) -> pd.DataFrame:
    """One row per island call of every trial (``calibration_runs.call_table``: steps,
    episodes, seconds of compute with a slowed island's sleep taken out, its span)."""
    out = [call_table(r)[1].assign(trial=r.name) for r in run_dirs(exp)]
    if not out:
        raise ConfigError(f"no runs/t*/metrics.parquet under {exp}")
    return pd.concat(out, ignore_index=True)


def per_step(d: pd.DataFrame, by: list[str]) -> pd.Series:
    return d.groupby(by, observed=True).apply(
        lambda x: 1e6 * x.compute_s.sum() / x.steps.sum(), include_groups=False)


def overlap_share(d: pd.DataFrame, sleeper: int) -> pd.DataFrame:
    """The other islands' calls with the share of each spent while ``sleeper`` slept (its
    sleep ends its call: the island sleeps after each generation)."""
    rows = []
    for _, t in d.groupby("trial"):
        s = t[t.island == sleeper]
        lo, hi = (s.end - s.slept).to_numpy(), s.end.to_numpy()
        for _, c in t[t.island != sleeper].iterrows():
            ov = np.clip(np.minimum(c.end, hi) - np.maximum(c.end - c.call_s, lo), 0, None)
            rows.append({"share": ov.sum() / c.call_s, "compute_s": c.compute_s,
                         "steps": c.steps})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("real", type=Path)
    ap.add_argument("virtual", type=Path)
    a = ap.parse_args(argv)
    try:
        arms = {name: calls(p) for name, p in (("real", a.real), ("virtual", a.virtual))}
    except ConfigError as e:
        print(f"call_costs: {e}", file=sys.stderr)
        return 2
    for d in arms.values():
        d["length"] = pd.cut(d.steps / d.episodes, BINS)
    t = pd.DataFrame({f"{k} us/step": per_step(d, ["island", "length"]) for k, d in arms.items()})
    t = t.join(pd.DataFrame({f"{k} calls": d.groupby(["island", "length"], observed=True).size()
                             for k, d in arms.items()}))
    t["virtual / real"] = t["virtual us/step"] / t["real us/step"]
    print(t.round(2).to_string(), "\n")
    whole = {k: per_step(d, ["island"]) for k, d in arms.items()}
    print(pd.DataFrame(whole).assign(ratio=lambda x: x.virtual / x.real).round(3).to_string())
    rows = [{"island": int(i), "length": str(b), **{k: round(float(v), 3)
                                                     for k, v in r.items()}}
            for (i, b), r in t.iterrows()]
    extra = {"real": str(a.real), "virtual": str(a.virtual),
             "us_per_step": {k: {int(i): round(float(v), 2) for i, v in s.items()}
                             for k, s in whole.items()}}
    for sleeper in sorted(set(arms["real"].island[arms["real"].slept > 0])):
        o = overlap_share(arms["real"], sleeper)
        o["share"] = pd.cut(o.share, OVERLAP)
        by = per_step(o, ["share"])
        print(f"\nreal arm, other islands' us/step by the share of a call island {sleeper} slept")
        print(pd.DataFrame({"us/step": by, "calls": o.groupby("share", observed=True).size()})
              .round(1).to_string())
        extra[f"overlap_{sleeper}"] = {str(k): round(float(v), 2) for k, v in by.items()}
    ratio = float(sum(arms["virtual"].compute_s) / sum(arms["virtual"].steps)
                  / (sum(arms["real"].compute_s) / sum(arms["real"].steps)))
    bench.emit("call_costs", rows, baseline="the real arm's calls", ratio=ratio, **extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())
