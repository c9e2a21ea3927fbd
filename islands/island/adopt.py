"""Selection among islands: ``--migrant-rule adopt``.

By default an immigrant enters the strategy as one sample (pycma's ``inject``; OpenAI-ES and
ARS re-center only on one that beats everything the island has seen, its best so far, a
record that lucky samples set high), so islands run nearly independently.

With ``adopt``, the best immigrant of a call moves the receiving island's search center
(:meth:`islands.strategies.base.Strategy.adopt`) when its fitness beats the best of the
island's latest generation: the two are the same statistic (the best training fitness of one
generation of a population of the same size, the sender's measured on its own episodes), so
an island that has fallen behind continues from the leader's best genome with its own step
size and covariance, and the lead island is left alone. This is the "exploit" step of
population-based training (M. Jaderberg et al. 2017, arXiv:1711.09846) applied to the
islands' search points, at the migration interval. Under ``--hp-spread`` the adopting
island takes the sender's fixed settings too, perturbed: PBT's exploit and explore of the
strategy's settings (:mod:`islands.island.spread`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..seeds import strategy_seed
from .hooks import Hook
from .spread import adopted_settings


class Adoption(Hook):
    """Keeps the best fitness of the island's latest generation; :meth:`offer` adopts."""

    state_key = "adoption"

    def __init__(self) -> None:
        self.reference = -math.inf  # nothing evaluated yet: no immigrant is adopted

    def after_generation(self, island, gen) -> None:
        f = np.asarray(gen.fitness, dtype=np.float64)
        f = f[np.isfinite(f)]
        self.reference = float(f.max()) if f.size else -math.inf

    def offer(self, island, P: np.ndarray, f: np.ndarray,
              carried: dict[str, float] | None = None) -> bool:
        """Adopt the best of migrants ``P`` (fitness ``f``) if it beats the reference;
        whether it did. The adopted fitness becomes the reference, so a later batch of the
        same call must beat it. ``carried``: the sender's settings, taken perturbed with
        the genome (``--hp-spread``: islands/island/spread.py); None: the island's own."""
        if not np.isfinite(f).any() or not math.isfinite(self.reference):
            return False
        j = int(np.nanargmax(np.where(np.isfinite(f), f, -np.inf)))
        if not f[j] > self.reference:
            return False
        island.strategy.adopt(P[j], float(f[j]))
        settings = adopted_settings(island.strategy, carried,
                                    strategy_seed(island.run_seed, island.index),
                                    island.counters.adopted, island.hp_limits)
        if settings:
            island.strategy.set_hyperparameters(settings)
        island.counters.adopted += 1
        self.reference = float(f[j])
        return True

    def state_dict(self) -> Any:
        return {"reference": self.reference}

    def load_state(self, island, d: Any) -> None:
        self.reference = -math.inf if not d else float(d["reference"])
