"""Time to solve: one launcher run per seed, and how long each took to reach the target.

    python benchmarks/time_to_solve.py --env LunarLander-v3 --seeds 0-9 [--islands 2] \
        [--variant NAME=FLAGS ...] [-- any other launcher flags]

Each seed is a separate ``python -m islands.launch`` process (its own embedded Ray, run one
after another so they never share the CPUs). Per seed: solved, run wall (the run's own
``wall_s``: evolution and tests, without Ray's start-up), command wall, wall / evaluations /
episodes / env steps at the moment the solution was found (``*_to_solve`` in
``summary.json``), the selecting test's mean and its confirmation's (a run is solved when
both reach the target), and with ``--audit-episodes`` an independent re-test of the saved
solution (``islands.evaluate`` on its default seed, a range no run uses). Medians are
Kaplan-Meier medians with 95% intervals: an unsolved run is censored at its own totals, and a
solved run that left no count (an older summary) counts at its totals, an upper bound.
Table, then a final JSON line (``islands.output.benchmarking``) with the medians, the worst run and
the audit's pass rate. With ``--variant`` (repeated), every seed runs each variant in turn,
and the JSON line has one summary per variant (``rows``, ``variants``) and its median run
wall as a ratio to the first variant's (the baseline; ``ratio``: the second variant's).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from islands.candidates import stopped_early
from islands.output import benchmarking as bench

ROOT = Path(__file__).resolve().parents[1]


def parse_seeds(text: str) -> list[int]:
    """``0-9``, ``1,4,7`` or a mix (``0-3,8``)."""
    seeds: list[int] = []
    for part in [p for p in text.split(",") if p.strip()]:
        a, sep, b = part.partition("-")
        seeds += list(range(int(a), int(b) + 1)) if sep else [int(a)]
    return seeds


# Beyond the run's --time-budget: Ray's start-up and the final 100-episode test (MuJoCo's
# 1,000-step episodes take a minute on one core).
GRACE_S = 300.0


def run_seed(env: str, islands: int, seed: int, extra: list[str], out: Path,
             timeout: float) -> dict:
    """One launcher run; ``timeout`` is its --time-budget (unless ``extra`` sets one), so a
    run that does not solve ends as an unsolved run instead of being killed."""
    budget = [] if "--time-budget" in extra else ["--time-budget", str(timeout)]
    cmd = [sys.executable, "-m", "islands.launch", "--env", env, "--islands", str(islands),
           "--seed", str(seed), "--quiet", "--out", str(out), *budget, *extra]
    for attempt in (1, 2):  # a run that failed to start (Ray's start-up on a loaded
        # machine) is retried once in a fresh directory; a second failure ends the benchmark
        t = time.monotonic()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                              timeout=timeout + GRACE_S,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        wall = time.monotonic() - t
        if proc.returncode == 0:
            break
        message = (f"seed {seed}: launcher exited {proc.returncode}: "
                   f"{proc.stderr.strip().splitlines()[-1:]}")
        if attempt == 2:
            raise SystemExit(message)
        print(message + "; retrying", file=sys.stderr, flush=True)
        shutil.rmtree(out, ignore_errors=True)
    s = json.loads((out / "summary.json").read_text())
    return {"seed": seed, "solved": bool(s["solved"]), "target": s.get("target"),
            "run_wall_s": s["wall_s"],
            "command_wall_s": wall, "wall_to_solve": s.get("wall_to_solve"),
            "evals_to_solve": s.get("evals_to_solve"),
            "episodes_to_solve": s.get("episodes_to_solve"),
            "env_steps_to_solve": s.get("env_steps_to_solve"), "test_mean": s["test_mean"],
            "confirmation_mean": s.get("confirmation_mean"),
            "tests": [{**{k: t.get(k) for k in ("role", "kind", "mean", "episodes", "passed",
                                                "found_at", "wall_s")},
                       "stopped_early": stopped_early(t)} for t in s.get("tests", [])],
            "total_evals": s["total_evals"], "total_episodes": s.get("total_episodes"),
            "stop_reason": s["stop_reason"]}


def audit(out: Path, episodes: int) -> float | None:
    """Mean return of the run's saved solution over ``episodes`` fresh episodes
    (``islands.evaluate``); None when the run saved none."""
    if episodes <= 0 or not (out / "solution.npz").exists():
        return None
    proc = subprocess.run([sys.executable, "-m", "islands.evaluate", str(out), "--episodes",
                           str(episodes)], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    if proc.returncode != 0:
        raise SystemExit(f"{out}: islands.evaluate exited {proc.returncode}")
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["mean"])


def _fmt(x, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def km_median(rows: list[dict], key: str, total: str) -> list[float | None]:
    """Kaplan-Meier median of ``key`` (``*_to_solve``) and its 95% interval: an unsolved run
    censored at ``total`` (its own count at the end), a solved run without ``key`` counted
    at ``total``; [median, low, high], None for not reached."""
    from islands.experiment.stats import kaplan_meier

    times = [r[key] if r["solved"] and r.get(key) is not None else r[total] for r in rows]
    km = kaplan_meier(times, [r["solved"] for r in rows])
    return [v if math.isfinite(v) else None for v in (km.median, km.low, km.high)]


def summarize(rows: list[dict]) -> dict:
    """Kaplan-Meier medians to solve, worst run wall, solved count and the audit's pass
    rate over ``rows``."""
    walls = [r["run_wall_s"] for r in rows]
    solved = [r for r in rows if r["solved"]]
    audited = [r for r in solved if r.get("audit_mean") is not None]
    return {
        "seeds": [r["seed"] for r in rows], "solved": len(solved), "runs": len(rows),
        "median_run_wall_s": statistics.median(walls), "worst_run_wall_s": max(walls),
        "km_wall_to_solve": km_median(rows, "wall_to_solve", "run_wall_s"),
        "km_episodes_to_solve": km_median(rows, "episodes_to_solve", "total_episodes"),
        "km_evals_to_solve": km_median(rows, "evals_to_solve", "total_evals"),
        # solved runs whose saved solution also reached the target on the audit
        "audited": len(audited),
        "audit_passed": sum(r["audit_mean"] >= r["target"] for r in audited),
        "per_seed": rows,
    }


def _interval(m: list[float | None], spec: str = ".1f") -> str:
    def f(x):
        return "not reached" if x is None else format(x, spec)
    return f"{f(m[0])} [{f(m[1])}, {f(m[2])}]"


def parse_variant(text: str) -> tuple[str, list[str]]:
    """``NAME=FLAGS`` (``sep="--strategy sep-cmaes"``) -> (NAME, [flags])."""
    name, sep, flags = text.partition("=")
    if not sep or not name:
        raise SystemExit(f"--variant: expected NAME=FLAGS, got {text!r}")
    return name, flags.split()


def main(argv: list[str] | None = None) -> int:
    p = bench.parser(__doc__, epilog="Arguments after -- go to the launcher unchanged.")
    p.add_argument("--env", default="LunarLander-v3")
    p.add_argument("--seeds", default="0-9", help="e.g. 0-9 or 1,4,7 (default: 0-9)")
    p.add_argument("--islands", type=int, default=2)
    bench.add_seconds(p, 3600, "each run's --time-budget, unless flags after -- set one",
                      old=("--timeout",))
    p.add_argument("--variant", action="append", metavar="NAME=FLAGS", default=[],
                   help="compare launcher variants, run in turn on every seed (the first is "
                   "the baseline of the ratios), e.g. --variant row= --variant "
                   "'sep=--strategy sep-cmaes'; flags after -- go to every variant")
    p.add_argument("--audit-episodes", type=int, default=100,
                   help="re-test each saved solution on this many fresh episodes with "
                   "islands.evaluate (0: no audit; default: 100)")
    bench.add_out(p, None, "keep each seed's run directory as DIR/s<seed> (default: a "
                  "temporary directory, removed at the end)", old=("--keep",))
    args, extra = p.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    variants = [parse_variant(v) for v in args.variant] or [("", [])]
    rows: dict[str, list[dict]] = {name: [] for name, _ in variants}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(args.out) if args.out else Path(tmp)
        for seed in parse_seeds(args.seeds):
            for name, flags in variants:  # interleaved: a noisy spell hits every variant
                out = base / f"{name + '-' if name else ''}s{seed}"
                r = run_seed(args.env, args.islands, seed, [*flags, *extra], out, args.seconds)
                r["audit_mean"] = audit(out, args.audit_episodes)
                rows[name].append(r)
                print(f"{name + '  ' if name else ''}seed {seed:>3}  solved "
                      f"{str(r['solved']):>5}  run wall {r['run_wall_s']:7.1f} s  to solve "
                      f"{_fmt(r['wall_to_solve']):>7} s  evals "
                      f"{_fmt(r['evals_to_solve'], 'd'):>8}  episodes "
                      f"{_fmt(r['episodes_to_solve'], 'd'):>8}  test {_fmt(r['test_mean'])}  "
                      f"confirmation {_fmt(r['confirmation_mean'])}  audit "
                      f"{_fmt(r['audit_mean'])}",
                      flush=True)
    sums = {name: summarize(r) for name, r in rows.items()}
    for name, s in sums.items():
        print(f"{name + ': ' if name else ''}solved {s['solved']}/{s['runs']}; wall to solve "
              f"(Kaplan-Meier) {_interval(s['km_wall_to_solve'])} s, episodes "
              f"{_interval(s['km_episodes_to_solve'], ',.0f')}; worst run "
              f"{s['worst_run_wall_s']:.1f} s; audit passed {s['audit_passed']}/{s['audited']}")
    out = {"env": args.env, "islands": args.islands, "launcher_flags": extra}
    rows = [{"variant": name, **{k: v for k, v in s.items() if k != "per_seed"}}
            for name, s in sums.items()]
    baseline = ratio = None
    if len(variants) == 1 and not variants[0][0]:
        out.update(sums[""])
    else:
        first = sums[variants[0][0]]
        out["variants"] = {name: {"flags": flags, **sums[name],
                                  "median_wall_ratio": sums[name]["median_run_wall_s"]
                                  / first["median_run_wall_s"]} for name, flags in variants}
        for r in rows:
            r["median_wall_ratio"] = out["variants"][r["variant"]]["median_wall_ratio"]
        baseline = variants[0][0]
        ratio = rows[1]["median_wall_ratio"] if len(rows) > 1 else None
    bench.emit("time_to_solve", rows=rows, baseline=baseline, ratio=ratio, **out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
