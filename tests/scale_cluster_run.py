"""Helper of test_scale.py, run in its own process (its own Ray): 16 small virtual nodes of two
kinds on ``ray.cluster_utils.Cluster`` (8 fake-GPU nodes with ``gpu_node``, 8 CPU nodes with
``cpu_node``, a head with no CPUs for the coordinator and the driver), 16 synthetic islands
placed by node type (GPU islands even, CPU islands odd, on a ring: each island's immigrants
come from the other kind), and a quarter of the nodes removed once every island has
checkpointed; the run ends once every island has reported twice since and taken in
immigrants. No step waits on the clock: each waits for reports (``Watch``), at most
``HANG_S`` (a hang). Prints one JSON line: where each island ran (by its own account and by
Ray's state API), which nodes were removed, the rows' hall of fame against the
coordinator's, and what each island did after the loss.

One cluster checks placement, migration between node kinds and node loss at once: each
``Cluster`` head and its nodes cost the suite's Ray worker 30-50 s of start-up
(docs/results/suite-time.md), so these checks share this one instead of three of their own.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time

MEM = 80 * 1024**2  # object store per node
HANG_S = 150.0  # a wait for the run's reports that takes this long is a hang
BUDGET_S = 600.0  # the run's time budget: only a backstop, the script ends the run


class Watch:
    """The run's reports as the loop records them (``Archipelago.run``'s ``on_report``, in
    the loop's thread), for the script's main thread to wait on: the rows in order, and for
    each row how many elastic events came before it (orders rows and events without a
    clock)."""

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.tags: list[int] = []  # elastic events before each row
        self.events: list[dict] = []  # the loop's own list (elastic runs), live
        self.waits: dict[str, bool] = {}  # each wait's name: whether its condition held

    def on_report(self, row: dict, status) -> None:  # status: islands.messages.RunStatus
        self.events = status.elastic  # the loop's list, appended live
        self.tags.append(len(self.events))
        self.rows.append(row)

    def reports(self, island: int, since: int = 0, after_event: int = 0) -> int:
        """Reports of ``island`` among the rows from index ``since`` on that came after the
        first ``after_event`` elastic events."""
        rows = zip(self.rows[since:], self.tags[since:], strict=False)
        return sum(1 for r, t in rows if r["island"] == island and t >= after_event)

    def islands(self, kind: str) -> list[int]:
        """The islands of every elastic event of ``kind`` ("joined", "moved", ...)."""
        return [i for e in list(self.events) if e["kind"] == kind for i in e["islands"]]

    def after_last(self, kind: str, island: int | None = None) -> int:
        """How many elastic events there were once the last one of ``kind`` (of ``island``,
        when given) happened."""
        return 1 + max((k for k, e in enumerate(list(self.events)) if e["kind"] == kind
                        and (island is None or island in e["islands"])), default=-1)

    def latest(self, island: int) -> dict:
        return next((r for r in reversed(self.rows) if r["island"] == island), {})

    def mark(self) -> dict[str, int]:
        """Where the run is: how many rows and elastic events there are so far."""
        return {"rows": len(self.rows), "events": len(self.events)}

    def wait(self, name: str, holds, loop) -> bool:
        """Poll ``holds()`` until it is true, the loop thread has ended or ``HANG_S`` passed
        (a hang: the script then ends the run, and the test fails on what it records)."""
        deadline = time.monotonic() + HANG_S
        while not holds() and loop.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.waits[name] = ok = bool(holds())
        return ok


def start_loop(arch, watch: Watch) -> tuple[threading.Thread, dict]:
    """``arch.run`` in a thread (``Cluster.add_node`` installs signal handlers: the main
    thread keeps the cluster); its result lands in the returned dict under "result"."""
    out: dict = {}
    loop = threading.Thread(target=lambda: out.update(result=arch.run(watch.on_report)),
                            daemon=True)
    loop.start()
    return loop, out


def end_run(arch, loop: threading.Thread) -> None:
    """End the run as its time budget would (the loop reads ``cfg.time_budget`` on every
    pass, and wraps up as for any budget: final checkpoints, the hall of fame's test)."""
    arch.cfg.time_budget = 0.0
    loop.join()


def fast_head(Cluster, free_port, dashboard: bool = False):
    """A cluster's head with no CPUs (the driver and the coordinator live there) that
    notices a removed node within ~3 s (default: tens of seconds), so the islands of a lost
    node restart elsewhere within a test's run. tests/elastic_cluster_run.py uses it too.
    ``dashboard``: for Ray's state API (``list_actors``), on a free port, not Ray's fixed
    8265, which another Ray on the machine may hold."""
    ports = {"dashboard_port": free_port()} if dashboard else {}
    return Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": dashboard, "object_store_memory": MEM,
        "dashboard_agent_listen_port": free_port(), **ports,
        "_system_config": {"health_check_period_ms": 1000,
                           "health_check_failure_threshold": 3}})


def cluster_with_nodes(Cluster, free_port):
    cluster = fast_head(Cluster, free_port, dashboard=True)
    gpu = [cluster.add_node(num_cpus=1, num_gpus=1, resources={"gpu_node": 1},
                            object_store_memory=MEM) for _ in range(8)]
    cpu = [cluster.add_node(num_cpus=1, resources={"cpu_node": 1}, object_store_memory=MEM)
           for _ in range(8)]
    cluster.wait_for_nodes()
    return cluster, gpu, cpu


