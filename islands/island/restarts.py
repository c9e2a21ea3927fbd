"""Per-island restarts against stagnation: when an island's strategy starts afresh, and how.

After every generation an island's :class:`RestartHook` asks its :class:`Restarter` (plain
Python, no Ray) whether to restart; it does when

* the island stagnates: over its last ``patience`` (G) generations neither the median of
  the generations' medians nor the median of their best values beat the same over the G
  generations before (:class:`WindowStagnation`, pycma's ``tolstagnation`` test with a
  window of G); or
* the strategy itself says it has converged or stalled (``Strategy.stop_reason()``: pycma's
  ``stop()`` for ``cmaes`` / ``sep-cmaes``); or
* a BIPOP small-population run has spent its budget (below).

How it restarts is the island's policy (``--restart``, per island in ``island_specs``):

* ``none``: never restarts (the strategy runs as it always did; nothing is checked).
* ``ipop``: a fresh random start (the policy's initial parameters), the initial step size,
  popsize doubled at each restart (capped at ``max_popsize_factor`` x the base); the fresh
  run takes no migrants for its first ``patience`` generations (``Restarter.isolated``).
  A. Auger and N. Hansen (2005), "A restart CMA evolution strategy with increasing
  population size", IEEE CEC 2005, pp. 1769-1776.
* ``bipop``: two interlaced regimes, each restart taking the one that has used fewer
  evaluations so far: *large*, IPOP's doubling; *small*, popsize ``floor(base * (large /
  (2 base))^(U1^2))`` and step size ``sigma0 * 10^(-2 U2)`` (U1, U2 ~ U(0, 1); ``large``:
  the latest large popsize); migrants as for ipop. N. Hansen (2009), "Benchmarking a
  BI-population CMA-ES on the BBOB-2009 function testbed", GECCO 2009 (BBOB workshop), pp.
  2389-2396. The bookkeeping follows pycma's ``cma.fmin(..., bipop=True)``: the first run
  counts on the small budget (so the first restart is large), and a small run stops once
  it used half the large regime's evaluations.
* ``hof``: the base popsize and initial step size, centered on the best genome the island
  knows (its own best so far, or the best immigrant it received); a fresh random start
  while it knows none.

Every restart is seeded by :func:`restart_seed` (the island's strategy seed and the restart
count), so a run is reproducible and a resumed island restarts exactly as the original did.
The restarter's state is plain data, checkpointed with the island, as are the island's
:class:`Runs` (its generation and best over all runs). Popsizes stay even when the base is
(mirrored-pair strategies need that). Measured: docs/results/restarts.md.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..strategies.base import sanitize_fitness
from .hooks import Generation, Hook

log = logging.getLogger("islands.island")

RESTART_POLICIES = ("none", "ipop", "bipop", "hof")
# G: the window of the stagnation test, in generations. pycma's own test (tolstagnation)
# compares windows of (100 + 100 n^1.5 / popsize) / 10 generations (over 10^4 for a
# 2,804-parameter policy), so islands run it with their own. 50 is a few percent of the env
# table's generation caps (measured: docs/results/restarts.md). The Rastrigin tests use 10,
# where a run stuck in a local basin stops improving within ~10 generations.
DEFAULT_PATIENCE = 50
# IPOP / BIPOP large popsizes stop growing at 32 x the base (5 doublings: 64 -> 2,048): a
# generation costs popsize evaluations, and an island must still report now and then.
DEFAULT_MAX_POPSIZE_FACTOR = 32


@dataclass(frozen=True)
class RestartSettings:
    """An island's restart policy; see the module docstring."""

    policy: str = "none"
    patience: int = DEFAULT_PATIENCE  # G, generations without improvement
    max_popsize_factor: int = DEFAULT_MAX_POPSIZE_FACTOR  # large popsize <= base x this

    def __post_init__(self) -> None:
        if self.policy not in RESTART_POLICIES:
            raise ValueError(f"unknown restart policy {self.policy!r}; choose one of "
                             f"{', '.join(RESTART_POLICIES)}")
        if int(self.patience) < 1 or int(self.max_popsize_factor) < 1:
            raise ValueError("restart patience and max_popsize_factor must be positive, got "
                             f"{self.patience} and {self.max_popsize_factor}")


