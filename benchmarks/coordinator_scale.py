"""Where one coordinator and one driver break: 16 to 1,024 synthetic islands on the local Ray.

Each row runs an archipelago of ``n`` islands on ``rastrigin:D`` (envs/synthetic.py) whose
evaluation waits ``--period`` seconds without using a CPU, so every island reports about
once per period however many there are, and what is measured is the run's machinery:
islands share worker processes (one per CPU, calls served side by side), one coordinator
actor takes every report, one driver loop (this process) dispatches them.

Per row, over the run after ``--warmup`` seconds (start-up excluded):

* ``reports_per_s``: island reports the driver handled per second (``offered_per_s``: n /
  period, what the islands would send if nothing queued);
* ``coordinator_cpu`` / ``driver_cpu`` / ``islands_cpu``: CPU seconds per second of the
  coordinator's process, this one and the island processes together (fractions of a core);
* ``latency_p50_s`` / ``latency_p99_s``: from an island's emigration to the receiving
  island's call taking the batch (summary.json's ``migration.latency_s``);
* ``startup_s``: from creating the actors until every island answered;
* ``rss_mb``: resident memory of the driver, coordinator and island processes (peak sample).

``ratio`` columns compare each row with the 16-island row of the same run. The last line is
JSON: ``{"rows": [{"islands", "reports_per_s", "coordinator_cpu", "driver_cpu",
"latency_p50_s", "latency_p99_s", "startup_s", "rss_mb", ...}, ...]}``.

    python benchmarks/coordinator_scale.py                       # 16, 64, 256, 1024
    python benchmarks/coordinator_scale.py --islands 16,64 --seconds 10
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import psutil  # noqa: E402
import ray  # noqa: E402

from islands.config import from_dict, resolve  # noqa: E402
from islands.output.summary import latency_summary  # noqa: E402
from islands.planning import plan_islands  # noqa: E402
from islands.runtime.archipelago import Archipelago  # noqa: E402


def scale_config(n: int, args):
    """A run of ``n`` synthetic islands reporting about once per ``args.period`` seconds."""
    return resolve(from_dict(dict(
        env=f"rastrigin:{args.dim}", env_kwargs={"wait_ms": 1000 * args.period},
        islands=n, strategy="openai-es", popsize=8, episodes=1, obs_norm=False, target=None,
        time_budget=args.seconds, generations=10**9, migration_interval=1, migrants=1,
        topology="ring", namespace=f"scale-{n}", dashboard=False, tensorboard=False,
        max_restarts=0)))


class Sampler:
    """CPU times and memory of the run's processes, sampled from the driver's callback."""

    def __init__(self, coordinator_pid: int) -> None:
        self.coord = psutil.Process(coordinator_pid)
        self.me = psutil.Process()
        self.samples: list[dict] = []
        self.reports = 0

    def __call__(self, row, status) -> None:
        self.reports += 1
        now = time.monotonic()
        if self.samples and now - self.samples[-1]["t"] < 1.0:
            return
        self.samples.append({"t": now, "reports": self.reports, "rss_mb": rss_mb(),
                             "driver": _cpu(self.me), "coordinator": _cpu(self.coord),
                             "islands": sum(_cpu(p) for p in island_processes())})

    def rates(self, warmup: float) -> dict:
        """Per-second rates between the first sample after ``warmup`` and the last."""
        t0 = self.samples[0]["t"] + warmup
        a = next((s for s in self.samples if s["t"] >= t0), self.samples[0])
        b = self.samples[-1]
        dt = max(b["t"] - a["t"], 1e-9)
        return {"reports_per_s": (b["reports"] - a["reports"]) / dt,
                "coordinator_cpu": (b["coordinator"] - a["coordinator"]) / dt,
                "driver_cpu": (b["driver"] - a["driver"]) / dt,
                "islands_cpu": (b["islands"] - a["islands"]) / dt, "measured_s": dt,
                "rss_mb": max(s["rss_mb"] for s in self.samples)}


def _cpu(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def island_processes() -> list[psutil.Process]:
    """The island host processes (Ray names their processes after the actor class)."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        if " ".join(p.info["cmdline"] or []).startswith("ray::IslandActor"):
            out.append(p)
    return out


def rss_mb() -> float:
    """Resident memory of this process and every Ray actor process of the run."""
    total = psutil.Process().memory_info().rss
    for p in psutil.process_iter(["name", "cmdline", "memory_info"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if cmd.startswith(("ray::IslandActor", "ray::CoordinatorActor", "ray::TesterActor")):
            total += p.info["memory_info"].rss
    return total / 2**20


def measure(n: int, args) -> dict:
    cfg = scale_config(n, args)
    arch = Archipelago(cfg, plan_islands(cfg, [float(args.cpus)]))
    t = time.monotonic()
    try:
        arch.start()
        arch.wait_ready(timeout=600)
        startup = time.monotonic() - t
        sampler = Sampler(ray.get(arch.coordinator.pid.remote()))
        res = arch.run(on_report=sampler)
    finally:
        arch.shutdown()
    lat = latency_summary(res.migration_latency_s)
    return {"islands": n, **sampler.rates(args.warmup), "offered_per_s": n / args.period,
            "latency_p50_s": lat["p50"], "latency_p99_s": lat["p99"],
            "migrations": lat["n"], "startup_s": startup, "processes": len(arch.hosts)}


def print_table(rows: list[dict]) -> None:
    base = rows[0]
    head = ("islands", "reports/s", "offered/s", "coord CPU", "driver CPU", "islands CPU",
            "lat p50 s",
            "lat p99 s", "startup s", "RSS MB", "ratio reports", "ratio coord CPU")
    print(" | ".join(head))
    for r in rows:
        print(" | ".join([
            f"{r['islands']}", f"{r['reports_per_s']:.0f}", f"{r['offered_per_s']:.0f}",
            f"{r['coordinator_cpu']:.2f}", f"{r['driver_cpu']:.2f}", f"{r['islands_cpu']:.2f}",
            _f(r["latency_p50_s"]), _f(r["latency_p99_s"]), f"{r['startup_s']:.1f}",
            f"{r['rss_mb']:.0f}", f"{r['reports_per_s'] / base['reports_per_s']:.1f}",
            f"{r['coordinator_cpu'] / max(base['coordinator_cpu'], 1e-9):.1f}"]))


def _f(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--islands", default="16,64,256,1024", help="island counts, comma list")
    p.add_argument("--seconds", type=float, default=40.0, help="run time per row")
    p.add_argument("--warmup", type=float, default=10.0, help="seconds left out of the rates")
    p.add_argument("--period", type=float, default=1.0, help="seconds between an island's "
                   "reports (its evaluation's wait)")
    p.add_argument("--dim", type=int, default=10, help="genome length")
    p.add_argument("--cpus", type=int, default=os.cpu_count() or 2, help="CPUs of the Ray")
    args = p.parse_args(argv)
    try:
        counts = [int(x) for x in args.islands.split(",")]
    except ValueError:
        p.error(f"--islands: expected a comma list of counts, got {args.islands!r}")
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    rows = []
    try:
        for n in counts:
            print(f"{n} islands ...", flush=True)
            rows.append(measure(n, args))
    finally:
        ray.shutdown()
    print_table(rows)
    out = {"rows": rows, "period_s": args.period, "seconds": args.seconds, "cpus": args.cpus}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
