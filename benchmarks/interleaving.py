"""How the islands of a real arm and of a virtual arm interleave, seed by seed: does the
virtual clock give the algorithm the same migrations as the real run (issue 60, item 3)?

    python benchmarks/interleaving.py REAL_DIR VIRTUAL_DIR [--seeds 6035 6036 ...]

Each DIR is an experiment directory (``runs/t*/metrics.parquet``); the arms are paired on
the seeds both ran. Per run: the episodes it spent, each island's generations, new
immigrants per island-generation (the migration rate the loop actually delivered), the
generation at which an island first took a new immigrant, and the generation gap between
the islands (at each call, the spread of the islands' latest generations: how far apart
their clocks let them drift). If the virtual arm draws more episodes while these agree, the
difference is the seeds' own spread, not the interleaving. Prints the table and a final
JSON line (its ratio: the virtual arm's new immigrants per island-generation over the real
arm's, pooled)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from islands.config import ConfigError
from islands.output import benchmarking as bench
from islands.runtime.calibration_runs import run_dirs


def gaps(m: pd.DataFrame) -> np.ndarray:
    """At each call (in completion order), the largest minus the smallest of the islands'
    latest generations, once every island has reported."""
    latest: dict[int, int] = {}
    out = []
    for island, gen in m.sort_values("wall_s")[["island", "generation"]].itertuples(
            index=False):
        latest[island] = gen
        if len(latest) == m.island.nunique():
            out.append(max(latest.values()) - min(latest.values()))
    return np.asarray(out)


def run_row(run: Path) -> dict:
    """One run's interleaving figures (see the module's docstring)."""
    m = pd.read_parquet(run / "metrics.parquet")
    seed = (yaml.safe_load((run / "config.yaml").read_text()) or {}).get("seed")
    gens = m.groupby("island").generation.max()
    first = m[m.immigrants_new > 0].groupby("island").generation.min()
    g = gaps(m)
    return {"seed": seed, "episodes": int(m.groupby("island").episodes.max().sum()),
            "generations": int(gens.sum()), "new_immigrants": int(m.immigrants_new.sum()),
            "new_per_gen": float(m.immigrants_new.sum() / gens.sum()),
            "first_new_gen": float(first.median()) if len(first) else float("nan"),
            "gap_median": float(np.median(g)) if len(g) else float("nan"),
            "gap_max": int(g.max()) if len(g) else 0}


def arm(path: Path, seeds: list[int] | None) -> pd.DataFrame:
    runs = run_dirs(path, seeds)
    if not runs:
        raise ConfigError(f"no runs/t*/metrics.parquet under {path}"
                          + (f" with seeds {seeds}" if seeds else ""))
    return pd.DataFrame([run_row(r) for r in runs]).set_index("seed")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("real", type=Path)
    ap.add_argument("virtual", type=Path)
    ap.add_argument("--seeds", type=int, nargs="+", help="only these seeds (default: shared)")
    a = ap.parse_args(argv)
    try:
        real, virt = arm(a.real, a.seeds), arm(a.virtual, a.seeds)
        shared = sorted(set(real.index) & set(virt.index))
        if not shared:
            raise ConfigError(f"{a.real} and {a.virtual} share no seed")
    except ConfigError as e:
        print(f"interleaving: {e}", file=sys.stderr)
        return 2
    t = real.loc[shared].join(virt.loc[shared], suffixes=(" real", " virtual"))
    t = t[[f"{c} {k}" for c in real.columns for k in ("real", "virtual")]]
    print(t.round(2).to_string(), "\n")
    pooled = {k: {"episodes_median": float(d.loc[shared].episodes.median()),
                  "new_per_gen": float(d.loc[shared].new_immigrants.sum()
                                       / d.loc[shared].generations.sum()),
                  "gap_median": float(d.loc[shared].gap_median.median())}
              for k, d in (("real", real), ("virtual", virt))}
    print(pd.DataFrame(pooled).round(3).to_string())
    rows = [{"seed": int(s), **{k: (round(float(v), 3) if isinstance(v, float) else int(v))
                                for k, v in r.items()}} for s, r in t.iterrows()]
    ratio = pooled["virtual"]["new_per_gen"] / pooled["real"]["new_per_gen"]
    bench.emit("interleaving", rows, baseline="the real arm on the same seeds", ratio=ratio,
               real=str(a.real), virtual=str(a.virtual), seeds=shared, pooled=pooled)
    return 0


if __name__ == "__main__":
    sys.exit(main())