def restart_seed(seed: int, restarts: int) -> int:
    """Seed of an island's ``restarts``-th restart, from its strategy seed."""
    return int(np.random.SeedSequence([int(seed), int(restarts), 7]).generate_state(1)[0])


class Stagnation:
    """Counts generations in which neither the best fitness nor the median of a generation
    beats the best value it has had since the last ``reset``; stagnant after ``patience``
    such generations in a row (any improvement of either restarts the count).

    The episode schedule (``islands.island.resampling``) uses this record-based test: there a false
    alarm only costs more episodes per evaluation, and more episodes are what make the
    records trustworthy. Restarts use :class:`WindowStagnation`, which noise does not fool."""

    def __init__(self, patience: int) -> None:
        self.patience = int(patience)
        self.reset()

    def reset(self) -> None:
        self.best, self.median, self.flat = -math.inf, -math.inf, 0

    def update(self, fitness) -> bool:
        """Take one generation's fitness (to maximize); True when stagnant."""
        f = sanitize_fitness(fitness)
        if f.size == 0:
            return False
        top, mid = float(f.max()), float(np.median(f))
        if top > self.best or mid > self.median:
            self.flat = 0
        else:
            self.flat += 1
        self.best, self.median = max(self.best, top), max(self.median, mid)
        return self.flat >= self.patience

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "median": self.median, "flat": self.flat}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        self.best, self.median, self.flat = float(d["best"]), float(d["median"]), int(d["flat"])


class WindowStagnation:
    """Stagnant when, over the last ``patience`` (G) generations, neither the median of the
    generations' medians nor the median of their best values beats the same over the G
    generations before (at least 2G generations since the last ``reset``).

    This is pycma's ``tolstagnation`` test (``cma.evolution_strategy._CMAStopDict``: the
    median of the recent ``histmedian`` / ``histbest`` against the median of the window
    before it) with a window of G. Unlike :class:`Stagnation` it does not compare against
    records: on a noisy fitness a record is set by a lucky draw, and an island that is still
    climbing, slower than the noise, fails to beat it for G generations (measured:
    docs/results/restarts.md). The median of G medians barely moves with the noise, so a
    climbing island passes and a stuck one (a flat or sinking window) does not."""

    def __init__(self, patience: int) -> None:
        self.patience = int(patience)
        self.reset()

    def reset(self) -> None:
        self.medians: list[float] = []  # the last 2G generations' (median, best), oldest first
        self.bests: list[float] = []

    def update(self, fitness) -> bool:
        """Take one generation's fitness (to maximize); True when stagnant."""
        f = sanitize_fitness(fitness)
        if f.size == 0:
            return False
        g = self.patience
        self.medians = (self.medians + [float(np.median(f))])[-2 * g:]
        self.bests = (self.bests + [float(f.max())])[-2 * g:]
        if len(self.medians) < 2 * g:
            return False
        return all(np.median(h[g:]) <= np.median(h[:g]) for h in (self.medians, self.bests))

    def state_dict(self) -> dict[str, Any]:
        return {"medians": list(self.medians), "bests": list(self.bests)}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        # a checkpoint of the record-based test (before this one) starts a fresh window
        self.medians = [float(v) for v in d.get("medians", [])]
        self.bests = [float(v) for v in d.get("bests", [])]


@dataclass(frozen=True)
class RestartPlan:
    """How the next run starts: its strategy's popsize, step size, seed and x0."""

    reason: str  # why the previous run ended
    regime: str  # "large" (ipop, bipop), "small" (bipop) or "hof"
    popsize: int
    sigma: float
    seed: int
    x0: np.ndarray


