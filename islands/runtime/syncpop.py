"""A synchronous population on the virtual clock (``--eval-workers N``): the baseline shape
of OpenAI ES (Salimans et al. 2017) and of EvoTorch's Ray actors.

One master holds the strategy; every generation it sends the population to ``N`` one-CPU
workers spread over the cluster's nodes, each evaluates its contiguous share of the
individuals, and the generation ends when the slowest worker is done. So a generation's
seconds are the slowest share's env steps, rounds (its envs step in lockstep: as many rounds
as its longest episode) and episodes at the calibrated cost on one core (no threads: a
worker is one process on one CPU), divided by its node's speed, times its own straggler
draw, plus the broadcast and the gather (one message latency each). The master's own work
(ask and tell) is not charged: it is microseconds beside the episodes. The episodes
themselves are the island core's, computed for real as for any island.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..costmodel import Node, StepCost
from ..island.hooks import Generation, Hook
from ..planning import ResourceError


@dataclass(frozen=True)
class GenWork:
    """One generation's work: env steps, longest episode and episodes per individual, and
    the rounds the island's own evaluator took for it (what the call's count holds)."""

    steps: np.ndarray
    longest: np.ndarray
    rounds: int
    episodes: np.ndarray


class GenerationSteps(Hook):
    """Records each generation's work per individual (:class:`GenWork`), for the virtual
    runtime to share out over the workers; ``take()`` empties it."""

    def __init__(self) -> None:
        self.gens: list[GenWork] = []

    def evaluated(self, island, gen: Generation) -> None:
        lengths = np.asarray(gen.result.lengths, dtype=np.float64).reshape(len(gen.fitness), -1)
        self.gens.append(GenWork(lengths.sum(1), lengths.max(1),
                                 int(gen.result.extra.get("rounds", 0)),
                                 np.full(len(lengths), float(lengths.shape[1]))))

    def take(self) -> list[GenWork]:
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


def generation_seconds(gen: GenWork, worker_nodes: Sequence[int], nodes: Sequence[Node],
                       cost: StepCost, straggle: Callable[[], float],
                       latency_s: float) -> float:
    """One synchronous generation: its individuals shared out in contiguous blocks over the
    workers (as a population array is split), each block's steps in as many rounds as its
    longest episode (where the island's evaluator counts rounds); the slowest worker's
    seconds plus a broadcast and a gather."""
    k = len(worker_nodes)
    steps = np.array_split(np.asarray(gen.steps, dtype=np.float64), k)
    longest = np.array_split(np.asarray(gen.longest, dtype=np.float64), k)
    episodes = np.array_split(np.asarray(gen.episodes, dtype=np.float64), k)
    counted = gen.rounds > 0  # an evaluator without rounds: the per-step model alone
    slowest = max(cost.seconds(float(s.sum()), float(ln.max(initial=0.0)) if counted else 0.0,
                               1.0, float(e.sum()))
                  / nodes[j].speed * straggle()
                  for s, ln, e, j in zip(steps, longest, episodes, worker_nodes, strict=True))
    return slowest + 2 * latency_s
