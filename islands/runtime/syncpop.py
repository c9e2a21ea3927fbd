"""A synchronous population on the virtual clock (``--eval-workers N``): the baseline shape of
OpenAI ES (Salimans et al. 2017) and of EvoTorch's Ray actors.

One master holds the strategy; every generation it sends the population to ``N`` one-CPU
workers spread over the cluster's nodes, each evaluates its contiguous share of the
individuals, and the generation ends when the slowest worker is done. So a generation's
seconds are the largest share's env steps at the calibrated seconds per step on one core
(no threads: a worker is one process on one CPU), divided by its node's speed, times its
own straggler draw, plus the broadcast and the gather (one message latency each). The
master's own work (ask and tell) is not charged: it is microseconds beside the episodes.
The episodes themselves are the island core's, computed for real as for any island.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..costmodel import Node
from ..island.hooks import Generation, Hook
from ..planning import ResourceError


class GenerationSteps(Hook):
    """Records each generation's env steps per individual (its episodes' lengths summed),
    for the virtual runtime to share out over the workers; ``take()`` empties it."""

    def __init__(self) -> None:
        self.gens: list[np.ndarray] = []

    def evaluated(self, island, gen: Generation) -> None:
        lengths = np.asarray(gen.result.lengths, dtype=np.float64)
        self.gens.append(lengths.reshape(len(gen.fitness), -1).sum(1))

    def take(self) -> list[np.ndarray]:
        gens, self.gens = self.gens, []
        return gens


def place_workers(islands: int, workers: int, nodes: Sequence[Node]) -> list[list[int]]:
    """Each island's workers' nodes: one CPU per worker, first fit over the nodes in order
    (as Ray packs actors); ResourceError when the cluster has too few whole CPUs."""
    free = [int(n.cpus + 1e-9) for n in nodes]
    if sum(free) < islands * workers:
        raise ResourceError(f"--eval-workers {workers} x {islands} island(s) needs "
                            f"{islands * workers} CPUs; the virtual cluster has {sum(free)}")
    slots = [j for j, f in enumerate(free) for _ in range(f)]
    return [slots[i * workers:(i + 1) * workers] for i in range(islands)]


def generation_seconds(steps: np.ndarray, worker_nodes: Sequence[int], nodes: Sequence[Node],
                       s_per_step: float, straggle: Callable[[], float],
                       latency_s: float) -> float:
    """One synchronous generation: its individuals' ``steps`` shared out in contiguous
    blocks over the workers (as a population array is split), the slowest worker's seconds
    plus a broadcast and a gather."""
    shares = np.array_split(np.asarray(steps, dtype=np.float64), len(worker_nodes))
    slowest = max(float(share.sum()) * s_per_step / nodes[j].speed * straggle()
                  for share, j in zip(shares, worker_nodes, strict=True))
    return slowest + 2 * latency_s
