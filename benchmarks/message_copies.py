"""Does the virtual runtime share objects between island cores, the coordinator and the
tester that Ray would copy? (issue 60, virtual-time.md stage 11)

On Ray every message crosses a process boundary, so whatever a sender changes after sending
cannot reach the receiver. The virtual runtime passes the same Python objects. This script
runs one virtual run twice: once as it is, once with every message copied (pickled and
unpickled, as Ray serializes it): the calls' immigrants and statistics, the islands'
results, the coordinator's replies and the tester's candidates. A virtual run replays bit
for bit, so any difference between the two trajectories is sharing. It prints the columns
that differ (none expected) and a final JSON line.

    python benchmarks/message_copies.py --env Hopper-v4 --islands 2 --seed 6055 \\
        --max-episodes 9000 --calibration docs/results/virtual-time/calls/islands-2-b
"""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
import tempfile
from pathlib import Path

import pandas as pd

import islands
from islands.output import benchmarking as bench
from islands.runtime import virtual as V

# the real seconds of a call and the process's memory differ between any two runs
TIMING = {"wall_s", "call_s", "evals_per_s", "steps_per_s", "peak_rss_mb"}


def copied(x):
    return pickle.loads(pickle.dumps(x))


@contextlib.contextmanager
def copy_messages():
    """Within: VirtualArchipelago copies every message, as Ray does; restored after."""
    cls = V.VirtualArchipelago
    evolve, test, report = cls.evolve, cls.test, cls.report

    def evolve_copied(self, host, calls):
        calls = [dataclasses.replace(c, immigrants=copied(c.immigrants),
                                     obs_stats=copied(c.obs_stats)) for c in calls]
        ev = evolve(self, host, calls)
        if ev.value is not None:
            ev.value = copied(ev.value)
        return ev

    def report_copied(self, ids, batch):
        ev = report(self, ids, batch)
        work = ev.work
        ev.work = lambda: copied(work())
        return ev

    def test_copied(self, kind, cand, n, stop_early=True):
        return test(self, kind, copied(cand), n, stop_early)

    cls.evolve, cls.report, cls.test = evolve_copied, report_copied, test_copied
    try:
        yield
    finally:
        cls.evolve, cls.report, cls.test = evolve, report, test


def one_run(args, out: Path) -> tuple[pd.DataFrame, dict]:
    r = islands.run(env=args.env, islands=args.islands, seed=args.seed,
                    max_episodes=args.max_episodes, runtime="virtual", cluster=args.cluster,
                    calibration=args.calibration, out=str(out), quiet=True,
                    tensorboard=False, dashboard=False)
    return pd.read_parquet(out / "metrics.parquet"), r.summary


def main(argv: list[str] | None = None) -> None:
    ap = bench.parser(__doc__)
    ap.add_argument("--env", default="Hopper-v4")
    ap.add_argument("--islands", type=int, default=2)
    ap.add_argument("--seed", type=int, default=6055)
    ap.add_argument("--max-episodes", type=int, default=9000)
    ap.add_argument("--cluster", default="cluster/laptop.yaml")
    ap.add_argument("--calibration", default="docs/results/virtual-time/calls/islands-2-b")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        shared, s0 = one_run(args, Path(tmp) / "shared")
        with copy_messages():
            copies, s1 = one_run(args, Path(tmp) / "copied")
    cols = [c for c in shared.columns if c not in TIMING]
    differ = [c for c in cols if len(shared) != len(copies)
              or not shared[c].equals(copies[c])]
    tests_equal = [t["mean"] for t in s0["tests"]] == [t["mean"] for t in s1["tests"]]
    rows = [{"messages": name, "rows": len(m), "episodes": s["total_episodes"],
             "best_fitness": s["best_fitness"], "tests": len(s["tests"])}
            for name, m, s in (("shared", shared, s0), ("copied", copies, s1))]
    print(pd.DataFrame(rows).to_string(index=False))
    print(f"columns that differ: {differ or 'none'}; test results equal: {tests_equal}")
    bench.emit("message_copies", rows, baseline="the run with shared messages", ratio=None,
               differ=differ, tests_equal=tests_equal, env=args.env, seed=args.seed,
               islands=args.islands)


if __name__ == "__main__":
    main()
