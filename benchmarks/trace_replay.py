"""Is a real run the virtual runtime's algorithm on another schedule? (issue 60,
virtual-time.md stage 13)

A real run's calls end when Ray's processes happen to finish them; a virtual run's when the
cost model says. Everything else is the same code: the island cores, the coordinator core,
the loop, the tester. This script replays a kept real run on the virtual runtime with the
real run's own schedule: each island call completes at the real run's recorded time for
that (island, generation) (its metrics row's ``wall_s``), each test at the real test's end;
only where the replay goes past what the real run recorded does the cost model take over.
Were the two runtimes' mechanics the same, the replay would follow the real run generation
for generation (training episodes are seeded by island and generation, so evaluations are
reproducible); the first (island, generation) where they part says where they differ.

It prints, per seed: the rows the replay matched before the first difference, where that
was, and the training episodes to solve of the real run, the replay and (given a kept
virtual arm of the same seeds) the plain virtual run; then a final JSON line.

    python benchmarks/trace_replay.py docs/results/virtual-time/calls/hopper2-6060-6069-real \\
        --seeds 6060 6061 --virtual docs/results/virtual-time/calls/hopper2-6060-6069-virtual \\
        --calibration docs/results/virtual-time/calls/islands-2-b
"""

from __future__ import annotations

import contextlib
import heapq
import json
import math
import tempfile
from pathlib import Path

import pandas as pd
import yaml

import islands
from islands.output import benchmarking as bench
from islands.runtime import virtual as V
from islands.runtime.calibration_runs import run_dirs

TIMING = {"wall_s", "call_s", "evals_per_s", "steps_per_s", "peak_rss_mb", "island_wall_s"}
KEY = ["island", "generation"]


def trials(exp: Path) -> dict[int, Path]:
    """A kept experiment's trial directories (or one run directory) by seed."""
    return {int(yaml.safe_load((r / "config.yaml").read_text())["seed"]): r
            for r in run_dirs(exp)}


def _move(rt: V.VirtualArchipelago, ev: V.Event, at: float) -> None:
    """Event ``ev`` now completes at ``at`` (never before the clock)."""
    ev.at = max(float(at), rt.now)
    heapq.heapify(rt.queue)


@contextlib.contextmanager
def follow(schedule: dict[tuple[int, int], float], tests: list[dict]):
    """Within: VirtualArchipelago ends each island call at ``schedule``'s time for the
    island's generation after it, and the k-th test of a candidate at the real run's test
    of the same candidate; restored after."""
    cls = V.VirtualArchipelago
    evolve, test = cls.evolve, cls.test
    matched = {"calls": 0, "tests": 0}

    def evolve_on_schedule(self, host, calls):
        ev = evolve(self, host, calls)
        times = [schedule.get((c.island, self.cores[c.island].generation)) for c in calls]
        if ev.error is None and times and all(t is not None for t in times):
            _move(self, ev, max(times))
            matched["calls"] += 1
        return ev

    def test_on_schedule(self, kind, cand, n, stop_early=True):
        ev = test(self, kind, cand, n, stop_early)
        for t in tests:
            if not t.get("used") and (t["island"], t["generation"]) == (
                    cand.island, cand.generation) and "wall_s" in t:
                t["used"] = True
                _move(self, ev, t["wall_s"])
                matched["tests"] += 1
                break
        return ev

    cls.evolve, cls.test = evolve_on_schedule, test_on_schedule
    try:
        yield matched
    finally:
        cls.evolve, cls.test = evolve, test


