"""The strategy library: a registry and a factory.

``make("cmaes", dim=...)`` builds a :class:`~islands.strategies.base.Strategy`. Every
strategy maximizes fitness; defaults are documented in each strategy's module.
"""

from __future__ import annotations

from .ars import ARS
from .base import Strategy
from .cmaes import CMAES
from .ga import GA
from .openai_es import OpenAIES
from .openai_es_nt import OpenAIESNT
from .sep_cmaes import SepCMAES

STRATEGIES: dict[str, type[Strategy]] = {
    "cmaes": CMAES,
    "sep-cmaes": SepCMAES,
    "openai-es": OpenAIES,
    "openai-es-nt": OpenAIESNT,
    "ga": GA,
    "ars": ARS,
}


def make(name: str, dim: int, popsize=None, sigma=None, seed: int = 0, x0=None, **options):
    """Build strategy ``name``; unknown names and unknown options raise ValueError."""
    try:
        cls = STRATEGIES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown strategy {name!r}; choose one of {sorted(STRATEGIES)}"
        ) from None
    return cls(dim, popsize=popsize, sigma=sigma, seed=seed, x0=x0, **options)


__all__ = ["STRATEGIES", "Strategy", "make", "CMAES", "SepCMAES", "OpenAIES", "OpenAIESNT", "GA",
           "ARS"]
