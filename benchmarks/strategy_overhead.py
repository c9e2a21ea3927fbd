"""Strategy overhead: ask+tell seconds per generation and peak memory, per strategy and size.

For each strategy in the registry and each dimension in ``--dims`` (default 1K, 3K, 10K,
30K, 100K), one child process builds the strategy (default popsize and sigma), runs one
warm-up generation, times ``--generations`` generations of ``ask()`` + ``tell()`` (the
fitness, a sphere computed row by row, is not timed), then measures peak memory with
``tracemalloc`` (which sees numpy's allocations) over construction plus two generations of
a fresh instance. Each cell runs in its own process so a slow cell is killed at
``--seconds`` and memory numbers do not mix. ``pop MB`` is the size of one population
(popsize x dim float64); a ``peak/pop`` that stays flat as dim grows means linear memory
(the base class keeps the asked population and hands out a copy, so ~2 is the floor).

Cells are skipped, with the reason in the table, rather than left to hang or swap:

* full ``cmaes`` keeps C and B (n x n float64 each) and temporaries of that size: about
  4 n^2 * 8 bytes (30K dims: 29 GB, 100K: 320 GB), skipped above ``--max-gb``;
* any cell whose predicted time (the previous size's s/gen scaled by (n/n_prev)^2 for full
  CMA, n/n_prev otherwise) exceeds ``--seconds``.

Full CMA also decomposes C (O(n^3), ``numpy.linalg.eigh``) every ``lazy_update_gap``
generations (pycma: ``1 / ((c1 + cmu) n 10)``, 8 at 1K dims, 20 at 3K, ~64 at 10K), which
a few timed generations may never reach; the ``note`` column gives that cost amortized per
generation, from an ``eigh`` timed at 1,000 dims in this run (best of 3) scaled by n^3.

Ratios: ``x base`` is s/gen relative to ``openai-es`` at the same dim (plain numpy, the
cheapest update), measured in the same run. Prints a table and a final JSON line
(``islands.output.benchmarking``: a row per cell; no single ratio, each row has its ``x_base``).

    python benchmarks/strategy_overhead.py [--dims 1000,3000] [--generations 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from islands.output import benchmarking as bench
from islands.strategies import STRATEGIES, make

ROOT = Path(__file__).resolve().parents[1]

BASELINE = "openai-es"


def sphere(X: np.ndarray) -> np.ndarray:
    # row by row: no population-sized temporaries, so peak memory is the strategy's own
    return np.array([-np.dot(x - 1.0, x - 1.0) for x in X])


def cell(name: str, dim: int, generations: int) -> dict:
    """Runs in the child process."""
    t0 = time.perf_counter()
    s = make(name, dim, seed=0)
    init_s = time.perf_counter() - t0
    s.tell(sphere(s.ask()))  # warm-up
    spent = 0.0
    for _ in range(generations):
        t0 = time.perf_counter()
        X = s.ask()
        t1 = time.perf_counter()
        f = sphere(X)
        t2 = time.perf_counter()
        s.tell(f)
        spent += (t1 - t0) + (time.perf_counter() - t2)
    out = {"popsize": s.popsize, "init_s": init_s, "s_per_gen": spent / generations}
    if name == "cmaes":
        out["eig_gap"] = float(getattr(s.es.sm, "lazy_update_gap", 0.0) or 0.0)
    del s, X, f
    gc.collect()
    tracemalloc.start()
    s = make(name, dim, seed=1)
    for _ in range(2):
        s.tell(sphere(s.ask()))
    out["peak_mb"] = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    return out


def time_eigh(n: int) -> float:
    a = np.random.default_rng(0).standard_normal((n, n))
    c = a @ a.T
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        np.linalg.eigh(c)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> None:
    p = bench.parser(__doc__)
    p.add_argument("--dims", default="1000,3000,10000,30000,100000")
    p.add_argument("--generations", type=int, default=5)
    bench.add_seconds(p, 60.0, "time budget per cell", old=("--max-seconds",))
    p.add_argument("--max-gb", type=float, default=8.0, help="memory budget per cell")
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--cell", nargs=3, metavar=("NAME", "DIM", "GENS"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.cell:
        print(json.dumps(cell(a.cell[0], int(a.cell[1]), int(a.cell[2]))))
        return
    dims = [int(d) for d in a.dims.split(",")]
    names = a.strategies.split(",")
    for n in names:
        if n not in STRATEGIES:
            p.error(f"unknown strategy {n!r}; choose from {sorted(STRATEGIES)}")
    eig1k = time_eigh(1000)
    rows, last = [], {}
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for dim in dims:
        for name in names:
            row = {"strategy": name, "dim": dim, "status": "ok", "note": ""}
            rows.append(row)
            quadratic = name == "cmaes"
            mem_gb = 4 * dim**2 * 8 / 1e9 if quadratic else 0.0
            if mem_gb > a.max_gb:
                row.update(status="skipped", note=f"C, B ~{mem_gb:.0f} GB > --max-gb {a.max_gb:g}")
                continue
            if name in last:
                d0, t0 = last[name]
                est = t0 * (dim / d0) ** (2 if quadratic else 1) * (a.generations + 3)
                if est > a.seconds:
                    row.update(status="skipped", note=f"est. {est:.0f} s > --seconds")
                    continue
            cmd = [sys.executable, __file__, "--cell", name, str(dim), str(a.generations)]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                   timeout=a.seconds)
            except subprocess.TimeoutExpired:
                row.update(status="timeout", note=f"killed after {a.seconds:g} s")
                last[name] = (dim, a.seconds)
                continue
            if r.returncode != 0:
                row.update(status="error", note=r.stderr.strip().splitlines()[-1][:80])
                continue
            row.update(json.loads(r.stdout.strip().splitlines()[-1]))
            row["pop_mb"] = row["popsize"] * dim * 8 / 1e6
            last[name] = (dim, row["s_per_gen"])
            if quadratic and row.get("eig_gap"):
                eig = eig1k * (dim / 1000) ** 3
                row["eig_s_amortized"] = eig / row["eig_gap"]
                row["note"] = (f"+eigh ~{eig:.3g} s every {row['eig_gap']:.0f} gens "
                               f"= {row['eig_s_amortized']:.3g} s/gen")
    base = {r["dim"]: r["s_per_gen"] for r in rows
            if r["strategy"] == BASELINE and "s_per_gen" in r}
    for r in rows:
        if "s_per_gen" in r and r["dim"] in base:
            r["x_base"] = r["s_per_gen"] / base[r["dim"]]

    head = (f"{'strategy':<10} {'dim':>7} {'pop':>4} {'s/gen':>9} {'x base':>7} {'init s':>7} "
            f"{'peak MB':>9} {'pop MB':>7} {'peak/pop':>8} {'RSS MB':>7}  note")
    print(f"ask+tell per generation ({a.generations} gens), baseline {BASELINE}; "
          f"eigh(1000) = {eig1k:.3f} s")
    print(head)
    print("-" * len(head))
    for r in rows:
        if r["status"] != "ok":
            print(f"{r['strategy']:<10} {r['dim']:>7} {'':>4} {r['status']:>9}  {r['note']}")
            continue
        print(f"{r['strategy']:<10} {r['dim']:>7} {r['popsize']:>4} {r['s_per_gen']:>9.4f} "
              f"{r.get('x_base', float('nan')):>7.2f} {r['init_s']:>7.3f} {r['peak_mb']:>9.1f} "
              f"{r['pop_mb']:>7.1f} {r['peak_mb'] / r['pop_mb']:>8.1f} {r['maxrss_mb']:>7.0f}  "
              f"{r['note']}")
    bench.emit("strategy_overhead", rows=rows, baseline=BASELINE, ratio=None,
               generations=a.generations, eigh_1000_s=eig1k)


if __name__ == "__main__":
    main()
