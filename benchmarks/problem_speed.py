"""A user's Rastrigin given as a Python function against the built-in rastrigin:D, and pycma.

Every run has the same fixed target, f <= ``TARGET`` (0 is the optimum), set before any run
of this protocol, and the same evaluation budget, and stops when it gets there:

* islands on the built-in ``rastrigin:D`` (the baseline; its scale is the fitness ``-f``,
  so it gets ``target=-TARGET``);
* islands on ``islands.run(problem=rastrigin, minimize=True, target=TARGET)`` with this
  module's :func:`rastrigin` (batched over the population; run as ``python -m
  benchmarks.problem_speed`` it lives in ``__main__`` and travels by value, as a notebook's
  function does);
* pycma's ``fmin2`` with IPOP restarts (``restarts=9``, population doubled each time, each
  restart from a fresh uniform point of [-3, 3]^D, ``ftarget=TARGET``, ``maxfevals`` the
  whole budget across restarts) on the same function in this process. Its best f is the
  best of every evaluation of every restart (``fmin2`` reports the last restart's).

``--choose`` runs the choosing seed (0) over the population sizes of both (``--popsizes``):
each side keeps its fastest to the target there. The other seeds report. Islands' time to
solve is the summary's ``wall_to_solve`` (from the start of evolution: Ray's actors are up);
their whole runs, start-up included, are the ``wall s`` column. Prints a table and the final
JSON line; ``ratio`` is the function's median time to solve over the built-in's (issue 58's
goal: at most 1.1); ``--raw FILE`` keeps every row.
"""

from __future__ import annotations

import json
import statistics
import time

import numpy as np

from islands.output import benchmarking as bench

SIGMA = 0.5  # every run starts at a uniform point of [-3, 3]^D with this step size
# Fixed before any run of this protocol (issue 58): on the earlier page, 4 islands of 100
# reached 19-37 at 200,000 evaluations on seeds 1-5, pycma 36-763; 30 with a budget five
# times larger is within reach of both.
TARGET = 30.0
CHOOSING_SEED = 0


def rastrigin(X: np.ndarray) -> np.ndarray:
    """Rastrigin of each row of ``X`` (P, D), as envs/synthetic.py computes it."""
    return 10.0 * X.shape[1] + (X * X - 10.0 * np.cos(2 * np.pi * X)).sum(1)


def islands_row(kind: str, dim: int, seed: int, evals: int, islands: int, popsize: int,
                root: str, gens_per_call: int = 1) -> dict:
    import islands as isl

    where = ({"env": f"rastrigin:{dim}", "target": -TARGET} if kind == "built-in" else
             {"problem": rastrigin, "dim": dim, "minimize": True, "target": TARGET})
    t0 = time.perf_counter()
    res = isl.run(**where, islands=islands, strategy="cmaes", sigma=SIGMA, popsize=popsize,
                  seed=seed, max_evals=evals, generations=10**9,  # the budget or the target
                  gens_per_call=gens_per_call, quiet=True, dashboard="off", tensorboard="off",
                  out=f"{root}/{kind}-{popsize}-{seed}", namespace=f"ps-{kind}-{popsize}-{seed}")
    s = res.summary
    return {"kind": kind, "seed": seed, "popsize": popsize, "islands": islands,
            "gens_per_call": gens_per_call, "solved": res.solved,
            "to_target_s": s["wall_to_solve"], "evals_to_target": s["evals_to_solve"],
            "best_f": -res.best_fitness, "evals": s["total_evals"],
            "wall_s": time.perf_counter() - t0}


def pycma_row(dim: int, seed: int, evals: int, popsize: int | None) -> dict:
    import cma

    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    seen = {"n": 0, "best": np.inf, "at_s": None, "at_n": None}

    def f(x) -> float:
        v = float(rastrigin(np.asarray(x)[None, :])[0])
        seen["n"] += 1
        seen["best"] = min(seen["best"], v)
        if seen["at_s"] is None and v <= TARGET:
            seen["at_s"], seen["at_n"] = time.perf_counter() - t0, seen["n"]
        return v

    opts = {"maxfevals": evals, "ftarget": TARGET, "verbose": -9, "seed": seed + 1}
    if popsize:
        opts["popsize"] = popsize
    _, es = cma.fmin2(f, lambda: rng.uniform(-3, 3, dim), SIGMA, restarts=9, bipop=False,
                      incpopsize=2, options=opts)
    return {"kind": "pycma fmin2 (IPOP)", "seed": seed, "popsize": popsize or "default",
            "solved": seen["at_s"] is not None, "to_target_s": seen["at_s"],
            "evals_to_target": seen["at_n"], "best_f": float(seen["best"]),
            "evals": seen["n"], "last_popsize": int(es.popsize),
            "wall_s": time.perf_counter() - t0}


