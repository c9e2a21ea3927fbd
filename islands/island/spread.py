"""Population-based training of a strategy's settings across the islands: ``--hp-spread F``.

Every island otherwise runs the same fixed settings (ARS's and OpenAI-ES's step size ``lr``
and noise ``sigma``, GA's mutation strength: :attr:`Strategy.TUNABLE`), though the ARS paper
tunes both per task (its Table 9) and a run cannot know them in advance. With a spread ``F``
island ``i`` of ``n`` starts with each setting multiplied by ``F ** u``, the ``u`` evenly
spaced over ``[-1, 1]`` (so ``[1/F, F]`` around the table's value, log-symmetric), in an
order drawn per setting from the run seed, so no two settings move together
(:func:`islands.planning.spread_factors`, which plans them into ``IslandSpec.hp_factors``).

With ``--migrant-rule adopt`` the settings travel with the migrants: an island that adopts
a better island's genome takes that island's settings too, each multiplied by 1/1.2 or 1.2
at random and kept within ``[1/F, F]`` times the table's value. These are the "exploit" and
"explore" steps of population-based training (M. Jaderberg et al. 2017, arXiv:1711.09846,
section 3, which perturbs by 0.8 or 1.2), run at the migration interval inside one run,
across islands, where Ray Tune's PBT runs them across trials. Without ``adopt`` the spread
is a fixed portfolio: each island keeps its own.

Why the walk is bounded and log-symmetric: with PBT's 0.8 / 1.2 (a drift of -0.02 in log
per adoption) and no bound, two ARS islands adopting at almost every migration walked their
settings to a tenth of the table's and stalled near Hopper's target
(docs/results/islands-vs-one/, sections 3-4).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import strategies

PERTURB = (1 / 1.2, 1.2)  # PBT's explore factors made log-symmetric: no drift


def make_spread(factors: dict[str, float], *args, **kwargs):
    """``strategies.make(*args, **kwargs)`` with its fixed settings times ``factors`` (the
    island's ``IslandSpec.hp_factors``); every run of a restarting island is built so."""
    strategy = strategies.make(*args, **kwargs)
    if factors:
        strategy.set_hyperparameters(scaled(strategy.hyperparameters(), factors))
    return strategy


def scaled(values: dict[str, float], factors: dict[str, float]) -> dict[str, float]:
    """``values`` with each setting that has a factor multiplied by it."""
    return {k: v * factors.get(k, 1.0) for k, v in values.items()}


def explore(values: dict[str, Any], rng: np.random.Generator,
            bounds: dict[str, tuple[float, float]] | None = None) -> dict[str, float]:
    """PBT's perturbation: each setting times 1/1.2 or 1.2, drawn independently, then
    clipped to its ``bounds`` (low, high) where it has some."""
    out = {k: float(v) * float(rng.choice(PERTURB)) for k, v in sorted(values.items())}
    return {k: float(np.clip(v, *(bounds or {}).get(k, (-np.inf, np.inf))))
            for k, v in out.items()}


def bounds(table: dict[str, float], spread: float) -> dict[str, tuple[float, float]]:
    """Each setting's range under a spread ``F``: ``[1/F, F]`` times its ``table`` value,
    the range the planned islands cover (:func:`islands.planning.spread_factors`)."""
    return {k: (v / spread, v * spread) for k, v in table.items()}


def limits_of(strategy, factors: dict[str, float], spread: float
              ) -> dict[str, tuple[float, float]]:
    """The ranges of a freshly built island's settings (its table values times its
    ``factors``): :func:`bounds` of the table values it was spread from."""
    return bounds(scaled(strategy.hyperparameters(), {k: 1 / v for k, v in factors.items()}),
                  spread)


def adopted_settings(strategy, carried: dict[str, float] | None, seed: int,
                     adoption: int, limits: dict[str, tuple[float, float]] | None = None
                     ) -> dict[str, float] | None:
    """The settings an island runs with after adopting a migrant that carried ``carried``
    (its sender's): the ones this strategy can take, perturbed by a draw of (``seed``,
    ``adoption``), the island's seed and how many adoptions it made before (so a resumed
    run draws the same), within ``limits`` (:func:`bounds`); None when the migrant carried
    none this strategy takes."""
    take = {k: v for k, v in (carried or {}).items() if k in strategy.TUNABLE}
    if not take:
        return None
    return explore(take, np.random.default_rng([int(seed), int(adoption), 0xAD0B7]), limits)
