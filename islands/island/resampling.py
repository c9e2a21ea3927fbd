"""More episodes per evaluation when an island stalls: resampling against fitness noise.

An episode's return is a noisy fitness. Far from an optimum the differences between genomes
dwarf that noise and one episode per evaluation is the cheapest way to rank them; near one
the differences shrink while the noise stays, the ranking becomes mostly luck and the
search stalls (D. V. Arnold and H.-G. Beyer 2006, "A general noise model and its effects on
evolution strategy performance", IEEE TEC 10(4)). Uncertainty-handling CMA-ES answers by
evaluating more often once it measures rank changes under re-evaluation (N. Hansen et al.
2009, "A method for handling uncertainty in evolutionary optimization...", IEEE TEC 13(1);
pycma's ``NoiseHandler``). An island here (:class:`ResamplingHook`) does both the measuring
and the reading of the symptom:

* **ranking probes** (opt-in, ``--probe-interval G``; experimental): every G-th generation
  the island evaluates its whole population a second time, on ``episodes`` fresh episodes
  (``probe_seed``; one batched call, not single-genome re-evaluations), tells the strategy
  the mean of both (so the probe's episodes are fitness too, not overhead) and hands the
  two halves to :meth:`EpisodeSchedule.update`. Their rank agreement (Spearman's rho over
  the population: 1 when the halves rank alike, 0 when a ranking is a lottery; about the
  share of the fitness spread that is not noise) is averaged over the last ``PROBE_WINDOW``
  probes; when it is below ``MIN_AGREEMENT`` *and* the population's mean fitness at the
  probes did not rise over them, the episodes double. Both, because a noisy ranking costs
  progress but resampling costs evaluations: at a fixed step size, halving the noise
  variance for twice the episodes never pays while the search still moves (the progress
  rate of a (mu/mu, lambda)-ES grows only with 1 / sqrt(1 + noise/signal); Arnold and
  Beyer), but it does once noise has stopped the search (the noise-limited steady state);
* **stagnation** (:class:`islands.island.restarts.Stagnation`: for ``patience`` generations
  neither the best nor the median fitness of a generation beat their records): the
  episodes double too. Under noise this is a late symptom -- a population whose mean still
  creeps up sets a new median record now and then by luck, and the count starts over.

Each doubling (at most ``cap``) starts both judgements afresh on the new, less noisy
fitness. Only once the cap is reached does a stagnant island restart (``--restart``): the
schedule empties the restarter's stagnation windows whenever it grows. The probes stay off
by default: no rule for them has yet been measured to help.

The schedule's state (current episodes, doublings, the stagnation count, the recent
probes' agreements and levels) is plain data, checkpointed with the island, so a resumed
island evaluates as the original did. Measured: docs/results/resampling.md.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ..seeds import probe_seed
from ..strategies.base import sanitize_fitness
from .hooks import Generation, Hook
from .restarts import Restarter, Stagnation

log = logging.getLogger("islands.island")

# --probe-interval G: every G-th generation is evaluated twice over (1/G more episodes, all
# of them used as fitness); PROBE_WINDOW probes are averaged before the schedule acts: one
# probe's rho over a popsize-48 population has a standard error of ~0.15.
PROBE_WINDOW = 3
# Below this rank agreement between two independent evaluations, selection is mostly luck:
# rho is about the share of the fitness spread that is not noise (1 - noise share).
MIN_AGREEMENT = 0.5


def rank_agreement(a, b) -> float:
    """Spearman's rho between two evaluations of the same population (NaN when either is
    constant). Non-finite fitness (broken genomes) ranks last, as strategies rank it."""
    a, b = sanitize_fitness(a), sanitize_fitness(b)
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    ra = np.argsort(np.argsort(a, kind="stable"), kind="stable")
    rb = np.argsort(np.argsort(b, kind="stable"), kind="stable")
    return float(np.corrcoef(ra, rb)[0, 1])


class EpisodeSchedule:
    """Episodes per evaluation of one island: ``base`` until it stagnates or its ranking
    probes say the ranking is mostly noise, then doubled each time up to ``cap`` (``cap``
    None or <= ``base``: fixed, and no probes)."""

    def __init__(self, base: int, cap: int | None, patience: int,
                 probe_every: int = 0) -> None:
        self.base = int(base)
        self.cap = self.base if cap is None else max(self.base, int(cap))
        self.episodes = self.base
        self.doublings = 0
        self.stagnation = Stagnation(patience)
        self.probe_every = int(probe_every)
        self.agreements: list[float] = []  # the latest probes' rank agreements
        self.levels: list[float] = []  # ... and their populations' mean fitness
        self.why = ""  # what made the episodes grow last (for the log)

    @property
    def enabled(self) -> bool:
        return self.cap > self.base

    def probe_due(self, generation: int) -> bool:
        """Whether ``generation`` (about to be evaluated) is evaluated twice over."""
        return (self.enabled and self.episodes < self.cap and self.probe_every > 0
                and int(generation) % self.probe_every == self.probe_every - 1)

    def update(self, fitness, probe=None) -> int | None:
        """After a generation (``probe``: its two halves' fitness on a probe generation):
        the new episodes per evaluation when they grow, else None."""
        if self.episodes >= self.cap:
            return None
        stagnant = self.stagnation.update(fitness)
        if probe is not None:
            rho = rank_agreement(*probe)
            f = np.asarray(fitness, dtype=np.float64)
            if np.isfinite(rho) and np.isfinite(f).any():
                self.agreements = [*self.agreements, rho][-PROBE_WINDOW:]
                self.levels = [*self.levels, float(f[np.isfinite(f)].mean())][-PROBE_WINDOW:]
        if not (stagnant or self.noisy):
            return None
        self.why = (f"stagnant for {self.stagnation.patience} generations" if stagnant else
                    f"its ranking probes agree {np.mean(self.agreements):.2f} on average and "
                    f"its population mean went from {self.levels[0]:.4g} to "
                    f"{self.levels[-1]:.4g}")
        self.episodes = min(self.cap, 2 * self.episodes)
        self.doublings += 1
        self.stagnation.reset()  # records of the noisier fitness do not carry over
        self.agreements, self.levels = [], []  # nor probes at fewer episodes
        return self.episodes

    @property
    def noisy(self) -> bool:
        """Noise holds the island back: the last ``PROBE_WINDOW`` probes agree, on average,
        less than ``MIN_AGREEMENT``, and the population's mean fitness did not rise from the
        first of them to the last (a noisy ranking that still makes progress is cheaper
        than resampling: ES theory on noisy fitness, module docstring)."""
        return (len(self.agreements) >= PROBE_WINDOW
                and float(np.mean(self.agreements)) < MIN_AGREEMENT
                and self.levels[-1] <= self.levels[0])

    def state_dict(self) -> dict[str, Any]:
        return {"base": self.base, "episodes": self.episodes, "doublings": self.doublings,
                "stagnation": self.stagnation.state_dict(),
                "agreements": list(self.agreements), "levels": list(self.levels)}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        self.episodes = min(max(int(d["episodes"]), self.base), self.cap)
        self.doublings = int(d["doublings"])
        self.stagnation.load_state_dict(d["stagnation"])
        self.agreements = [float(v) for v in d.get("agreements", [])]
        self.levels = [float(v) for v in d.get("levels", [])]


class ResamplingHook(Hook):
    """The episode schedule of an island: on a probe generation the population is evaluated
    again on as many fresh episodes and the strategy is told the mean of both (``evaluated``);
    after each generation the schedule decides whether the episodes grow (``after_generation``).
    A stagnant island resamples before it restarts, so growing empties the restarter's
    stagnation window (the restart hook runs after this one)."""

    state_key = "episode_schedule"

    def __init__(self, schedule: EpisodeSchedule, restarter: Restarter) -> None:
        self.schedule, self.restarter = schedule, restarter

    def evaluated(self, island, gen: Generation) -> None:
        if not self.schedule.probe_due(island.generation) or island.reevaluator is None:
            return
        R = island.reevaluate(gen.X, self.schedule.episodes,
                              probe_seed(island.run_seed, island.index, island.generation))
        gen.halves = (gen.fitness, R.mean(axis=1))
        gen.fitness = (gen.fitness + gen.halves[1]) / 2

    def after_generation(self, island, gen: Generation) -> None:
        n = self.schedule.update(gen.fitness, gen.halves)
        if n is None:
            return
        island.set_episodes(n)
        self.restarter.stagnation.reset()
        log.info("island %d: %d episodes per evaluation from generation %d (%s)",
                 island.index, n, island.generation, self.schedule.why)

    def report(self) -> dict[str, Any]:
        agreements = self.schedule.agreements
        return {"episodes_per_eval": int(self.schedule.episodes),
                "rank_agreement": agreements[-1] if agreements else None}

    def state_dict(self) -> dict[str, Any]:
        return self.schedule.state_dict()

    def load_state(self, island, d: dict[str, Any] | None) -> None:
        # Older states have no schedule (fixed episodes); a resume that sets other
        # --episodes than the run had starts the schedule afresh from them.
        if d is not None and int(d["base"]) == self.schedule.base:
            self.schedule.load_state_dict(d)
            island.set_episodes(self.schedule.episodes)
