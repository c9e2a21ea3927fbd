"""What one island is asked to be: :class:`IslandSpec`, the plan's row for one island, and
:class:`RunSettings`, what all the run's islands share.

Planned by :func:`islands.planning.plan_islands` from the config, read by the island's core
(:mod:`islands.island.core`) and by the actor that hosts it. It lives here, below planning
and the config, so that the island imports nothing above itself.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .restarts import DEFAULT_PATIENCE


@dataclass(frozen=True)
class RunSettings:
    """What every island of a run shares: planned once from the config
    (:func:`islands.planning.run_settings`) and held by each :class:`IslandSpec` as one
    object, so a per-island row carries only what differs between islands."""

    emigrants: int = 1  # genomes returned per call
    # A call whose best sample reaches this also offers that sample and the island's search
    # center as candidates to test (messages.CandidateOffer); None: never.
    candidate_threshold: float | None = None
    # ... each first re-evaluated on this many fresh training episodes (0: not; reeval.py)
    reeval_episodes: int = 0
    candidate_kinds: tuple[str, ...] = ("center", "sample")  # which it offers (--candidates)
    restart_patience: int = DEFAULT_PATIENCE  # G, generations without improvement
    # episodes per evaluation double on stagnation up to this (None: fixed; resampling.py)
    episodes_cap: int | None = None
    probe_interval: int = 0  # ... and on ranking probes every this many generations (0: off)
    # subtracted from every training step's reward (a survival bonus removed; island/core.py)
    reward_shift: float = 0.0
    # immigrants re-evaluated on this many fresh episodes beside the center (0: not; screen.py)
    migrant_episodes: int = 0
    adopt: bool = False  # immigrants move the center when they beat the island (adopt.py)
    # --hp-spread: islands' settings spread within [1/F, F] times the unspread value; with
    # adopt, an island takes an adopted migrant's settings, perturbed, within the same band
    hp_spread: float = 1.0

    @property
    def hp_travel(self) -> bool:
        """Settings travel with adopted migrants (--hp-spread with adopt)."""
        return self.hp_spread != 1.0 and self.adopt


@dataclass(frozen=True)
class IslandSpec:
    """One island of the plan: its strategy and settings, what it asks Ray for, and the
    run's shared settings (``run``)."""

    index: int
    strategy: str
    popsize: int | None = None  # None: the strategy's default
    sigma: float | None = None  # None: the strategy's default
    options: dict[str, Any] = field(default_factory=dict)  # strategy keyword arguments
    episodes: int = 1  # per fitness evaluation
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    resources: dict[str, float] = field(default_factory=dict)
    slowdown_s: float = 0.0  # debug: sleep after each generation (an island slow on purpose)
    debug_exit_after_gen: int | None = None  # debug (fault tests): exit once, there
    restart: str = "none"  # restart policy against stagnation (islands.island.restarts)
    backend: str | None = None  # this island's evaluator backend (None: the run's)
    # where its strategy starts (None: the policy's random init); an elastic run's new
    # islands start at the hall of fame's genome (islands/runtime/elastic.py)
    x0: tuple[float, ...] | None = None
    # its strategy's fixed settings times these (--hp-spread: islands/island/spread.py)
    hp_factors: dict[str, float] = field(default_factory=dict)
    run: RunSettings = field(default_factory=RunSettings)

    def needs(self) -> dict[str, float]:
        """Ray resources of this island's actor (zero amounts left out)."""
        need = {"CPU": self.num_cpus, "GPU": self.num_gpus, **self.resources}
        return {k: float(v) for k, v in need.items() if v}

    def replace(self, **changes: Any) -> IslandSpec:
        return dataclasses.replace(self, **changes)
