"""Helper of test_scale.py, run in its own process (its own Ray): 16 small virtual nodes of two
kinds on ``ray.cluster_utils.Cluster`` (8 fake-GPU nodes with ``gpu_node``, 8 CPU nodes with
``cpu_node``, a head with no CPUs for the coordinator and the driver), 16 synthetic islands
placed by node type, and a quarter of the nodes removed mid-run. Prints one JSON line: the
islands' nodes, which nodes were removed, the rows' hall of fame against the coordinator's,
and what each island did after the loss."""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time

MEM = 80 * 1024**2  # object store per node


def fast_head(Cluster, free_port):
    """A cluster's head with no CPUs (the driver and the coordinator live there) that
    notices a removed node within ~3 s (default: tens of seconds), so the islands of a lost
    node restart elsewhere within a test's run. tests/elastic_cluster_run.py uses it too."""
    return Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "object_store_memory": MEM,
        "dashboard_agent_listen_port": free_port(),
        "_system_config": {"health_check_period_ms": 1000,
                           "health_check_failure_threshold": 3}})


def cluster_with_nodes(Cluster, free_port):
    cluster = fast_head(Cluster, free_port)
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
        "popsize": 8, "episodes": 1, "generations": 10**9, "time_budget": 35,
        "migration_interval": 1, "target": "none", "cpus_per_island": 0.5,
        "islands_per_process": 1, "topology": "ring", "namespace": "scale-loss", "seed": 2,
        "checkpoint_uri": ckpt_dir, "checkpoint_interval": 2, "max_restarts": 5}))


def main() -> int:
    import ray
    from metrics_run import free_port
    from ray.cluster_utils import Cluster

    cluster, gpu, cpu = cluster_with_nodes(Cluster, free_port)
    try:
        ray.init(address=cluster.address, namespace="scale-loss", log_to_driver=False)
        arch, infos = start_archipelago(config(tempfile.mkdtemp(prefix="scale-loss-")))
        lost = gpu[:2] + cpu[:2]  # a quarter of the nodes, two of each kind
        removed_at = []

        def remove_later():
            time.sleep(10)
            removed_at.append(time.monotonic())
            for node in lost:
                cluster.remove_node(node, allow_graceful=False)

        threading.Thread(target=remove_later, daemon=True).start()
        t0 = time.monotonic()
        result = arch.run()
        arch.shutdown()
        print(json.dumps(summary(result, infos, lost, removed_at[0] - t0)))
        return 0
    finally:
        ray.shutdown()
        cluster.shutdown()


def summary(result, infos, lost, removed_s: float) -> dict:
    """What the test asserts on: the run, and per island where it started and how far it
    got after the nodes were removed (the rows' wall clock counts from the loop's start)."""
    import numpy as np

    from envs import make_evaluator

    hof = result.hof
    fit = make_evaluator("rastrigin:8").evaluate(np.asarray(result.best.params), seed=0)
    after = [r for r in result.rows if r["wall_s"] > removed_s + 2]
    return {
        "stop_reason": result.stop_reason, "hof_fitness": hof["fitness"],
        "best_reported": max(r["best_so_far"] for r in result.rows),
        "best_fitness": float(result.best.fitness), "best_refit": float(fit.fitness[0]),
        "lost_nodes": [n.node_id for n in lost],
        "island_nodes": [i.node for i in infos], "calls_lost": list(result.restarts),
        "reported_after": sorted({r["island"] for r in after}),
        "last_report_s": [max(r["wall_s"] for r in result.rows if r["island"] == i)
                          for i in range(16)],
        "errors": result.errors, "removed_s": removed_s,
    }


if __name__ == "__main__":
    sys.exit(main())
