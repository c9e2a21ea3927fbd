"""Heterogeneous placement (islands.placement): the mapping of islands to node types.

On a real multi-node cluster (fake-GPU nodes with ``gpu_node``, CPU nodes with ``cpu_node``)
the islands' placement, by Ray's state API and by their own account, is checked in
test_scale.py's 16-node cluster, which shares one ``Cluster`` with the node-loss checks."""

from __future__ import annotations

from islands.placement import CPU_NODE, GPU_NODE, NODE_TYPE_SHARE, place_by_node_type
from islands.planning import IslandSpec


def _spec(i, gpus=0.0, resources=None):
    return IslandSpec(index=i, strategy="cmaes", num_cpus=1.0, num_gpus=gpus,
                      resources=resources or {})


def test_mapping_adds_node_type_only_when_the_cluster_has_it():
    plan = [_spec(0, 0.25), _spec(1), _spec(2, 0.5, {"cpu_node": 1}), _spec(3, 0, {"x": 1})]
    hetero = [{"CPU": 4, "GPU": 1, GPU_NODE: 1}, {"CPU": 8, CPU_NODE: 1}]
    got = place_by_node_type(plan, hetero)
    assert got[0].resources == {GPU_NODE: NODE_TYPE_SHARE}
    assert got[1].resources == {CPU_NODE: NODE_TYPE_SHARE}
    assert got[2].resources == {"cpu_node": 1}  # explicit node type wins
    assert got[3].resources == {"x": 1, CPU_NODE: NODE_TYPE_SHARE}
    assert plan[1].resources == {}  # input not mutated
    laptop = place_by_node_type(plan, [{"CPU": 8, "GPU": 1}])
    assert [s.resources for s in laptop] == [{}, {}, {"cpu_node": 1}, {"x": 1}]