def first_difference(real: pd.DataFrame, replay: pd.DataFrame) -> tuple[int, dict | None]:
    """Rows (by island and generation) equal in every non-timing column before the first
    that differs, and that row's real and replayed fitness; None where none differs."""
    cols = [c for c in real.columns if c in replay.columns and c not in TIMING
            and c not in KEY and not c.startswith("total_")]
    a = real.drop_duplicates(KEY).set_index(KEY)[cols]
    b = replay.drop_duplicates(KEY).set_index(KEY)[cols]
    both = a.index.intersection(b.index)
    a, b = a.loc[both], b.loc[both]
    order = real.drop_duplicates(KEY).set_index(KEY).loc[both, "wall_s"].sort_values().index
    for n, key in enumerate(order):
        ra, rb = a.loc[key], b.loc[key]
        bad = [c for c in cols if not _same(ra[c], rb[c])]
        if bad:
            return n, {"island": int(key[0]), "generation": int(key[1]), "columns": bad,
                       "real_fitness_max": float(ra["fitness_max"]),
                       "replay_fitness_max": float(rb["fitness_max"])}
    return len(order), None


def _same(x, y) -> bool:
    if isinstance(x, float) and isinstance(y, float):
        return (math.isnan(x) and math.isnan(y)) or x == y
    return bool(x == y)


def replay(trial: Path, args, out: Path) -> tuple[pd.DataFrame, dict, dict]:
    real = pd.read_parquet(trial / "metrics.parquet")
    schedule = {(int(r.island), int(r.generation)): float(r.wall_s)
                for r in real.itertuples()}
    summary = json.loads((trial / "summary.json").read_text())
    tests = [dict(t) for t in summary.get("tests", [])]
    with follow(schedule, tests) as matched:
        r = islands.run(str(trial / "config.yaml"), runtime="virtual", cluster=args.cluster,
                        calibration=args.calibration, out=str(out), quiet=True,
                        tensorboard=False, dashboard=False, checkpoint_uri=None,
                        resume=None)
    return pd.read_parquet(out / "metrics.parquet"), r.summary, dict(matched)


def main(argv: list[str] | None = None) -> None:
    ap = bench.parser(__doc__)
    ap.add_argument("real", type=Path, help="a kept real arm (an experiment directory) "
                    "or one real run's directory")
    ap.add_argument("--seeds", type=int, nargs="+", help="default: every seed it ran")
    ap.add_argument("--virtual", type=Path, help="a kept virtual arm of the same seeds")
    ap.add_argument("--cluster", default="cluster/laptop.yaml")
    ap.add_argument("--calibration", default="docs/results/virtual-time/calls/islands-2-b")
    ap.add_argument("--keep", type=Path, help="keep each replay's run directory here "
                    "(SEED/); default: a temporary one")
    args = ap.parse_args(argv)
    real_trials = trials(args.real)
    virtual = trials(args.virtual) if args.virtual else {}
    rows = []
    for seed in args.seeds or sorted(real_trials):
        trial = real_trials[seed]
        with tempfile.TemporaryDirectory() as tmp:
            where = (args.keep or Path(tmp)) / str(seed)
            rep, s, matched = replay(trial, args, where)
        real = pd.read_parquet(trial / "metrics.parquet")
        same, diff = first_difference(real, rep)
        rs = json.loads((trial / "summary.json").read_text())
        v = virtual.get(seed)
        vs = json.loads((v / "summary.json").read_text()) if v else {}
        rows.append({"seed": seed, "rows_equal": same, "rows_real": len(real),
                     "first_diff": None if diff is None else
                     f"island {diff['island']} gen {diff['generation']}",
                     "diff_columns": None if diff is None else ",".join(diff["columns"][:4]),
                     "real_episodes": rs.get("episodes_to_solve"),
                     "replay_episodes": s.get("episodes_to_solve"),
                     "virtual_episodes": vs.get("episodes_to_solve"),
                     "calls_on_schedule": matched["calls"], "tests_on_schedule":
                     matched["tests"]})
        print(pd.DataFrame(rows[-1:]).to_string(index=False), flush=True)
    print(pd.DataFrame(rows).to_string(index=False))
    bench.emit("trace_replay", rows, baseline="the real run", ratio=None,
               real=str(args.real), calibration=args.calibration)


if __name__ == "__main__":
    main()