def start_archipelago(cfg):
    """Plan ``cfg`` on the connected cluster's nodes (by node type), check it, start the
    actors and wait until every island is built: the archipelago and its islands' infos."""
    from islands.placement import place_by_node_type
    from islands.planning import check_resources, plan_islands
    from islands.runtime.archipelago import Archipelago
    from islands.runtime.cluster import cluster_nodes

    nodes = cluster_nodes()
    plan = place_by_node_type(plan_islands(cfg, [n.get("CPU", 0.0) for n in nodes]), nodes)
    check_resources(plan, nodes)
    arch = Archipelago(cfg, plan)
    arch.start()
    return arch, arch.wait_ready()


def config(ckpt_dir: str):
    from islands.config import from_dict, resolve

    gpu_island = {"num_gpus": 0.5, "strategy": "openai-es"}
    return resolve(from_dict({
        "islands": 16, "env": "rastrigin:8", "env_kwargs": {"wait_ms": 100},
        "island_specs": [gpu_island if i % 2 == 0 else {"strategy": "cmaes"}
                         for i in range(16)],
        "popsize": 8, "episodes": 1, "generations": 10**9, "time_budget": BUDGET_S,
        "migration_interval": 1, "target": "none", "cpus_per_island": 0.5,
        "islands_per_process": 1, "topology": "ring", "namespace": "scale-loss", "seed": 2,
        "checkpoint_uri": ckpt_dir, "checkpoint_interval": 2, "max_restarts": 5}))


def main() -> int:
    import ray
    from metrics_run import free_port
    from ray.cluster_utils import Cluster

    cluster, gpu, cpu = cluster_with_nodes(Cluster, free_port)
    try:
        ctx = ray.init(address=cluster.address, namespace="scale-loss", log_to_driver=False)
        arch, infos = start_archipelago(config(tempfile.mkdtemp(prefix="scale-loss-")))
        ray_nodes = actor_nodes(arch, ctx)
        lost = gpu[:2] + cpu[:2]  # a quarter of the nodes, two of each kind
        watch = Watch()
        loop, out = start_loop(arch, watch)
        # three reports each: every island has written its checkpoint (interval 2), so the
        # islands of the lost nodes restart from it
        if watch.wait("checkpointed", lambda: all(watch.reports(i) >= 3 for i in range(16)),
                      loop):
            for node in lost:
                cluster.remove_node(node, allow_graceful=False)
            removed = len(watch.rows)  # rows from here on came after the loss
            # two reports after it: one call per island is in flight at a time, so the
            # second was called after the loss (an island of a lost node: restarted
            # elsewhere from its checkpoint)
            watch.wait("reported after", lambda: all(
                watch.reports(i, removed) >= 2 and watch.latest(i).get("immigrants", 0) > 0
                for i in range(16)), loop)
        else:
            removed = len(watch.rows)
        end_run(arch, loop)
        arch.shutdown()
        print(json.dumps(summary(out["result"], infos, lost, watch, removed)
                         | placement(arch, infos, ray_nodes, gpu, cpu, watch, removed)))
        return 0
    finally:
        ray.shutdown()
        cluster.shutdown()


def actor_nodes(arch, ctx) -> dict[int, str]:
    """Each island's node as Ray's state API (this cluster's dashboard) has it: the node of
    the actor that hosts the island."""
    from ray.util.state import list_actors

    alive = list_actors(address=f"http://{ctx.dashboard_url}",
                        filters=[("state", "=", "ALIVE")], limit=1000)
    node_of = {a.name: a.node_id for a in alive if a.name}
    return {spec.index: node_of.get(h.name) for h in arch.hosts for spec in h.islands}


def placement(arch, infos, ray_nodes, gpu, cpu, watch: Watch, removed: int) -> dict:
    """Per island, what test_scale.py asserts on placement and migration: its GPU share,
    its node (Ray's view and its own), its device and GPU ids, its immigrants at the end,
    and the lowest generation it reported after the loss (an island restarted from its
    checkpoint goes on from there, not from 0)."""
    after = {i: [r["generation"] for r in watch.rows[removed:] if r["island"] == i]
             for i in range(16)}
    return {
        "gpu_nodes": [n.node_id for n in gpu], "cpu_nodes": [n.node_id for n in cpu],
        "islands": [{
            "index": s.index, "num_gpus": s.num_gpus, "node": ray_nodes.get(s.index),
            "node_in_actor": infos[s.index].node, "device": infos[s.index].device,
            "gpu_ids": infos[s.index].gpu_ids,
            "immigrants": watch.latest(s.index).get("immigrants", 0),
            "first_generation_after": min(after[s.index], default=None),
        } for s in arch.plan],
    }


def summary(result, infos, lost, watch: Watch, removed: int) -> dict:
    """What the test asserts on: the run, whether each wait's condition held, and per island
    where it started and how many reports it made after the nodes were removed (the rows
    from index ``removed`` on)."""
    import numpy as np

    from envs import make_evaluator

    hof = result.hof
    fit = make_evaluator("rastrigin:8").evaluate(np.asarray(result.best.params), seed=0)
    return {
        "stop_reason": result.stop_reason, "waits": watch.waits, "hof_fitness": hof["fitness"],
        "best_reported": max(r["best_so_far"] for r in result.rows),
        "best_fitness": float(result.best.fitness), "best_refit": float(fit.fitness[0]),
        "lost_nodes": [n.node_id for n in lost],
        "island_nodes": [i.node for i in infos], "calls_lost": list(result.restarts),
        "reports_after": [watch.reports(i, removed) for i in range(16)],
        "errors": result.errors,
    }


if __name__ == "__main__":
    sys.exit(main())
