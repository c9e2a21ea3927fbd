"""Heterogeneous placement (islands.placement) on a local multi-node Ray cluster.

The cluster (one fake GPU node with ``gpu_node``, two CPU nodes with ``cpu_node``, a head
with no CPUs) runs in a subprocess (tests/placement_run.py): it needs its own Ray, and this
session already has one (conftest.ray_session)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import MET, ROOT, subprocess_env

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


@pytest.mark.own_ray
def test_gpu_and_cpu_islands_land_on_their_node_types_and_migrate():
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "placement_run.py")],
                          cwd=ROOT, env=subprocess_env(), capture_output=True, text=True,
                          timeout=400)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-4000:])
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    gpu_islands = [s for s in out["islands"] if s["num_gpus"] > 0]
    cpu_islands = [s for s in out["islands"] if s["num_gpus"] == 0]
    assert len(gpu_islands) == 2 and len(cpu_islands) == 2
    for s in gpu_islands:
        assert s["node"] == out["gpu_node"], s  # node id from ray.util.state.list_actors
        assert s["node_in_actor"] == s["node"]
        assert s["gpu_ids"] == ["0"]
        assert s["device"] == "cpu"  # fake GPU, no CUDA: the island falls back to the CPU
    for s in cpu_islands:
        assert s["node"] in out["cpu_nodes"], s
        assert s["node_in_actor"] == s["node"]
        assert s["gpu_ids"] == []
    # Ring 0>1>2>3>0 alternates GPU and CPU islands: every island's immigrants came from an
    # island of the other kind.
    for s in out["islands"]:
        assert s["generation"] > 0 and s["immigrants"] > 0, s
    assert out["stop_reason"] == MET