class Restarter:
    """One island's restart bookkeeping: ``check`` after each generation, ``plan`` when it
    says to restart. ``base_popsize`` and ``sigma0`` are the island's first run's."""

    def __init__(self, settings: RestartSettings, *, base_popsize: int, sigma0: float,
                 seed: int) -> None:
        self.settings = settings
        self.base_popsize, self.sigma0, self.seed = int(base_popsize), float(sigma0), int(seed)
        self.stagnation = WindowStagnation(settings.patience)
        self.restarts = 0
        self.doublings = 0  # large-regime restarts so far (the popsize exponent)
        self.regime = "first"
        self.run_evals = 0  # evaluations of the current run
        self.budget = {"small": 0, "large": 0}  # BIPOP: evaluations per regime

    @property
    def enabled(self) -> bool:
        return self.settings.policy != "none"

    def check(self, fitness, strategy) -> str | None:
        """After a generation: why the current run should end now, or None."""
        if not self.enabled:
            return None
        n = int(np.size(fitness))
        self.run_evals += n
        # pycma's BIPOP: the first run is accounted on the small budget
        self.budget["large" if self.regime == "large" else "small"] += n
        if self.stagnation.update(fitness):
            g = self.settings.patience
            return f"no improvement in {g} generations over the {g} before"
        reason = strategy.stop_reason()
        if reason:
            return reason
        if self.regime == "small" and self.run_evals >= 0.5 * self.budget["large"]:
            return "small-population budget spent"
        return None

    def isolated(self, run_generation: int) -> bool:
        """Whether the island keeps migrants out: an IPOP / BIPOP fresh start, for its first
        ``patience`` generations. Migrants come from islands still in the basin this one
        left; injected into a fresh wide population they would outrank every sample and
        pull the run straight back, undoing the restart. After that the run has found its
        own basin and competes with them (the hall of fame keeps the best all along)."""
        return (self.settings.policy in ("ipop", "bipop") and self.restarts > 0
                and run_generation < self.settings.patience)

    def plan(self, reason: str, best_x: np.ndarray | None,
             draw_x0: Callable[[np.random.Generator], np.ndarray]) -> RestartPlan:
        """Count a restart and say how it starts. ``best_x``: the best genome the island
        knows (for hof); ``draw_x0(rng)``: a fresh random start."""
        if not self.enabled:
            raise RuntimeError("restart policy 'none' never restarts")
        self.restarts += 1
        seed = restart_seed(self.seed, self.restarts)
        rng = np.random.default_rng(seed)  # the start, as the island draws its first one
        if self.settings.policy == "hof":
            regime, popsize, sigma = "hof", self.base_popsize, self.sigma0
            x0 = draw_x0(rng) if best_x is None else np.array(best_x, dtype=np.float64)
        else:
            regime, popsize, sigma = self._next_regime(seed)
            x0 = draw_x0(rng)
        self.regime, self.run_evals = regime, 0
        self.stagnation.reset()
        return RestartPlan(reason, regime, self._even(max(popsize, self.base_popsize)),
                           float(sigma), seed, np.asarray(x0, dtype=np.float64))

    def _next_regime(self, seed: int) -> tuple[str, int, float]:
        """(regime, popsize, sigma) of an IPOP / BIPOP restart (module docstring)."""
        if self.settings.policy == "bipop" and self.budget["small"] < self.budget["large"]:
            u1, u2 = np.random.default_rng([seed, 1]).random(2)
            half_large = 0.5 * self._large_popsize() / self.base_popsize
            return ("small", math.floor(self.base_popsize * half_large ** (u1 * u1)),
                    self.sigma0 * 10.0 ** (-2.0 * u2))
        self.doublings += 1
        return "large", self._large_popsize(), self.sigma0

    def _large_popsize(self) -> int:
        factor = min(2 ** self.doublings, self.settings.max_popsize_factor)
        return self.base_popsize * factor

    def _even(self, popsize: int) -> int:
        return popsize + (popsize % 2) if self.base_popsize % 2 == 0 else popsize

    def state_dict(self) -> dict[str, Any]:
        return {"restarts": self.restarts, "doublings": self.doublings, "regime": self.regime,
                "run_evals": self.run_evals, "budget": dict(self.budget),
                "stagnation": self.stagnation.state_dict()}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        self.restarts, self.doublings = int(d["restarts"]), int(d["doublings"])
        self.regime, self.run_evals = str(d["regime"]), int(d["run_evals"])
        self.budget = {k: int(v) for k, v in d["budget"].items()}
        self.stagnation.load_state_dict(d["stagnation"])


