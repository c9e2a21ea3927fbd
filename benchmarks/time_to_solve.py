"""Time to solve: one launcher run per seed, and how long each took to reach the target.

    python benchmarks/time_to_solve.py --env LunarLander-v3 --seeds 0-9 [--islands 2] \
        [-- any other launcher flags]

Each seed is a separate ``python -m islands.launch`` process (its own embedded Ray, run one
after another so they never share the CPUs). Per seed: solved, run wall (the run's own
``wall_s``: evolution and tests, without Ray's start-up), command wall, wall / evaluations /
episodes / env steps at the moment the solution was found (``*_to_solve`` in
``summary.json``), and the test mean. Unsolved seeds count with their full wall time in the
worst case and are reported as such. Table, then a final JSON line with median and worst.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def parse_seeds(text: str) -> list[int]:
    """``0-9``, ``1,4,7`` or a mix (``0-3,8``)."""
    seeds: list[int] = []
    for part in [p for p in text.split(",") if p.strip()]:
        a, sep, b = part.partition("-")
        seeds += list(range(int(a), int(b) + 1)) if sep else [int(a)]
    return seeds


def run_seed(env: str, islands: int, seed: int, extra: list[str], out: Path,
             timeout: float) -> dict:
    cmd = [sys.executable, "-m", "islands.launch", "--env", env, "--islands", str(islands),
           "--seed", str(seed), "--quiet", "--out", str(out), *extra]
    t = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.monotonic() - t
    if proc.returncode != 0:
        raise SystemExit(f"seed {seed}: launcher exited {proc.returncode}: "
                         f"{proc.stderr.strip().splitlines()[-1:]}")
    s = json.loads((out / "summary.json").read_text())
    return {"seed": seed, "solved": bool(s["solved"]), "run_wall_s": s["wall_s"],
            "command_wall_s": wall, "wall_to_solve": s.get("wall_to_solve"),
            "evals_to_solve": s.get("evals_to_solve"),
            "episodes_to_solve": s.get("episodes_to_solve"),
            "env_steps_to_solve": s.get("env_steps_to_solve"), "test_mean": s["test_mean"],
            "total_evals": s["total_evals"], "total_episodes": s.get("total_episodes"),
            "stop_reason": s["stop_reason"]}


def _fmt(x, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                epilog="Arguments after -- go to the launcher unchanged.")
    p.add_argument("--env", default="LunarLander-v3")
    p.add_argument("--seeds", default="0-9", help="e.g. 0-9 or 1,4,7 (default: 0-9)")
    p.add_argument("--islands", type=int, default=2)
    p.add_argument("--timeout", type=float, default=3600, help="seconds per run at most")
    p.add_argument("--keep", metavar="DIR", default=None,
                   help="keep each seed's run directory as DIR/s<seed> (default: a temporary "
                   "directory, removed at the end)")
    args, extra = p.parse_known_args()
    extra = [a for a in extra if a != "--"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(args.keep) if args.keep else Path(tmp)
        for seed in parse_seeds(args.seeds):
            r = run_seed(args.env, args.islands, seed, extra, base / f"s{seed}",
                         args.timeout)
            rows.append(r)
            print(f"seed {seed:>3}  solved {str(r['solved']):>5}  run wall "
                  f"{r['run_wall_s']:7.1f} s  to solve {_fmt(r['wall_to_solve']):>7} s  "
                  f"evals {_fmt(r['evals_to_solve'], 'd'):>8}  episodes "
                  f"{_fmt(r['episodes_to_solve'], 'd'):>8}  test {_fmt(r['test_mean'])}",
                  flush=True)
    walls = [r["run_wall_s"] for r in rows]
    solved = [r for r in rows if r["solved"]]
    summary = {
        "benchmark": "time_to_solve", "env": args.env, "islands": args.islands,
        "launcher_flags": extra, "seeds": [r["seed"] for r in rows],
        "solved": len(solved), "runs": len(rows),
        "median_run_wall_s": statistics.median(walls), "worst_run_wall_s": max(walls),
        "median_episodes_to_solve": statistics.median(
            [r["episodes_to_solve"] for r in solved]) if solved else None,
        "median_evals_to_solve": statistics.median(
            [r["evals_to_solve"] for r in solved]) if solved else None,
        "per_seed": rows,
    }
    print(f"solved {len(solved)}/{len(rows)}; run wall median {summary['median_run_wall_s']:.1f}"
          f" s, worst {summary['worst_run_wall_s']:.1f} s")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
