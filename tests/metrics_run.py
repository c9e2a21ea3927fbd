"""Helper of test_metrics.py, run in its own process: Ray must start with a short metrics
report interval (set before Ray starts) and a known metrics export port. Runs a small
archipelago, scrapes ``/metrics`` while it runs and stops it once a scrape holds every
metric of both islands (migrants taken in included), the status CLI's path has answered and
Prometheus holds both islands' series (no clock decides), then prints one JSON line: the
islands' samples, the coordinator's status table, and the monitoring files Ray wrote."""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import threading
import time
import urllib.request

SAMPLE = re.compile(r"^(ray_islands_\w+)\{(.*)\}\s+(\S+)$")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m:
            out.append({"name": m.group(1), "labels": dict(LABEL.findall(m.group(2))),
                        "value": float(m.group(3))})
    return out


PER_ISLAND = ("ray_islands_best_fitness", "ray_islands_generation",
              "ray_islands_evals_per_second", "ray_islands_env_steps_total",
              "ray_islands_immigrants_total", "ray_islands_generation_seconds_count")


def complete(samples: list[dict]) -> bool:
    """Whether a scrape shows what test_metrics checks: each per-island metric for both
    islands, migrants taken in by both, and the coordinator's global best and live count."""
    tags: dict[str, set] = {}
    for s in samples:
        tags.setdefault(s["name"], set()).add(s["labels"].get("island"))
    both = {"island-00", "island-01"}
    immigrants = [s["value"] for s in samples if s["name"] == "ray_islands_immigrants_total"]
    return (all(tags.get(n, set()) >= both for n in PER_ISLAND)
            and {"ray_islands_global_best", "ray_islands_live"} <= set(tags)
            and len(immigrants) == 2 and min(immigrants) > 0)


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Prometheus:
    """A real Prometheus (Debian's package) on a free loopback port, scraping this Ray
    session through the config Ray wrote for it (file-based discovery of every node's
    metrics endpoint), every second instead of Ray's 10 s."""

    def __init__(self, proc, port: int) -> None:
        self.proc, self.port = proc, port

    @classmethod
    def start(cls, session: str):
        import shutil
        import subprocess
        import tempfile

        binary = shutil.which("prometheus")
        if binary is None:
            return None
        text = open(os.path.join(session, "metrics", "prometheus", "prometheus.yml")).read()
        text = re.sub(r"(scrape_interval|evaluation_interval): \S+", r"\1: 1s", text)
        work = tempfile.mkdtemp(prefix="prometheus-")
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write(text)
        port = free_port()
        proc = subprocess.Popen(
            [binary, f"--config.file={config}", f"--web.listen-address=127.0.0.1:{port}",
             f"--storage.tsdb.path={os.path.join(work, 'data')}"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "log"), "w"))
        return cls(proc, port)

    def api(self, path: str) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/{path}",
                                    timeout=5) as r:
            return json.loads(r.read())

    def has_islands(self, n: int) -> bool:
        """One query: whether every one of ``n`` islands has a best-fitness series yet."""
        try:
            res = self.api("query?query=ray_islands_best_fitness")["data"]["result"]
        except Exception:  # noqa: BLE001 - not up yet
            return False
        return len({r["metric"].get("island", "") for r in res}) >= n

    def query_islands(self, n: int, timeout: float = 40.0) -> dict:
        """PromQL ``ray_islands_best_fitness`` until every island has a series, and the
        metric names Prometheus holds."""
        deadline, islands, err = time.monotonic() + timeout, [], ""
        while time.monotonic() < deadline:
            try:
                res = self.api("query?query=ray_islands_best_fitness")["data"]["result"]
                islands = sorted({r["metric"].get("island", "") for r in res})
                if len(islands) >= n:
                    break
            except Exception as e:  # noqa: BLE001 - not up yet; reported below
                err = str(e)
            time.sleep(1.0)
        names = self.api("label/__name__/values")["data"] if islands else []
        return {"best_fitness_islands": islands, "names": names, "error": err,
                "exited": self.proc.poll()}

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def main() -> int:
    os.environ["RAY_metrics_report_interval_ms"] = "2000"
    import ray

    from islands.config import from_dict, resolve
    from islands.planning import plan_islands
    from islands.runtime.archipelago import Archipelago
    from islands.runtime.cluster import fetch_status
    from islands.status import format_status

    port = free_port()
    kw = dict(address="local", num_cpus=2, include_dashboard=True, _metrics_export_port=port,
              object_store_memory=150 * 1024**2, namespace="metrics", log_to_driver=False)
    try:
        ray.init(**kw)
    except Exception as e:  # noqa: BLE001
        # Seen once in CI on a loaded 2-core machine when the session's Ray still ran
        # beside this one (own_ray tests now run first, alone): "Failed to get node info
        # ... Deadline Exceeded" at start-up. Once more.
        print(f"ray.init failed ({type(e).__name__}); retrying once", file=sys.stderr)
        ray.shutdown()
        time.sleep(5)
        ray.init(**kw)
    arch = None
    try:
        cfg = resolve(from_dict({
            "islands": 2, "env": "CartPole-v1", "backend": "gymnasium", "strategy": "cmaes,ga",
            "popsize": 8, "episodes": 1, "max_episode_steps": 50, "generations": 100000,
            "time_budget": 180, "migration_interval": 2, "target": "none",  # a hang guard
            "cpus_per_island": 0.5, "namespace": "metrics", "seed": 2}))
        arch = Archipelago(cfg, plan_islands(cfg, [2.0]))
        arch.start()
        arch.wait_ready()
        scraped: list[str] = []
        status: list[dict] = []
        stop = threading.Event()
        session = ray._private.worker.global_worker.node.get_session_dir_path()
        prom = Prometheus.start(session)  # None where the prometheus binary is missing

        def scrape() -> None:
            while not stop.wait(1.0):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                                timeout=5) as r:
                        text = r.read().decode()
                    if "ray_islands_" in text:
                        scraped.append(text)
                    if not status:  # the CLI's path, against the live coordinator
                        status.append(fetch_status(None, "metrics"))
                    if (scraped and status and complete(parse(scraped[-1]))
                            and (prom is None or prom.has_islands(2))):
                        arch.request_stop("scraped")  # the outcome is in: end the run
                except Exception as e:  # noqa: BLE001 - reported, the test decides
                    print(f"scrape: {e}", file=sys.stderr)

        th = threading.Thread(target=scrape, daemon=True)
        th.start()
        try:
            stop_reason = arch.run().stop_reason
            stop.set()
            th.join()
            queried = prom.query_islands(n=2) if prom else {"missing": True}
        finally:
            if prom:
                prom.stop()
        files = []
        for root, _, names in os.walk(os.path.join(session, "metrics")):
            files += [os.path.relpath(os.path.join(root, n), session) for n in names]
        print(json.dumps({
            "port": port, "scrapes": len(scraped), "stop_reason": stop_reason,
            "samples": parse(scraped[-1]) if scraped else [],
            "status": status[0] if status else None,
            "table": format_status(status[0]) if status else None,
            "files": sorted(files), "prometheus": queried,
        }, default=float))
        return 0
    finally:
        if arch is not None:
            arch.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
