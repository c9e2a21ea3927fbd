"""Immigrant screening: a receiving island re-evaluates migrants on its own episodes first.

A migrant arrives with the fitness its home island measured: the best of a population on
that island's few episodes, so biased upwards (the winner's curse of selection under noise),
and on episodes the receiver never saw. Injected on that claim, a lucky elite can pull a
good search center away (OpenAI-ES re-centers on a migrant that beats its best; a GA keeps
it as an elite). With ``--migrant-episodes N`` the receiver evaluates every migrant and its
own search center on the same ``N`` fresh episodes (common random numbers: the comparison is
paired) and injects only the migrants that beat the center there, with that unbiased fitness
in place of the sender's claim; the others are counted as ``screened_out``. The cost is
``(k + 1) x N`` episodes per migration of ``k`` genomes; they count as training episodes.

Uncertainty handling in evolution strategies re-evaluates to decide under noise (N. Hansen,
A. S. P. Niederberger, L. Guzzella and P. Koumoutsakos 2009, "A method for handling
uncertainty in evolutionary optimization with an application to feedback control of
combustion", IEEE TEC 13(1)); this applies the same idea at the island's border.
Measured: docs/results/migrant-screening.md.
"""

from __future__ import annotations

import logging

import numpy as np

from ..seeds import screen_seed

log = logging.getLogger("islands.island")


def screen(island, P: np.ndarray, source) -> np.ndarray | None:
    """``P``'s fitness on the island's fresh episodes, -inf where a migrant does not beat the
    island's search center on them; None when screening is off (``migrant_episodes`` 0, or
    no re-evaluator)."""
    n = int(island.spec.run.migrant_episodes)
    if n <= 0 or island.reevaluator is None or not len(P):
        return None
    X = np.concatenate([P, island.strategy.center[None, :]])
    seed = screen_seed(island.run_seed, island.index, island.generation)
    means = island.reevaluate(X, n, seed).mean(axis=1)
    f, center = means[:-1], means[-1]
    keep = f > center
    if not keep.all():
        log.info("island %d: screened out %d of %d migrant(s) from island %s (%.4g <= its "
                 "center's %.4g on %d fresh episodes)", island.index, int((~keep).sum()),
                 len(f), source, float(f[~keep].max()), float(center), n)
    return np.where(keep, f, -np.inf)
