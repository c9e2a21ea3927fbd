"""More episodes per evaluation when an island stalls: resampling against fitness noise.

An episode's return is a noisy fitness. Far from an optimum the differences between genomes
dwarf that noise and one episode per evaluation is the cheapest way to rank them; near one
the differences shrink while the noise stays, the ranking becomes mostly luck and the
search stalls (D. V. Arnold and H.-G. Beyer 2006, "A general noise model and its effects on
evolution strategy performance", IEEE TEC 10(4)). Uncertainty-handling CMA-ES answers by
evaluating more often once it measures rank changes under re-evaluation (N. Hansen et al.
2009, "A method for handling uncertainty in evolutionary optimization...", IEEE TEC 13(1);
pycma's ``NoiseHandler``). An island here does both the measuring and the reading of the
symptom:

* **ranking probes** (opt-in, ``--probe-interval G``; experimental, see the measurements
  below): every G-th generation the island evaluates its whole
  population a second time, on ``episodes`` fresh episodes (``probe_seed``; one batched
  call, not single-genome re-evaluations), tells the strategy the mean of both (so the
  probe's episodes are fitness too, not overhead) and hands the two halves to
  :meth:`EpisodeSchedule.update`. Their rank agreement (Spearman's rho over the
  population: 1 when the halves rank alike, 0 when a ranking is a lottery; about the share
  of the fitness spread that is not noise) is averaged over the last ``PROBE_WINDOW``
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
schedule empties the restarter's stagnation windows whenever it grows.

Measured on BipedalWalker-v3 (this machine, 2 islands): an island whose one-episode
population mean had hovered at 180-230 for 70 minutes (its best samples at ~300; the walkers
fell in some episodes) went to a rolling mean of ~255 within 30 minutes once resumed with 4
episodes per evaluation (``islands/envdefaults.py`` has the runs). With ``--episodes-cap 4``
from the start, a seed-1 run never stalled for 50 generations within its first hour; its
islands went to 2 episodes at 5,120 s and 5,370 s, with population means at 278 and 299.
With ``--episodes-cap 4 --restart-patience 20`` a seed-3 run that the one-episode row left
unsolved at 3,600 s solved in 1,772 s; BipedalWalker's row now sets both
(``islands/envdefaults.py`` has the runs).

The probes, measured with ``benchmarks/fitness_noise.py`` (the same figure from a run's
checkpoint) on a BipedalWalker island at generation 130 (population mean 127): rho 0.44,
half of the one-episode fitness spread noise (its sibling island: 0.61, a quarter); at
generation 280-310 rho 0.57 (an island whose walkers still fell) and 0.78 (one that walked
steadily, center 281 +- 2). A first version that doubled on agreement alone doubled a
BipedalWalker island at generation 60, population mean ~100 and still rising fast: that is
why the rule also asks for a flat population mean. With that rule (``--probe-interval 10``,
BipedalWalker seed 0, quiet) the probes did all the doubling, early: island 1 to 2
episodes at generation 170 (rho 0.38, mean 169 -> 158 over the window) and to 4 at 220
(0.48, 200 -> 195), island 0 to 2 at 190 (0.41, 213 -> 212); after 20 minutes (27.8K
episodes) both population means were at 207-211, where the old one-episode row's seed-0
run stood at 240 after 20K episodes (and the same seed without probes, patience 20, at
180-195 after 20K and 210-220 after 55K: neither clearly better nor worse). A flat mean
over 30 generations is not yet the noise-limited steady state, so the probes stay off by
default until a rule is measured that helps; stagnation alone (patience 20) did the
doubling in the runs that solved.

The schedule's state (current episodes, doublings, the stagnation count, the recent
probes' agreements and levels) is plain data, checkpointed with the island, so a resumed
island evaluates as the original did.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..strategies.base import sanitize_fitness
from .restarts import Stagnation

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
