"""Start-up of a default run: seconds from the command until the first island report.

Usage: ``python benchmarks/startup.py [--islands 1,4,16] [--repeats 2] [--env CartPole-v1]``

Each measurement is a real ``python -m islands.launch --islands N`` in a subprocess (its own
embedded Ray, dashboard on as by default; one Ray at a time), stopped after 2 generations:

- ``first report``: the launcher's ``startup_s`` (``summary.json``: from the start of
  ``runtime.driver.run``, Ray's own start included, until every island has built its
  evaluator and strategy) plus the earliest island report's ``wall_s``; ``command`` is the
  whole command's wall time (Python and import of the launcher, the run, its test, exit).
- ``ray warnings``: stderr lines from Ray (``WARNING``, ``worker processes``) on that run.

The baseline runs beside it, alternating: ``--islands-per-process 1``, one Ray worker
process per island (how every run started before islands sharing a CPU shared a process).
Each configuration runs ``--repeats`` times and the fastest counts (other load only slows).
Prints a table and a final JSON line (``islands.output.benchmarking``; ``ratio``: first report,
default over baseline, at the largest island count).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from islands.output import benchmarking as bench

ROOT = Path(__file__).resolve().parents[1]
MODES = {"grouped (default)": [], "one process per island": ["--islands-per-process", "1"]}


def measure(env: str, n: int, extra: list[str]) -> dict:
    out = Path(tempfile.mkdtemp(prefix="startup-")) / "run"
    cmd = [sys.executable, "-m", "islands.launch", "--islands", str(n), "--env", env,
           "--generations", "2", "--target", "none", "--test-episodes", "5",
           "--out", str(out), *extra]
    env_vars = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    t = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env_vars, capture_output=True, text=True,
                          timeout=600)
    command = time.monotonic() - t
    if proc.returncode != 0:
        raise SystemExit(f"launcher failed ({proc.returncode}): {proc.stderr[-1500:]}")
    import pandas as pd

    summary = json.loads((out / "summary.json").read_text())
    rows = pd.read_parquet(out / "metrics.parquet")
    warnings = [ln for ln in proc.stderr.splitlines()
                if "WARNING" in ln or "worker processes" in ln]
    return {"startup_s": summary["startup_s"],
            "first_report_s": summary["startup_s"] + float(rows["wall_s"].min()),
            "command_s": command, "ray_warnings": len(warnings)}


def main(argv: list[str] | None = None) -> None:
    p = bench.parser(__doc__)
    p.add_argument("--islands", default="1,4,16", help="island counts, comma-separated")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--env", default="CartPole-v1")
    args = p.parse_args(argv)
    counts = [int(x) for x in args.islands.split(",")]
    best: dict[tuple[int, str], dict] = {}
    for _ in range(args.repeats):
        for n in counts:
            for mode, extra in MODES.items():
                r = measure(args.env, n, extra)
                print(f"  islands {n:3d}  {mode:24s} first report {r['first_report_s']:6.1f} s",
                      file=sys.stderr, flush=True)
                key = (n, mode)
                if key not in best or r["first_report_s"] < best[key]["first_report_s"]:
                    best[key] = r
    print(f"\n{'islands':>7} | {'processes':24} | {'first report s':>14} | {'startup_s':>9} "
          f"| {'command s':>9} | {'ray warnings':>12}")
    print("-" * 92)
    for (n, mode), r in best.items():
        print(f"{n:7d} | {mode:24} | {r['first_report_s']:14.1f} | {r['startup_s']:9.1f} "
              f"| {r['command_s']:9.1f} | {r['ray_warnings']:12d}")
    base, new = "one process per island", "grouped (default)"
    startup = {
        str(n): {"first_report_s": round(best[(n, new)]["first_report_s"], 2),
                 "baseline_first_report_s": round(best[(n, base)]["first_report_s"], 2),
                 "ratio_vs_baseline": round(best[(n, new)]["first_report_s"]
                                            / best[(n, base)]["first_report_s"], 3),
                 "ray_warnings": best[(n, new)]["ray_warnings"]}
        for n in counts}
    bench.emit("startup", rows=[{"islands": n, "processes": mode, **r}
                                for (n, mode), r in best.items()],
               baseline=base, ratio=startup[str(max(counts))]["ratio_vs_baseline"],
               env=args.env, cpus=os.cpu_count(), startup=startup)


if __name__ == "__main__":
    main()
