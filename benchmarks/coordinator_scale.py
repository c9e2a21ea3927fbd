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
* ``raylet_cpu`` / ``gcs_cpu`` / ``dashboard_cpu`` / ``ray_other_cpu``: the same for Ray's
  own processes, which every call and report also goes through: the raylet (its object
  store, plasma, runs inside it: no column of its own), the GCS server, the dashboard and
  its agents (the head's dashboard is off here; the per-node agent is not), and the rest
  (log monitor, runtime-env agent); ``total_cpu`` sums every column;
* ``latency_p50_s`` / ``latency_p99_s``: from an island's emigration to the receiving
  island's call taking the batch (summary.json's ``migration.latency_s``), over the batches
  that arrived; ``dropped_share``: the batches a newer one replaced in the coordinator's
  mailbox before delivery, of all it posted (they have no latency);
* ``startup_s``: from creating the actors until every island answered;
* ``rss_mb``: resident memory of the driver, coordinator and island processes (peak sample).

``ratio`` columns compare each row with the first row of the same run. The last line is
JSON (``islands.output.benchmarking``): ``rows`` ``[{"islands", "reports_per_s", "coordinator_cpu",
"driver_cpu", "raylet_cpu", "gcs_cpu", "latency_p50_s", "latency_p99_s", "startup_s",
"rss_mb", ...}, ...]``; baseline the first row; ratio the last row's reports/s over it.

    python benchmarks/coordinator_scale.py                       # 16, 64, 256, 1024
    python benchmarks/coordinator_scale.py --islands 16,64 --seconds 10
