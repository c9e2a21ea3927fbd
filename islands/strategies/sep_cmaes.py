"""sep-CMA-ES: CMA-ES with a diagonal covariance matrix, through pycma.

R. Ros and N. Hansen (2008), "A simple modification in CMA-ES achieving linear time and
space complexity", PPSN X, LNCS 5199. The algorithm is pycma's ``CMAEvolutionStrategy`` with
option ``CMA_diagonal=True``; everything else (migrants through ``inject``, plain-data state
capture, the numpy Generator behind ``randn``) is shared with :mod:`islands.strategies.cmaes`.

The maths: as CMA-ES with ``C = diag(c)``, sampling ``x_k = m + sigma * sqrt(c) * z_k`` and
updating only the diagonal,

    c = (1 - c1' - cmu' sum w) c + c1' p_c^2 + cmu' sum_i w_i y_i^2      (elementwise)

with the learning rates enlarged by about ``(n + 2) / 3`` (``c1_sep``, ``cmu_sep``) because
n parameters are learned instead of n^2/2. Cost per generation and memory are O(lambda n):
pycma keeps the diagonal in a ``DiagonalDecoding`` vector and samples through
``GaussStandardConstant``, and never allocates an n x n matrix in this mode (full CMA would
need 80 GB for C alone at n = 100,000; measured memory: docs/results/strategy-overhead.md).
The price is that correlations between parameters are not learned.

Defaults:

=============  ==================  =====================================================
parameter      default             source / why
=============  ==================  =====================================================
popsize        4 + floor(3 ln n)   Hansen (2016); 38 at n = 100,000
sigma          0.1                 as for ``cmaes`` (scale of small-network weights)
c1, cmu        pycma's c1_sep,     Ros and Hansen (2008)
               cmu_sep
=============  ==================  =====================================================
"""

from __future__ import annotations

from .cmaes import CMAES


class SepCMAES(CMAES):
    """Diagonal CMA-ES (pycma ``CMA_diagonal=True``): linear time and memory in ``dim``."""

    name = "sep-cmaes"
    _diagonal = True
