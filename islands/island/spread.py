"""Population-based training of a strategy's settings across the islands: ``--hp-spread F``.

Every island otherwise runs the same fixed settings (ARS's and OpenAI-ES's step size ``lr``
and noise ``sigma``, GA's mutation strength: :attr:`Strategy.TUNABLE`), though the ARS paper
tunes both per task (its Table 9) and a run cannot know them in advance. With a spread ``F``
island ``i`` of ``n`` starts with each setting multiplied by ``F ** u``, the ``u`` evenly
spaced over ``[-1, 1]`` (so ``[1/F, F]`` around the table's value, log-symmetric), in an
order drawn per setting from the run seed, so no two settings move together
(:func:`islands.planning.spread_factors`, which plans them into ``IslandSpec.hp_factors``).

With ``--migrant-rule adopt`` the settings travel with the migrants: an island that adopts
a better island's genome takes that island's settings too, each multiplied by 0.8 or 1.2 at
random. These are the "exploit" and "explore" steps of population-based training (M.
Jaderberg et al. 2017, arXiv:1711.09846, section 3: "perturb" by 0.8 or 1.2), run at the
migration interval inside one run, across islands, where Ray Tune's PBT runs them across
trials. Without ``adopt`` the spread is a fixed portfolio: each island keeps its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import strategies

PERTURB = (0.8, 1.2)  # PBT's explore factors (Jaderberg et al. 2017, section 3)


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


def explore(values: dict[str, Any], rng: np.random.Generator) -> dict[str, float]:
    """PBT's perturbation: each setting times 0.8 or 1.2, drawn independently."""
    return {k: float(v) * float(rng.choice(PERTURB)) for k, v in sorted(values.items())}


def adopted_settings(strategy, carried: dict[str, float] | None, seed: int,
                     adoption: int) -> dict[str, float] | None:
    """The settings an island runs with after adopting a migrant that carried ``carried``
    (its sender's): the ones this strategy can take, perturbed by a draw of (``seed``,
    ``adoption``), the island's seed and how many adoptions it made before (so a resumed
    run draws the same); None when the migrant carried none this strategy takes."""
    take = {k: v for k, v in (carried or {}).items() if k in strategy.TUNABLE}
    if not take:
        return None
    return explore(take, np.random.default_rng([int(seed), int(adoption), 0xAD0B7]))
