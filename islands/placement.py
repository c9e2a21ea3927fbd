"""Heterogeneous placement: which node type an island lands on.

The cluster configs (``cluster/gpu.yaml``, ``cluster/local-fake.yaml``) give every GPU
worker the custom resource ``gpu_node`` and every CPU worker ``cpu_node``. An island asks
for its node type through resources:

- a GPU island (``--gpus-per-island 0.25`` or ``num_gpus`` in its ``island_specs`` entry)
  asks for the GPU share and, when the cluster has ``gpu_node``, a tiny ``gpu_node`` share;
- a CPU island (no GPU) asks for a tiny ``cpu_node`` share when the cluster has
  ``cpu_node``, so it never takes the CPUs of a GPU node that the GPU islands need.

The tiny share (:data:`NODE_TYPE_SHARE`) only pins the node type: 10,000 islands fit on one
node. An island whose ``resources`` already name ``gpu_node`` or ``cpu_node`` is left as it
is, as is everything on a cluster without these resources (a laptop, ``cpu.yaml`` without
GPU workers), so the mapping never makes a run unplaceable that was placeable before.
"""

from __future__ import annotations

from .planning import IslandSpec

GPU_NODE = "gpu_node"
CPU_NODE = "cpu_node"
NODE_TYPE_SHARE = 0.001  # pins the node type, never limits how many islands fit


def place_by_node_type(plan: list[IslandSpec], nodes: list[dict[str, float]]
                       ) -> list[IslandSpec]:
    """``plan`` (planning.plan_islands) with node-type resources added (see module
    docstring); ``nodes``: total resources of each node (runtime.cluster.cluster_nodes)."""
    has = {k for n in nodes for k, v in n.items() if v > 0}
    out = []
    for spec in plan:
        res = dict(spec.resources)
        if GPU_NODE not in res and CPU_NODE not in res:
            if spec.num_gpus > 0:
                if GPU_NODE in has:
                    res[GPU_NODE] = NODE_TYPE_SHARE
            elif CPU_NODE in has:
                res[CPU_NODE] = NODE_TYPE_SHARE
        out.append(spec.replace(resources=res))
    return out