"""

from __future__ import annotations

import os
import time

import psutil
import ray

from islands.config import from_dict, resolve
from islands.output import benchmarking as bench
from islands.output.summary import latency_summary
from islands.planning import plan_islands
from islands.runtime.archipelago import Archipelago


def scale_config(n: int, args):
    """A run of ``n`` synthetic islands reporting about once per ``args.period`` seconds."""
    return resolve(from_dict(dict(
        env=f"rastrigin:{args.dim}", env_kwargs={"wait_ms": 1000 * args.period},
        islands=n, strategy="openai-es", popsize=8, episodes=1, obs_norm=False, target=None,
        time_budget=args.seconds, generations=10**9, migration_interval=1, migrants=1,
        topology="ring", namespace=f"scale-{n}", dashboard=False, tensorboard=False,
        max_restarts=0)))


# Ray's own processes by the column their CPU goes to: a process name, or a part of its
# command line (agents retitle themselves ``ray::DashboardAgent``; the raylet holds the object
# store, plasma); a process none names (the dashboard's module processes) goes with its parent
SYSTEM = (("raylet", "raylet"), ("gcs", "gcs_server"), ("dashboard", "dashboard/dashboard.py"),
          ("dashboard", "ray::DashboardAgent"), ("dashboard", "dashboard/agent.py"),
          ("dashboard", "ray-dashboard-"), ("ray_other", "ray::RuntimeEnvAgent"),
          ("ray_other", "runtime_env/agent"), ("ray_other", "log_monitor.py"),
          ("ray_other", "autoscaler/_private/monitor.py"))
COLUMNS = ("driver", "coordinator", "islands", "raylet", "gcs", "dashboard", "ray_other")


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
        cpu = ray_system_cpu()
        self.samples.append({"t": now, "reports": self.reports, "rss_mb": rss_mb(),
                             "driver": _cpu(self.me), "coordinator": _cpu(self.coord),
                             "islands": sum(_cpu(p) for p in island_processes()), **cpu})

    def rates(self, warmup: float) -> dict:
        """Per-second rates between the first sample after ``warmup`` and the last."""
        t0 = self.samples[0]["t"] + warmup
        a = next((s for s in self.samples if s["t"] >= t0), self.samples[0])
        b = self.samples[-1]
        dt = max(b["t"] - a["t"], 1e-9)
        cpu = {f"{k}_cpu": (b[k] - a[k]) / dt for k in COLUMNS}
        return {"reports_per_s": (b["reports"] - a["reports"]) / dt, **cpu,
                "total_cpu": sum(cpu.values()), "measured_s": dt,
                "rss_mb": max(s["rss_mb"] for s in self.samples)}


def _cpu(p: psutil.Process) -> float:
    try:
        t = p.cpu_times()
    except psutil.Error:  # gone since it was listed
        return 0.0
    return t.user + t.system


def _ours() -> list[psutil.Process]:
    """This driver's descendants: the local Ray it started (raylet, GCS, agents, workers),
    not another Ray on the machine."""
    return psutil.Process().children(recursive=True)


def ray_system_cpu() -> dict[str, float]:
    """CPU seconds so far of Ray's own processes, per column of :data:`SYSTEM` (workers,
    ``ray::IslandActor`` and the like, are counted apart)."""
    found: dict[int, tuple[str | None, int, psutil.Process]] = {}
    for p in _ours():
        try:
            name, cmd, ppid = p.name(), " ".join(p.cmdline()), p.ppid()
        except psutil.Error:
            continue
        col = next((c for c, key in SYSTEM if name == key or key in cmd), None)
        worker = col is None and (cmd.startswith("ray::") or "default_worker.py" in cmd)
        found[p.pid] = ("worker" if worker else col, ppid, p)
    out = dict.fromkeys(("raylet", "gcs", "dashboard", "ray_other"), 0.0)
    for col, ppid, p in found.values():
        while col is None and ppid in found:  # a helper process: its parent's column
            col, ppid, _ = found[ppid]
        if col in out:
            out[col] += _cpu(p)
    return out


def island_processes() -> list[psutil.Process]:
    """The island host processes (Ray names their processes after the actor class)."""
    out = []
    for p in _ours():
        try:
            if " ".join(p.cmdline()).startswith("ray::IslandActor"):
                out.append(p)
        except psutil.Error:
            continue
    return out


def rss_mb() -> float:
    """Resident memory of this process and every Ray actor process of the run."""
    total = psutil.Process().memory_info().rss
    for p in _ours():
        try:
            if " ".join(p.cmdline()).startswith(("ray::IslandActor", "ray::CoordinatorActor",
                                                 "ray::TesterActor")):
                total += p.memory_info().rss
        except psutil.Error:
            continue
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
    lat = latency_summary(res.migration_latency_s, res.coordinator_stats)
    return {"islands": n, **sampler.rates(args.warmup), "offered_per_s": n / args.period,
            "latency_p50_s": lat["p50"], "latency_p99_s": lat["p99"],
            "migrations": lat["n"], "dropped": lat["dropped"],
            "dropped_share": lat["dropped_share"], "startup_s": startup,
            "processes": len(arch.hosts)}


def print_table(rows: list[dict]) -> None:
    base = rows[0]
    head = ("islands", "reports/s", "offered/s", "coord CPU", "driver CPU", "islands CPU",
            "raylet CPU", "GCS CPU", "dashboard CPU", "other Ray CPU", "total CPU",
            "lat p50 s", "lat p99 s", "dropped", "startup s", "RSS MB", "ratio reports",
            "ratio coord CPU")
    print(" | ".join(head))
    for r in rows:
        cpus = [f"{r[k + '_cpu']:.2f}" for k in ("coordinator", "driver", "islands",
                                                 "raylet", "gcs", "dashboard", "ray_other")]
        print(" | ".join([
            f"{r['islands']}", f"{r['reports_per_s']:.0f}", f"{r['offered_per_s']:.0f}",
            *cpus, f"{r['total_cpu']:.2f}",
            _f(r["latency_p50_s"]), _f(r["latency_p99_s"]), _f(r["dropped_share"], "{:.1%}"),
            f"{r['startup_s']:.1f}",
            f"{r['rss_mb']:.0f}", _f(_ratio(r["reports_per_s"], base["reports_per_s"]), "{:.1f}"),
            f"{r['coordinator_cpu'] / max(base['coordinator_cpu'], 1e-9):.1f}"]))


def _ratio(a: float, b: float) -> float | None:
    """``a / b``; None where the baseline row saw nothing (a machine too loaded to report)."""
    return a / b if b > 0 else None


def _f(x, fmt: str = "{:.2f}") -> str:
    return "-" if x is None else fmt.format(x)


def main(argv=None) -> dict:
    p = bench.parser(__doc__)
    p.add_argument("--islands", default="16,64,256,1024", help="island counts, comma list")
    bench.add_seconds(p, 40.0, "run time per row")
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
    return bench.emit("coordinator_scale", rows=rows,
                      baseline=f"{rows[0]['islands']} islands (the first row)",
                      ratio=_ratio(rows[-1]["reports_per_s"], rows[0]["reports_per_s"]),
                      period_s=args.period, seconds=args.seconds, cpus=args.cpus)


if __name__ == "__main__":
    main()
