"""ARS V2-t on a torch device with a shared noise table ("ars-nt").

The maths, defaults and migrant rule are ars's (:mod:`islands.strategies.ars`, Mania, Guy
and Recht 2018, inherited from :class:`~islands.strategies.ars.ARS`); the noise, the
precision and the device path are openai-es-nt's (:class:`~islands.strategies.table_noise.
TableNoise`): a generation is ``popsize / 2`` table offsets, the population is built on the
device (``ask_tensor``, straight into a torch-native evaluator such as MuJoCo Warp's), and
the step ``sum_k coef_k delta_k`` over the top ``b`` directions is summed from the table
windows (``NoiseTable.weighted_sum``) without forming the ``(b, dim)`` matrix. Per generation
only the fitness crosses to the host. Options: ars's ``lr`` and ``top`` and openai-es-nt's
``device``, ``table_size``, ``table_seed``, ``dtype``, ``noise_access``.
"""

from __future__ import annotations

import numpy as np

from .ars import ARS, ARS_DEFAULTS
from .table_noise import NT_DEFAULTS, TableNoise


class ARSNT(TableNoise, ARS):
    """ARS V2-t with a noise table on a torch device; see the module docstring."""

    name = "ars-nt"
    OPTIONS = {**ARS_DEFAULTS, **NT_DEFAULTS}

    def _step(self, off: np.ndarray, f: np.ndarray) -> None:
        top = self._top(f)
        if top is not None:
            keep, coef = top
            self.theta = self.theta + self.table.weighted_sum(
                off[keep], coef, self.dim, self.noise_access)
