"""Helper of test_metrics.py, run in its own process: Ray must start with a short metrics
report interval (set before Ray starts) and a known metrics export port. Runs a small
archipelago for a few seconds, scrapes ``/metrics`` while it runs, and prints one JSON line:
the islands' samples, the coordinator's status table, and the monitoring files Ray wrote."""

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


def main() -> int:
    os.environ["RAY_metrics_report_interval_ms"] = "2000"
    import ray

    from islands.config import from_dict, resolve
    from islands.planning import plan_islands
    from islands.runtime.archipelago import Archipelago
    from islands.runtime.cluster import fetch_status
    from islands.status import format_status

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    kw = dict(address="local", num_cpus=2, include_dashboard=True, _metrics_export_port=port,
              object_store_memory=150 * 1024**2, namespace="metrics", log_to_driver=False)
    try:
        ray.init(**kw)
    except Exception as e:  # noqa: BLE001
        # Seen once in CI on a loaded 2-core machine (the session's Ray runs beside this
        # one): "Failed to get node info ... Deadline Exceeded" at start-up. Once more.
        print(f"ray.init failed ({type(e).__name__}); retrying once", file=sys.stderr)
        ray.shutdown()
        time.sleep(5)
        ray.init(**kw)
    arch = None
    try:
        cfg = resolve(from_dict({
            "islands": 2, "env": "CartPole-v1", "backend": "gymnasium", "strategy": "cmaes,ga",
            "popsize": 8, "episodes": 1, "max_episode_steps": 50, "generations": 100000,
            "time_budget": 12, "migration_interval": 2, "target": "none",
            "cpus_per_island": 0.5, "namespace": "metrics", "seed": 2}))
        arch = Archipelago(cfg, plan_islands(cfg, [2.0]))
        arch.start()
        arch.wait_ready()
        scraped: list[str] = []
        status: list[dict] = []
        stop = threading.Event()

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
                except Exception as e:  # noqa: BLE001 - reported, the test decides
                    print(f"scrape: {e}", file=sys.stderr)

        th = threading.Thread(target=scrape, daemon=True)
        th.start()
        arch.run()
        stop.set()
        th.join()
        session = ray._private.worker.global_worker.node.get_session_dir_path()
        files = []
        for root, _, names in os.walk(os.path.join(session, "metrics")):
            files += [os.path.relpath(os.path.join(root, n), session) for n in names]
        print(json.dumps({
            "port": port, "scrapes": len(scraped),
            "samples": parse(scraped[-1]) if scraped else [],
            "status": status[0] if status else None,
            "table": format_status(status[0]) if status else None,
            "files": sorted(files),
        }, default=float))
        return 0
    finally:
        if arch is not None:
            arch.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
