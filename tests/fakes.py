"""Island results as an island's call returns them, built by hand for tests of the
coordinator, the candidate queue, the loop's bookkeeping and the status table (one
builder instead of a copy per test file)."""

from __future__ import annotations

from typing import Any

import numpy as np

from islands.messages import CandidateOffer, Emigrants, EvolveResult, IslandReport


def island_result(i: int, g: int, fitness, dim: int = 3, *, params: float | None = None,
                  strategy: str = "cmaes", offers: list[CandidateOffer] | None = None,
                  obs: dict[str, Any] | None = None, stats: dict[str, Any] | None = None,
                  sent_at: float = 0.0, **report: Any) -> EvolveResult:
    """Island ``i``'s result at generation ``g``: its emigrants have ``fitness`` (a number
    or one per emigrant) and genomes of ``dim`` parameters, each filled with its fitness
    (or with ``params``); ``report`` sets more of the report's fields."""
    f = np.atleast_1d(np.asarray(fitness, dtype=float))
    genomes = (np.tile(f[:, None], (1, dim)) if params is None
               else np.full((len(f), dim), float(params)))
    return EvolveResult(
        report=IslandReport(island=i, strategy=strategy, generation=g, **report),
        emigrants=Emigrants(genomes, f, i, g, sent_at), offers=list(offers or []),
        obs_delta=obs, obs_stats=stats)