class Runs:
    """An island's strategy runs: the current strategy and how it was built (``build``:
    popsize, sigma, seed, x0, passed to ``make``), and what the runs before it leave
    behind: their generations, their best genome and the last one's final center. The
    island's generation and best are over all its runs, so neither ever decreases."""

    def __init__(self, make: Callable[..., Any], build: dict[str, Any]) -> None:
        self.make = make
        self.offset = 0  # generations of the runs before the current one
        self.prev_best: tuple[np.ndarray | None, float] = (None, -math.inf)  # their best
        self.last_center: np.ndarray | None = None  # the ended run's center
        self.start(build)

    def start(self, build: dict[str, Any]) -> None:
        """The current run's strategy, built afresh from ``build`` (kept for checkpoints)."""
        self.build, self.strategy = build, self.make(**build)

    def new_run(self, build: dict[str, Any]) -> None:
        """End the current run (its generations, best and center are kept); start one."""
        self.prev_best, self.last_center = self.best, self.strategy.center
        self.offset += int(self.strategy.generation)
        self.start(build)

    @property
    def generation(self) -> int:
        return self.offset + int(self.strategy.generation)

    @property
    def best(self) -> tuple[np.ndarray | None, float]:
        """(params, fitness) of the best genome of all runs (and the migrants they took)."""
        x, f = self.strategy.best
        return (x, f) if x is not None and f >= self.prev_best[1] else self.prev_best

    def state_dict(self) -> dict[str, Any]:
        """Entries of the island's checkpoint (the strategy's own state is saved beside)."""
        return {"build": dict(self.build), "generation_offset": self.offset,
                "prev_best": {"x": self.prev_best[0], "f": self.prev_best[1]}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """The runs of an island checkpoint; a strategy built other than this one (a
        restarted run: another popsize, step size, seed) is rebuilt before the island loads
        its state. States written before restarts existed hold none of it."""
        build, key = state.get("build"), ("popsize", "sigma", "seed")
        if build is not None and any(build[k] != self.build[k] for k in key):
            self.start({k: build[k] for k in (*key, "x0")})
        self.offset = int(state.get("generation_offset", 0))
        prev = state.get("prev_best") or {"x": None, "f": -np.inf}
        self.prev_best = (None if prev["x"] is None else np.array(prev["x"], np.float64),
                          float(prev["f"]))


class RestartHook(Hook):
    """After each generation: end the island's strategy run when its :class:`Restarter`
    says so and start the next one as it plans (:meth:`Runs.new_run`: the island's
    generation and best carry over). Runs after the episode schedule's hook: a stagnant
    island resamples first (islands.island.resampling)."""

    state_key = "restarter"

    def __init__(self, restarter: Restarter) -> None:
        self.restarter = restarter

    def after_generation(self, island, gen: Generation) -> None:
        reason = self.restarter.check(gen.fitness, island.strategy)
        if not reason:
            return
        plan = self.restarter.plan(reason, island.best[0], island.evaluator.policy.init_params)
        island.runs.new_run(dict(popsize=plan.popsize, sigma=plan.sigma, seed=plan.seed,
                                 x0=plan.x0))
        log.info("island %d: restart %d (%s) at generation %d: %s, popsize %d, sigma %.3g",
                 island.index, self.restarter.restarts, plan.regime, island.generation,
                 reason, island.strategy.popsize, plan.sigma)

    def report(self) -> dict[str, Any]:
        return {"restarts": int(self.restarter.restarts)}

    def state_dict(self) -> dict[str, Any]:
        return self.restarter.state_dict()

    def load_state(self, island, d: dict[str, Any] | None) -> None:
        if d is not None:  # states written before restarts existed: nothing restarted
            self.restarter.load_state_dict(d)
