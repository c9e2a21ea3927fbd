"""Does an env step cost the same early and late in a run? The virtual clock's calibration
(``islands.runtime.calibration``) measures an island's first generations; this benchmark
times the same evaluator on a late population (a solved run's genome, perturbed as an
island's population is) beside an early one (small random genomes), alternating, and prints
each one's measured seconds per step beside what the calibration predicts for its steps and
rounds (``costmodel.StepCost``).

The baseline is the early population, as the calibration sees it; ``ratio`` is the late
population's measured / predicted over the early one's: 1 where the calibration's costs
hold late in a run, below 1 where a late step costs less than the early ones it measured
(MuJoCo: a falling body's contacts cost more than a hopping one's).

    python -m benchmarks.step_cost_by_state RUN_DIR CALIBRATION [--threads 1] [--repeats 5]
"""

from __future__ import annotations

import time

import numpy as np

from islands.output import benchmarking as bench

SIGMA = 0.02  # the perturbation of the late genome (Hopper's row: ARS's noise)
EARLY_SCALE = 0.05  # early genomes: near the zero start, as an island's first generations


def measure(ev, X: np.ndarray, seed: int, cost) -> dict:
    t = time.perf_counter()
    r = ev.evaluate(X, seed=seed)
    spent = time.perf_counter() - t
    steps, rounds = int(r.env_steps), int(r.extra.get("rounds", 0))
    return {"steps": steps, "rounds": rounds, "s": spent,
            "predicted s": cost.seconds(steps, rounds, 1.0, float(np.size(r.returns)))}


def main(argv: list[str] | None = None) -> None:
    p = bench.parser(__doc__)
    p.add_argument("run_dir", help="a solved run's directory (its solution.npz)")
    p.add_argument("calibration", help="the task's calibration record (JSON)")
    p.add_argument("--repeats", type=int, default=5, help="alternating pairs (default 5)")
    p.add_argument("--popsize", type=int, default=16, help="genomes per evaluation")
    args = p.parse_args(argv)

    from islands.config import parse_args, resolve
    from islands.costmodel import StepCost
    from islands.persistence.solution import load_solution
    from islands.runtime import calibration
    from islands.runtime.virtual import one_torch_thread

    sol = load_solution(args.run_dir)
    env = sol["env"]["env_id"] if isinstance(sol["env"], dict) else str(sol["env"])
    cfg = resolve(parse_args(["--env", env]))
    cost = StepCost.of(calibration.load(args.calibration, cfg.env))
    one_torch_thread(load=True)
    ev = cfg.eval_spec().build(num_threads=1, device="cpu")
    if sol.get("obs_stats") is not None and ev.obs_stats is not None:
        ev.set_obs_stats(sol["obs_stats"])
    rng = np.random.default_rng(0)
    genome = np.asarray(sol["params"], dtype=np.float64)
    pops = {"early": EARLY_SCALE * rng.standard_normal((args.popsize, genome.size)),
            "late": genome + SIGMA * rng.standard_normal((args.popsize, genome.size))}
    got: dict[str, list[dict]] = {k: [] for k in pops}
    try:
        for rep in range(args.repeats):
            for name, X in pops.items():
                got[name].append(measure(ev, X, 1000 + rep, cost))
    finally:
        ev.close()
    rows = []
    for name, ms in got.items():
        steps, rounds = sum(m["steps"] for m in ms), sum(m["rounds"] for m in ms)
        s, pred = sum(m["s"] for m in ms), sum(m["predicted s"] for m in ms)
        rows.append({"population": name, "steps per round": round(steps / max(rounds, 1), 1),
                     "us per step": round(s / steps * 1e6, 2),
                     "predicted us per step": round(pred / steps * 1e6, 2),
                     "measured / predicted": round(s / pred, 3)})
        r = rows[-1]
        print(f"{name:>6}: {r['steps per round']:>5} steps/round  {r['us per step']:>7} us/step"
              f"  predicted {r['predicted us per step']:>7}  measured/predicted "
              f"{r['measured / predicted']}", flush=True)
    early, late = rows
    bench.emit("step_cost_by_state", rows, early,
               late["measured / predicted"] / early["measured / predicted"],
               env=cfg.env, run_dir=args.run_dir, calibration=args.calibration)


if __name__ == "__main__":
    main()
