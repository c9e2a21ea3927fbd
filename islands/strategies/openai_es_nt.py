"""OpenAI-ES on a torch device with a shared noise table ("openai-es-nt").

The maths, defaults, Adam (Kingma & Ba 2015) and migrant rule are those of
:mod:`islands.strategies.openai_es` (Salimans et al. 2017), inherited from
:class:`~islands.strategies.openai_es.OpenAIES`; what changes is where the noise comes from
and where the arithmetic runs.

Noise (:mod:`islands.strategies.noise_table`): the shared noise table of Salimans et al.
(2017) and their evolution-strategies-starter, so that workers exchange offsets, not
vectors. Perturbation ``j`` is the window ``eps_j = table[off_j : off_j + dim]`` of a table
of standard normals that is a function of ``(table_seed, table_size)`` alone, the same on
every device (never checkpointed or shipped: the state holds the seed, the size and a
fingerprint checked on load). Rows ``j`` and ``j + n/2`` of the population are ``theta +
sigma eps_j`` and ``theta - sigma eps_j``. So a generation is kept as its ``n/2`` offsets
(what ``_ask`` returns), a genome is ``(offset, sign)`` plus the center it was asked around
(:meth:`OpenAIESNT.describe`, :meth:`OpenAIESNT.reconstruct`, :func:`reconstruct`) and an
update is ``(offsets, weights)`` (:attr:`OpenAIESNT.last_weights`). Islands default to the
same table seed, so a receiver can rebuild a sender's genome from its description.

Precision. ``theta``, Adam's moments and the gradient are float64 on the device (dim-sized;
the center, ``x0`` and migrants stay exact). The table and the population are in ``dtype``
(float32 by default, what GPU policies consume). A genome is ``c + sigma * eps`` with ``c =
theta`` rounded to ``dtype``, computed in ``dtype``; ``ask`` returns those values as
float64, bit-identical to :meth:`OpenAIESNT.reconstruct`. With ``dtype="float64"`` this is
openai-es's arithmetic on the same ``eps``, up to rounding (tests/test_noise_table.py). The
update never forms the ``(n, dim)`` noise matrix (:meth:`NoiseTable.weighted_sum`).

Device path: :meth:`OpenAIESNT.ask_tensor` returns the population on ``device`` (no host
copy) for :class:`envs.torch_evaluator.TorchEvaluator` (``IslandCore._ask`` uses it);
:meth:`OpenAIESNT.ask_offsets` starts a generation without building it (for workers with
their own copy of the table); ``tell`` takes numpy or torch fitness. Per generation only
the fitness crosses to the host, plus one genome when a new best-so-far appears.

Options (besides openai-es's): ``device`` ("cpu"), ``table_size`` (2**25 floats, at least
``dim + popsize``), ``table_seed`` (123, evolution-strategies-starter's), ``dtype``
("float32" / "float64") and ``noise_access`` ("loop" / "gather" / "auto": gather on CUDA;
see :mod:`islands.strategies.noise_table`). ``device`` and ``noise_access`` belong to the
instance, not the state, so a state saved on a GPU loads on a CPU; the continuation after a
load is bit-identical on the same device and ``noise_access``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .noise_table import reconstruct
from .openai_es import DEFAULTS, OpenAIES
from .table_noise import NT_DEFAULTS, TableNoise

__all__ = ["NT_DEFAULTS", "OpenAIESNT", "reconstruct"]  # re-exported


class OpenAIESNT(TableNoise, OpenAIES):
    """OpenAI-ES with a noise table on a torch device; see the module docstring."""

    name = "openai-es-nt"
    OPTIONS = {**DEFAULTS, **NT_DEFAULTS}

    def _setup(self, options: dict) -> None:
        super()._setup(options)
        self.last_weights: np.ndarray | None = None  # w_j of the last update (_gradient)

    def _gradient(self, off: np.ndarray, u: np.ndarray) -> torch.Tensor:
        """openai-es's ``g`` as ``sum_j w_j eps_j`` with ``w_j = (u_j+ - u_j-) / n``, summed
        from the table windows in place (the weights are kept as :attr:`last_weights`)."""
        h = self.popsize // 2
        self.last_weights = (u[:h] - u[h:]) / self.popsize
        return self.table.weighted_sum(off, self.last_weights, self.dim, self.noise_access)

    def _state(self) -> dict[str, Any]:
        lw = self.last_weights
        return {**super()._state(), "last_weights": None if lw is None else lw.copy()}

    def _load_state(self, d: dict[str, Any]) -> None:
        super()._load_state(d)
        lw = d["last_weights"]
        self.last_weights = None if lw is None else np.array(lw, np.float64)
