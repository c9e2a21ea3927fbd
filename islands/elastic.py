"""The elastic archipelago's rule: how many islands the cluster holds now, and which to drop.

Plain Python; ``islands.runtime.elastic`` reads the cluster's nodes through Ray every few
seconds, asks :func:`decide`, and carries its answer out (new islands on the nodes that
joined, seeded from the hall of fame; retired islands killed and dropped from the
coordinator's topology).

The rule (``--elastic MIN:MAX``):

- **capacity**: islands of the run's size (its CPU share, GPUs, custom resources) that the
  live nodes hold, counting every node's total resources (the run's own actors included);
- **target**: capacity, clamped to [MIN, MAX];
- **grow** by ``target - live`` islands when that is positive (nodes joined, or the run
  started below what the cluster holds);
- a **lost** host (its worker process was on a node that is gone: preempted, removed,
  drained) is kept while the target leaves room for it: Ray restarts it from its last
  checkpoint on free capacity ("moved"); the lost hosts beyond that room retire (their islands
  stop; the hall of fame keeps their best, the coordinator's topology closes over the gap).

Islands are never retired for being more than the target while they run: only lost ones
are, so a run never throws away an island that is working.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Node:
    """A Ray node as the rule sees it: its id, whether it is alive, its total resources."""

    id: str
    alive: bool
    resources: dict[str, float]


@dataclass(frozen=True)
class Host:
    """A worker process of the run: its number, its islands, and the node it last ran on
    (None: not known yet, a host still starting)."""

    key: int
    islands: tuple[int, ...]
    node: str | None


@dataclass(frozen=True)
class Decision:
    grow: int  # new islands to start
    retire: tuple[int, ...]  # host keys whose islands retire
    target: int  # islands the cluster holds now, within [MIN, MAX]


def node_capacity(resources: dict[str, float], need: dict[str, float]) -> int:
    """Islands needing ``need`` (CPU, GPU, custom amounts) that ``resources`` holds."""
    fits = [math.floor(float(resources.get(k, 0.0)) / v + 1e-9) for k, v in need.items() if v]
    return max(0, min(fits)) if fits else 0


def capacity(nodes: list[Node], need: dict[str, float]) -> int:
    return sum(node_capacity(n.resources, need) for n in nodes if n.alive)


def decide(nodes: list[Node], hosts: list[Host], need: dict[str, float], lo: int,
           hi: int) -> Decision:
    """What to do now (see the module docstring)."""
    alive = {n.id for n in nodes if n.alive}
    target = min(hi, max(lo, capacity(nodes, need)))
    lost = sorted((h for h in hosts if h.node is not None and h.node not in alive),
                  key=lambda h: h.key)
    live = sum(len(h.islands) for h in hosts)
    room = target - (live - sum(len(h.islands) for h in lost))
    retire = []
    for h in lost:  # the oldest hosts move first: they have evolved longest
        if len(h.islands) <= room:
            room -= len(h.islands)
        else:
            retire.append(h.key)
            live -= len(h.islands)
    return Decision(grow=max(0, target - live), retire=tuple(retire), target=target)
