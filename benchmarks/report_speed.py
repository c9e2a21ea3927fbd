"""How long ``python -m islands.experiment report`` takes on an experiment of N trials.

Builds experiment directories in the real on-disk format (``config.yaml`` from a resolved
launcher config, ``metrics.parquet`` / ``summary.json`` through ``islands.output.rundir.RunDir``,
the runner's ``trial.json``), with made-up numbers: a network-scaling grid (3 sizes x 3
strategies) of N trials, each with REPORTS island reports, a fifth of them unsolved and one
crashed. Times collecting the results (``results.parquet``, ``curves.parquet``) and writing
``report.md`` with its figures, for N and for a 10-trial baseline built the same way.

    python benchmarks/report_speed.py [--trials 100] [--reports 300]

Prints a table and, last, a JSON line (``islands.output.benchmarking``): ``rows`` ``[{"trials",
"collect_s", "report_s", "total_s"}, ...]``, baseline 10 trials, ``ratio`` total(N) /
total(10). The goal (issue 30): <= 10 s at 100.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from islands.config import from_dict, resolve
from islands.experiment import names as kinds
from islands.experiment.reports import write_report
from islands.experiment.store import write_results
from islands.output import benchmarking as bench
from islands.output.rundir import METRIC_COLUMNS, RunDir

SIZES = {(32, 16): 884, (64, 32): 2788, (128, 64): 9668}
STRATEGIES = ("cmaes", "sep-cmaes", "openai-es")


def _metrics(rng: np.random.Generator, reports: int, islands: int = 2) -> list[dict]:
    rows, best = [], -200.0
    for g in range(1, reports + 1):
        best = max(best, best + rng.normal(2.0, 3.0))
        i = g % islands
        rows.append({c: 0 for c in METRIC_COLUMNS} | {
            "island": i, "strategy": "cmaes", "generation": g // islands + 1,
            "wall_s": g * 0.5, "evals": 48, "env_steps": 9000, "episodes": 144,
            "fitness_max": best, "fitness_mean": best - 20, "best_so_far": best,
            "peak_rss_mb": 600.0, "call_s": 0.4, "total_evals": 48 * g,
            "total_env_steps": 9000 * g, "total_episodes": 144 * g})
    return rows


def build(root: Path, n: int, reports: int, seed: int = 0) -> Path:
    """An experiment directory of ``n`` trials (see the module docstring)."""
    rng = np.random.default_rng(seed)
    cells = [(h, s) for h in SIZES for s in STRATEGIES]
    trials = [(f"t{i:03d}", {"hidden": list(cells[i % len(cells)][0]),
                             "strategy": cells[i % len(cells)][1]}, i // len(cells))
              for i in range(n)]
    root.mkdir(parents=True)
    spec = {"name": "bench", "report": "network-scaling", "question": "How fast is the report?",
            "base": {"env": "LunarLander-v3", "islands": 2},
            "grid": {"hidden": [list(h) for h in SIZES], "strategy": list(STRATEGIES)},
            "seeds": sorted({t[2] for t in trials}), "budget": {"max_evals": 20000},
            "scale": "laptop", "source": "experiments/network-scaling.yaml"}
    meta = {"spec": spec, "trials": [{"trial_id": t, "label": t, "params": p, "seed": s}
                                     for t, p, s in trials]}
    (root / kinds.EXPERIMENT_JSON).write_text(json.dumps(meta))
    for k, (trial, params, seed) in enumerate(trials):
        run = root / kinds.RUNS_DIR / trial
        if k == n - 1:  # one crash: no summary, the runner's record
            run.mkdir(parents=True)
            (run / kinds.TRIAL_JSON).write_text(json.dumps(
                {"trial": trial, "seed": seed, "params": params, "status": "crashed",
                 "reason": "RuntimeError: made up"}))
            continue
        cfg = resolve(from_dict({"env": "LunarLander-v3", "islands": 2, **params,
                                 "seed": seed, "out": str(run)}), check_env=False)
        rd = RunDir.create(str(run))
        rd.write_config(cfg.to_yaml_dict())
        rows = _metrics(rng, reports)
        rd.write_metrics(rows)
        solved = k % 5 != 0
        last = rows[-1]
        rd.write_summary({
            "env": cfg.env, "islands": 2, "strategies": [params["strategy"]] * 2,
            "best_fitness": last["best_so_far"], "test_mean": 230.0 if solved else None,
            "solved": solved, "target": 200.0,
            "stop_reason": "target" if solved else "evaluation budget",
            "wall_s": last["wall_s"], "total_evals": last["total_evals"],
            "total_env_steps": last["total_env_steps"],
            "total_episodes": last["total_episodes"],
            "evals_to_solve": last["total_evals"] if solved else None,
            "wall_to_solve": last["wall_s"] if solved else None,
            "num_params": SIZES[tuple(params["hidden"])]})
        (run / kinds.TRIAL_JSON).write_text(json.dumps(
            {"trial": trial, "seed": seed, "params": params, "started_at": 1e9 + 100 * k,
             "ended_at": 1e9 + 100 * k + last["wall_s"], "shared_cpus": False}))
    return root


def measure(exp: Path) -> dict[str, float]:
    t0 = time.perf_counter()
    write_results(exp)
    t1 = time.perf_counter()
    write_report(exp)
    t2 = time.perf_counter()
    return {"collect_s": t1 - t0, "report_s": t2 - t1, "total_s": t2 - t0}


def main(argv: list[str] | None = None) -> None:
    p = bench.parser(__doc__)
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--reports", type=int, default=300, help="island reports per trial")
    args = p.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="report-speed-"))
    try:
        rows = []
        for n in (10, args.trials):
            exp = build(tmp / f"n{n}", n, args.reports)
            rows.append({"trials": n, **measure(exp)})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'trials':>7} {'collect s':>10} {'report s':>9} {'total s':>8}")
    for r in rows:
        print(f"{r['trials']:>7} {r['collect_s']:>10.2f} {r['report_s']:>9.2f} "
              f"{r['total_s']:>8.2f}")
    bench.emit("report_speed", rows=rows, baseline="10 trials",
               ratio=rows[1]["total_s"] / rows[0]["total_s"])


if __name__ == "__main__":
    main()
