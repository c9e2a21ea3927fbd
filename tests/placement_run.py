"""Helper of test_placement.py, run in its own process (its own Ray): a local multi-node
``ray.cluster_utils.Cluster`` with one fake GPU node and two CPU nodes, a mixed archipelago
of GPU and CPU islands on it; prints one JSON line with where each island ran and how many
immigrants it took in."""

from __future__ import annotations

import json
import sys


def main() -> int:
    import ray
    from conftest import last_row, stop_when
    from metrics_run import free_port
    from ray.cluster_utils import Cluster

    from islands.config import from_dict, resolve
    from islands.placement import place_by_node_type
    from islands.planning import check_resources, plan_islands
    from islands.runtime.archipelago import Archipelago
    from islands.runtime.cluster import cluster_nodes

    mem = 80 * 1024**2
    # Free ports, not Ray's fixed defaults (8265 / 52365): Cluster passes those as explicit
    # ports, and a head cannot start beside another Ray on the machine (an islands run
    # beside CI: "Failed to bind to 127.0.0.1:8265 because it's already occupied").
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": True, "object_store_memory": mem,
        "dashboard_port": free_port(), "dashboard_agent_listen_port": free_port()})
    try:
        gpu = cluster.add_node(num_cpus=1, num_gpus=1, resources={"gpu_node": 1},
                               object_store_memory=mem)
        cpus = [cluster.add_node(num_cpus=1, resources={"cpu_node": 1},
                                 object_store_memory=mem) for _ in range(2)]
        cluster.wait_for_nodes()
        ctx = ray.init(address=cluster.address, namespace="placement", log_to_driver=False)
        # No generation limit: every island keeps running until each one has taken in
        # migrants from the other kind (ring 0>1>2>3>0 alternates); the time budget only
        # guards against a hang.
        gpu_island = {"num_gpus": 0.25}
        cfg = resolve(from_dict({
            "islands": 4, "env": "CartPole-v1", "backend": "gymnasium",
            "island_specs": [dict(gpu_island, strategy="cmaes"), {"strategy": "cmaes"},
                             dict(gpu_island, strategy="ga"), {"strategy": "ga"}],
            "popsize": 8, "episodes": 1, "max_episode_steps": 50, "generations": 100000,
            "time_budget": 180,
            "migration_interval": 2, "target": "none", "cpus_per_island": 0.5,
            "topology": "ring", "namespace": "placement", "seed": 1}))
        nodes = cluster_nodes()
        plan = place_by_node_type(plan_islands(cfg, [n.get("CPU", 0.0) for n in nodes]),
                                  nodes)
        check_resources(plan, nodes)
        arch = Archipelago(cfg, plan)
        arch.start()
        infos = arch.wait_ready()
        from ray.util.state import list_actors

        # This cluster's dashboard, not whichever Ray on the machine started last.
        alive = list_actors(address=f"http://{ctx.dashboard_url}",
                            filters=[("state", "=", "ALIVE")], limit=1000)
        actor_node = {a.name: a.node_id for a in alive if a.name}
        host_of = {spec.index: h.name for h in arch.hosts for spec in h.islands}
        result = arch.run(stop_when(arch, lambda rows: all(
            (r := last_row(rows, i)) is not None and r["immigrants"] > 0 for i in range(4))))
        arch.shutdown()
        last = {}
        for r in result.rows:
            last[r["island"]] = r
        out = {
            "gpu_node": gpu.node_id, "cpu_nodes": [c.node_id for c in cpus],
            "islands": [{
                "index": s.index, "num_gpus": s.num_gpus, "resources": s.resources,
                "node": actor_node.get(host_of[s.index]),
                "node_in_actor": infos[s.index].node,
                "device": infos[s.index].device,
                "gpu_ids": infos[s.index].gpu_ids,
                "generation": last[s.index]["generation"],
                "immigrants": last[s.index]["immigrants"]} for s in plan],
            "stop_reason": result.stop_reason,
        }
        print(json.dumps(out))
        return 0
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
