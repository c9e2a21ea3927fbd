"""How much do a real run's island calls wander around the cost model's seconds, and how
much of it is each island's own? (issue 60, virtual-time.md stage 13: the virtual
runtime's ``jitter``)

Per kept real run: each call's seconds against a least-squares fit on its env steps and
episodes (the cost model's terms) and a constant; the log residual's standard deviation,
its lag-1 autocorrelation along an island's calls, its correlation between two islands at
the same generation (a share both islands feel: the tester, the OS; it does not change how
their calls interleave) and, from those, the log-sd of independent per-call noise with the
same long-run drift between two islands' clocks: ``sd * sqrt(1 - cross) *
sqrt((1 + lag1) / (1 - lag1))``. Prints a row per arm (medians over its runs) and a final
JSON line.

    python benchmarks/call_noise.py docs/results/virtual-time/calls/hopper2-6060-6069-real
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from islands.output import benchmarking as bench
from islands.runtime.calibration_runs import call_table, run_dirs


def residuals(run: Path, skip: int = 3) -> pd.DataFrame:
    """Each island call's log residual (``r``) against the run's own fit (its calls from
    ``calibration_runs.call_table``; its first ``skip`` generations left out: start-up)."""
    _, m = call_table(run)
    m = m[m.generation > skip].copy()
    X = np.c_[m.steps, m.episodes, np.ones(len(m))]
    coef, *_ = np.linalg.lstsq(X, m.call_s.to_numpy(), rcond=None)
    m["r"] = np.log(m.call_s.to_numpy() / np.maximum(X @ coef, 1e-9))
    return m


def noise(run: Path) -> dict[str, float]:
    m = residuals(run)
    lag1 = [np.corrcoef(g.r.to_numpy()[:-1], g.r.to_numpy()[1:])[0, 1]
            for _, g in m.groupby("island") if len(g) > 3]
    wide = m.pivot_table(index="generation", columns="island", values="r").dropna()
    cross = (float(np.corrcoef(wide.iloc[:, 0], wide.iloc[:, 1])[0, 1])
             if wide.shape[1] >= 2 and len(wide) > 3 else 0.0)
    sd, ac = float(m.r.std()), float(np.median(lag1))
    own = sd * math.sqrt(max(0.0, 1 - cross)) * math.sqrt((1 + ac) / max(1e-9, 1 - ac))
    return {"sd": sd, "lag1": ac, "cross": cross, "iid_equivalent": own}


def main(argv: list[str] | None = None) -> None:
    ap = bench.parser(__doc__)
    ap.add_argument("arms", type=Path, nargs="+", help="kept real arms (experiment dirs)")
    args = ap.parse_args(argv)
    rows = []
    for arm in args.arms:
        runs = [noise(r) for r in run_dirs(arm)]
        med = pd.DataFrame(runs).median()
        rows.append({"arm": arm.name, "runs": len(runs),
                     **{k: round(float(v), 3) for k, v in med.items()}})
    print(pd.DataFrame(rows).to_string(index=False))
    bench.emit("call_noise", rows, baseline="the cost model's fit of each run", ratio=None)


if __name__ == "__main__":
    main()
