"""The virtual runtime's own cost: the share of a virtual run's real time that is not its
evaluations, at 16 to 1,024 islands.

A virtual run computes every island call and every test for real; everything else (the run
loop, the event queue, the coordinator's reports, the metrics rows) is the simulator's own
cost, which the virtual-time issue caps at 10% of the run's real time at 1,024 islands.
Each row: N islands of LunarLander-v3 (population 8, one episode each, 2 calls per island)
on a virtual cluster of N / 16 nodes of 16 CPUs; a fixed calibration (no measurement per
run); the summary's ``compute_s`` (real seconds inside the islands' calls and the tests)
against the run loop's real seconds (``loop_s``: start-up and the outputs written after the
loop are not the simulator's). Prints a table
and the final JSON line; ``ratio`` is the overhead share at the largest N over the
smallest's (the baseline row, measured in the same run).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import yaml

from islands.output import benchmarking as bench

ENV = "LunarLander-v3"
S_PER_STEP = 1.6e-5  # this laptop's calibration for the row (docs/results/virtual-time.md)


def cluster_file(root: Path, nodes: int) -> str:
    doc = {"cluster_name": f"v{nodes}", "provider": {"type": "aws"}, "max_workers": nodes,
           "head_node_type": "head",
           "available_node_types": {
               "head": {"resources": {"CPU": 0}, "node_config": {}},
               "worker": {"resources": {"CPU": 16}, "node_config": {}, "max_workers": nodes}}}
    path = root / f"cluster-{nodes}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def row(n: int, root: Path) -> dict:
    from islands.api import execute, prepare

    cal = root / "calibration.json"
    cal.write_text(json.dumps({"env": ENV, "s_per_step": S_PER_STEP, "serial_fraction": 0.3}))
    cfg = prepare(env=ENV, islands=n, popsize=8, episodes=1, generations=2, target="none",
                  test_episodes=1, confirm_episodes=0, runtime="virtual",
                  cluster=cluster_file(root, max(1, n // 16)), calibration=str(cal),
                  out=str(root / f"run-{n}"), quiet=True, tensorboard=False,
                  checkpoint_interval=0, seed=1)
    s = execute(cfg, display=False)
    loop_s = s["loop_s"]
    return {"islands": n, "events": s["virtual_events"], "loop real s": round(loop_s, 2),
            "compute s": round(s["compute_s"], 2),
            "overhead share": (loop_s - s["compute_s"]) / loop_s if loop_s > 0 else None,
            "virtual s": round(s["wall_s"], 3)}


def main(argv: list[str] | None = None) -> None:
    p = bench.parser(__doc__)
    bench.add_quick(p, "16 and 64 islands only")
    args = p.parse_args(argv)
    sizes = (16, 64) if args.quick else (16, 64, 256, 1024)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            rows.append(row(n, Path(tmp)))
            r = rows[-1]
            print(f"{r['islands']:>6} islands {r['events']:>7} events  loop {r['loop real s']:>8}"
                  f" s  compute {r['compute s']:>8} s  overhead {r['overhead share']:.1%}",
                  flush=True)
    base, last = rows[0]["overhead share"], rows[-1]["overhead share"]
    bench.emit("virtual_overhead", rows, {"islands": sizes[0], "overhead share": base},
               last / base if base else None, overhead_share_at_max=last, cap=0.10)


if __name__ == "__main__":
    main()
