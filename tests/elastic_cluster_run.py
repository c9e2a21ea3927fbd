"""Helper of test_elastic.py, run in its own process (its own Ray): an elastic archipelago
(``--elastic 2:8``) on ``ray.cluster_utils.Cluster``. It starts with 4 islands on 2 virtual
nodes of 2 CPUs; 2 more nodes join ``JOIN_S`` into the run; at ``SWAP_S`` a spare node joins
and one of the first two is lost (its islands move to the spare); at ``LEAVE_S`` the 2 nodes
that joined leave.
Prints one JSON line: the events, when the archipelago reached 8 and came back to 4, the
rows' hall of fame against the coordinator's, and who reported when."""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time

from scale_cluster_run import MEM, fast_head, start_archipelago

JOIN_S, SWAP_S, LEAVE_S, BUDGET_S = 4.0, 18.0, 30.0, 42.0


def cluster_of_two(Cluster, free_port):
    cluster = fast_head(Cluster, free_port)
    first = [cluster.add_node(num_cpus=2, object_store_memory=MEM) for _ in range(2)]
    cluster.wait_for_nodes()
    return cluster, first


def config(ckpt_dir: str):
    from islands.config import from_dict, resolve

    return resolve(from_dict({
        "islands": 4, "elastic": "2:8", "env": "rastrigin:8",
        "env_kwargs": {"wait_ms": 100}, "strategy": "cmaes", "popsize": 8, "episodes": 1,
        "generations": 10**9, "time_budget": BUDGET_S, "migration_interval": 1,
        "target": "none", "islands_per_process": 1, "topology": "ring",
        "namespace": "elastic", "seed": 3, "checkpoint_uri": ckpt_dir,
        "checkpoint_interval": 2, "max_restarts": 5}))


def main() -> int:
    import ray
    from metrics_run import free_port
    from ray.cluster_utils import Cluster

    cluster, first = cluster_of_two(Cluster, free_port)
    try:
        ray.init(address=cluster.address, namespace="elastic", log_to_driver=False)
        arch, _ = start_archipelago(config(tempfile.mkdtemp(prefix="elastic-")))
        marks: dict[str, float] = {}
        out: dict = {}
        # the loop in a thread: Cluster.add_node installs signal handlers, main thread only
        t0 = time.monotonic()
        loop = threading.Thread(target=lambda: out.update(result=arch.run()), daemon=True)
        loop.start()
        def at(s: float, mark: str) -> None:
            time.sleep(max(0.0, s - (time.monotonic() - t0)))
            marks[mark] = time.monotonic() - t0

        at(JOIN_S, "join")
        added = [cluster.add_node(num_cpus=2, object_store_memory=MEM) for _ in range(2)]
        marks["joined"] = time.monotonic() - t0  # the nodes are up
        # a spare node, then one of the first two lost: the run holds 8 islands at most, so
        # the spare stays empty until the lost node's islands move onto it
        at(SWAP_S, "swap")
        spare = cluster.add_node(num_cpus=2, object_store_memory=MEM)
        cluster.remove_node(first[0], allow_graceful=False)
        at(LEAVE_S, "leave")
        for node in added:
            cluster.remove_node(node, allow_graceful=False)
        loop.join()
        result = out["result"]
        arch.shutdown()
        print(json.dumps(summary(result, arch, marks, [n.node_id for n in added],
                                 first[0].node_id, spare.node_id)))
        return 0
    finally:
        ray.shutdown()
        cluster.shutdown()


def summary(result, arch, marks: dict[str, float], added: list[str], lost: str,
            spare: str) -> dict:
    """What the test asserts on (the rows' and events' clocks count from the loop's start,
    as ``marks`` do, within a few milliseconds)."""
    import numpy as np

    from envs import make_evaluator

    fit = make_evaluator("rastrigin:8").evaluate(np.asarray(result.best.params), seed=0)
    rows = result.rows
    return {
        "stop_reason": result.stop_reason, "marks": marks, "added_nodes": added,
        "lost_node": lost, "spare_node": spare,
        "start_nodes": [i.node for i in arch.infos[:4]],
        "elastic": result.elastic, "hof_fitness": result.hof["fitness"],
        "best_reported": max(r["best_so_far"] for r in rows),
        "best_fitness": float(result.best.fitness), "best_refit": float(fit.fitness[0]),
        "x0_set": [s.x0 is not None for s in arch.plan],
        "last_report_s": {str(i): max(r["wall_s"] for r in rows if r["island"] == i)
                          for i in sorted({r["island"] for r in rows})},
        "immigrants": {str(r["island"]): r["immigrants"] for r in rows},
        "migration": result.coordinator_stats, "errors": result.errors,
    }


if __name__ == "__main__":
    sys.exit(main())