def _fmt(v) -> str:
    return "never" if v is None else f"{v:,.1f}" if isinstance(v, float) else f"{v:,}"


def table(rows: list[dict]) -> None:
    print(f"target: f <= {TARGET:g} (fixed before the runs)")
    print(f"{'kind':<20} {'seed':>4} {'popsize':>8} {'to target s':>12} {'evals to target':>16} "
          f"{'best f':>8} {'evals':>10} {'wall s':>7}")
    for r in rows:
        print(f"{r['kind']:<20} {r['seed']:>4} {str(r['popsize']):>8} "
              f"{_fmt(r['to_target_s']):>12} {_fmt(r['evals_to_target']):>16} "
              f"{r['best_f']:>8.2f} {r['evals']:>10,} {r['wall_s']:>7.1f}")


def median_to_target(rows: list[dict], kind: str) -> float:
    """The median time to the target of ``kind``'s rows, a run that never got there
    counting as infinitely slow (so a median over censored runs says so: inf)."""
    return statistics.median(r["to_target_s"] if r["solved"] else float("inf")
                             for r in rows if r["kind"] == kind)


def main(argv: list[str] | None = None) -> None:
    p = bench.parser(__doc__)
    bench.add_seconds(p, None, "unused (the runs stop on the target or their budget)")
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--evals", type=int, default=1_000_000, help="evaluations per run")
    p.add_argument("--islands", type=int, default=4)
    p.add_argument("--popsize", type=int, default=100, help="each island's population")
    p.add_argument("--gens-per-call", type=int, default=1,
                   help="generations an island runs per Ray call (the launcher's option)")
    p.add_argument("--pycma-popsize", type=int, default=0,
                   help="pycma's first population (0: its default, 4 + 3 ln D)")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=1,
                   help=f"seeds first-seed, first-seed + 1, ... (seed {CHOOSING_SEED} chooses)")
    p.add_argument("--choose", action="store_true",
                   help=f"seed {CHOOSING_SEED} over --popsizes for the islands and pycma")
    p.add_argument("--popsizes", default="17,50,100,200",
                   help="population sizes --choose tries (pycma: also its default)")
    p.add_argument("--raw", help="write every row to this JSON file")
    p.add_argument("--skip-pycma", action="store_true", help="islands rows only")
    bench.add_quick(p, "tiny sizes: 10 dimensions, 20,000 evaluations, one seed")
    a = p.parse_args(argv)
    if a.quick:
        a.dim, a.evals, a.seeds, a.popsizes = 10, 20_000, 1, "17,50"
    import tempfile

    import ray

    root = tempfile.mkdtemp(prefix="problem-speed-")  # the runs' directories
    sizes = [int(s) for s in a.popsizes.split(",")]
    ray.init(address="local", include_dashboard=False, log_to_driver=False)
    rows = []
    try:
        if a.choose:
            for size in sizes:  # the function alone: it is what a user runs
                rows.append(islands_row("problem", a.dim, CHOOSING_SEED, a.evals, a.islands,
                                        size, root, a.gens_per_call))
        else:
            for seed in range(a.first_seed, a.first_seed + a.seeds):
                for kind in ("built-in", "problem"):  # alternating: drift hits both alike
                    rows.append(islands_row(kind, a.dim, seed, a.evals, a.islands, a.popsize,
                                            root, a.gens_per_call))
    finally:
        ray.shutdown()
    if a.skip_pycma:
        pass
    elif a.choose:
        rows += [pycma_row(a.dim, CHOOSING_SEED, a.evals, s) for s in [0, *sizes]]
    else:
        rows += [pycma_row(a.dim, seed, a.evals, a.pycma_popsize)
                 for seed in range(a.first_seed, a.first_seed + a.seeds)]
    table(rows)
    if a.raw:
        with open(a.raw, "w") as fh:
            json.dump({"target": TARGET, "dim": a.dim, "evals": a.evals, "sigma": SIGMA,
                       "islands": a.islands, "rows": rows}, fh, indent=1)
    if a.choose:
        bench.emit("problem_speed_choose", rows, {"kind": "problem"}, 1.0, dim=a.dim,
                   evals=a.evals, target=TARGET)
        return
    base = median_to_target(rows, "built-in")
    bench.emit("problem_speed", rows, {"kind": "built-in", "median_to_target_s": base},
               median_to_target(rows, "problem") / base,
               pycma_over_builtin=median_to_target(rows, "pycma fmin2 (IPOP)") / base,
               dim=a.dim, evals=a.evals, islands=a.islands, popsize=a.popsize,
               gens_per_call=a.gens_per_call,
               pycma_popsize=a.pycma_popsize or "default", target=TARGET)


if __name__ == "__main__":
    main()
