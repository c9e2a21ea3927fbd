"""A user's Rastrigin given as a Python function against the built-in rastrigin:D, and pycma.

Side by side on one local Ray, alternating, the same seeds and the same evaluation budget:
islands on the built-in ``rastrigin:D`` (the baseline), islands on ``--problem`` with this
module's :func:`rastrigin` (batched over the population, minimized), and pycma's ``fmin2``
with IPOP restarts on the same function and budget in this process. Prints a table and the
final JSON line; ``ratio`` is the problem runs' median wall time over the built-in's
(issue 46's goal: at most 1.1), and each row says the best f it reached (0 is optimal).
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from islands.output import benchmarking as bench


def rastrigin(X: np.ndarray) -> np.ndarray:
    """Rastrigin of each row of ``X`` (P, D), as envs/synthetic.py computes it."""
    return 10.0 * X.shape[1] + (X * X - 10.0 * np.cos(2 * np.pi * X)).sum(1)


def islands_row(kind: str, dim: int, seed: int, evals: int, islands: int) -> dict:
    import islands as isl

    where = ({"env": f"rastrigin:{dim}"} if kind == "built-in" else
             {"problem": "benchmarks.problem_speed:rastrigin", "dim": dim, "minimize": True})
    t0 = time.perf_counter()
    res = isl.run(**where, islands=islands, strategy="cmaes", seed=seed, max_evals=evals,
                  target="none", test_episodes=1, quiet=True, dashboard="off",
                  tensorboard="off", out=f"/tmp/problem-speed/{kind}-{seed}",
                  namespace=f"ps-{kind}-{seed}")
    return {"kind": kind, "seed": seed, "wall_s": time.perf_counter() - t0,
            "evals": res.summary["total_evals"], "best_f": -res.best_fitness}


def pycma_row(dim: int, seed: int, evals: int) -> dict:
    import cma

    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    _, es = cma.fmin2(lambda x: float(rastrigin(np.asarray(x)[None, :])[0]),
                      rng.uniform(-3, 3, dim), 2.0, restarts=9, bipop=False,
                      options={"maxfevals": evals, "verbose": -9, "seed": seed + 1})
    return {"kind": "pycma fmin2 (IPOP)", "seed": seed, "wall_s": time.perf_counter() - t0,
            "evals": int(es.result.evaluations), "best_f": float(es.result.fbest)}


def main(argv: list[str] | None = None) -> None:
    p = bench.parser(__doc__)
    bench.add_seconds(p, None, "unused (the runs stop on their evaluation budget)")
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--evals", type=int, default=200_000, help="evaluations per run")
    p.add_argument("--islands", type=int, default=4)
    p.add_argument("--seeds", type=int, default=3)
    bench.add_quick(p, "tiny sizes: 10 dimensions, 2,000 evaluations, one seed")
    a = p.parse_args(argv)
    if a.quick:
        a.dim, a.evals, a.seeds = 10, 2_000, 1
    import ray

    ray.init(address="local", include_dashboard=False, log_to_driver=False)
    rows = []
    try:
        for seed in range(a.seeds):
            for kind in ("built-in", "problem"):  # alternating: drift hits both alike
                rows.append(islands_row(kind, a.dim, seed, a.evals, a.islands))
            rows.append(pycma_row(a.dim, seed, a.evals))
    finally:
        ray.shutdown()
    print(f"{'kind':<20} {'seed':>4} {'wall s':>8} {'evals':>9} {'best f':>10}")
    for r in rows:
        print(f"{r['kind']:<20} {r['seed']:>4} {r['wall_s']:>8.1f} {r['evals']:>9,} "
              f"{r['best_f']:>10.2f}")

    def med(kind: str) -> float:
        return statistics.median(r["wall_s"] for r in rows if r["kind"] == kind)

    bench.emit("problem_speed", rows, {"kind": "built-in", "median_wall_s": med("built-in")},
         med("problem") / med("built-in"), dim=a.dim, evals=a.evals, islands=a.islands)


if __name__ == "__main__":
    main()
