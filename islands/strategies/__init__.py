"""The strategy library: a registry and a factory.

``make("cmaes", dim=...)`` builds a :class:`~islands.strategies.base.Strategy`. Every
strategy maximizes fitness; defaults are documented in each strategy's module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from policies.registry import LazyRegistry

from .ars import ARS
from .base import Strategy
from .cmaes import CMAES
from .ga import GA
from .openai_es import OpenAIES
from .sep_cmaes import SepCMAES

if TYPE_CHECKING:
    from .ars_nt import ARSNT
    from .openai_es_nt import OpenAIESNT

# openai-es-nt and ars-nt (torch, a noise table) are imported on first lookup; the others are numpy
# (pycma itself loads when a CMA-ES is built: strategies/cmaes.py)
STRATEGIES: LazyRegistry = LazyRegistry({
    "cmaes": CMAES,
    "sep-cmaes": SepCMAES,
    "openai-es": OpenAIES,
    "openai-es-nt": "islands.strategies.openai_es_nt:OpenAIESNT",
    "ga": GA,
    "ars": ARS,
    "ars-nt": "islands.strategies.ars_nt:ARSNT",
})


def __getattr__(name: str) -> Any:
    if name == "OpenAIESNT":  # PEP 562: the class on first use, as in the registry
        return STRATEGIES["openai-es-nt"]
    if name == "ARSNT":
        return STRATEGIES["ars-nt"]
    raise AttributeError(f"module 'islands.strategies' has no attribute {name!r}")


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
           "ARS", "ARSNT"]
