"""Helper of test_elastic.py, run in its own process (its own Ray): an elastic archipelago
(``--elastic 2:8``) on ``ray.cluster_utils.Cluster``. It starts with 4 islands on 2 virtual
nodes of 2 CPUs; once they report, 2 more nodes join; once the archipelago has grown to 8
and every island has received migrants, a spare node joins and one of the first two is lost
(its islands move to the spare); once they have moved, the 2 nodes that joined leave; once
their islands have retired and the others have reported twice since, the run ends. No step
waits on the clock: each waits for reports and events (scale_cluster_run.Watch), at most
``HANG_S`` (a hang). Prints one JSON line: whether each wait's condition held, the events,
where each step fell among the rows and events, the rows' hall of fame against the
coordinator's, and who reported after the leave."""

from __future__ import annotations

import json
import sys
import tempfile

from scale_cluster_run import (
    BUDGET_S,
    MEM,
    Watch,
    end_run,
    fast_head,
    start_archipelago,
    start_loop,
)


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
        watch = Watch()
        loop, out = start_loop(arch, watch)
        marks, added, spare = steps(cluster, first, arch, watch, loop)
        end_run(arch, loop)
        arch.shutdown()
        print(json.dumps(summary(out["result"], arch, watch, marks, added, first[0].node_id,
                                 spare)))
        return 0
    finally:
        ray.shutdown()
        cluster.shutdown()


def steps(cluster, first, arch, watch: Watch, loop) -> tuple[dict, list[str], str | None]:
    """The cluster's changes, each once the run has answered the one before (in the main
    thread: ``Cluster.add_node`` installs signal handlers). Returns where each change fell
    among the rows and events (``Watch.mark``), the added nodes' ids and the spare's."""
    marks: dict[str, dict[str, int]] = {}
    if not watch.wait("reported", lambda: all(watch.reports(i) >= 2 for i in range(4)), loop):
        return marks, [], None
    marks["join"] = watch.mark()
    added = [cluster.add_node(num_cpus=2, object_store_memory=MEM) for _ in range(2)]
    # 8 islands, the newcomers linked into the topology: every island received migrants
    if not watch.wait("grown", lambda: sorted(watch.islands("joined")) == [4, 5, 6, 7] and all(
            watch.latest(i).get("immigrants", 0) > 0 for i in range(8)), loop):
        return marks, [n.node_id for n in added], None
    # a spare node, then one of the first two lost: the run holds 8 islands at most, so the
    # spare stays empty until the lost node's islands move onto it
    marks["swap"] = watch.mark()
    spare = cluster.add_node(num_cpus=2, object_store_memory=MEM)
    cluster.remove_node(first[0], allow_graceful=False)
    on_lost = {i.island for i in arch.infos[:4] if i.node == first[0].node_id}
    if watch.wait("moved", lambda: on_lost <= set(watch.islands("moved")), loop):
        marks["leave"] = watch.mark()
        for node in added:
            cluster.remove_node(node, allow_graceful=False)
        # their islands retire and the others run on: two reports each after the last
        # retirement (one call per island in flight: the second was called after it)
        watch.wait("retired", lambda: sorted(watch.islands("retired")) == [4, 5, 6, 7] and all(
            watch.reports(i, after_event=watch.after_last("retired")) >= 2 for i in range(4)),
            loop)
    return marks, [n.node_id for n in added], spare.node_id


def summary(result, arch, watch: Watch, marks: dict, added: list[str], lost: str,
            spare: str | None) -> dict:
    """What the test asserts on; "after_retired": each island's reports after the last
    retirement (of its own, for a retired island)."""
    import numpy as np

    from envs import make_evaluator

    fit = make_evaluator("rastrigin:8").evaluate(np.asarray(result.best.params), seed=0)
    rows, retired = result.rows, set(watch.islands("retired"))
    islands = sorted({r["island"] for r in rows})
    return {
        "stop_reason": result.stop_reason, "waits": watch.waits, "marks": marks,
        "added_nodes": added, "lost_node": lost, "spare_node": spare,
        "start_nodes": [i.node for i in arch.infos[:4]],
        "elastic": result.elastic, "hof_fitness": result.hof["fitness"],
        "best_reported": max(r["best_so_far"] for r in rows),
        "best_fitness": float(result.best.fitness), "best_refit": float(fit.fitness[0]),
        "x0_set": [s.x0 is not None for s in arch.plan],
        "after_retired": {str(i): watch.reports(i, after_event=watch.after_last(
            "retired", i if i in retired else None)) for i in islands},
        "immigrants": {str(r["island"]): r["immigrants"] for r in rows},
        "migration": result.coordinator_stats, "errors": result.errors,
    }


if __name__ == "__main__":
    sys.exit(main())
