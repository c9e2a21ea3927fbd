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

from .noise_table import (
    DEFAULT_TABLE_SEED,
    DEFAULT_TABLE_SIZE,
    NoiseTable,
    reconstruct,
    resolve_access,
    resolve_device,
)
from .openai_es import DEFAULTS, OpenAIES

__all__ = ["NT_DEFAULTS", "OpenAIESNT", "reconstruct"]  # reconstruct: re-exported

NT_DEFAULTS = {
    "device": "cpu",
    "table_size": DEFAULT_TABLE_SIZE,
    "table_seed": DEFAULT_TABLE_SEED,
    "dtype": "float32",
    "noise_access": "auto",
}


class OpenAIESNT(OpenAIES):
    """OpenAI-ES with a noise table on a torch device; see the module docstring."""

    name = "openai-es-nt"
    OPTIONS = {**DEFAULTS, **NT_DEFAULTS}
    _asked_dtype = np.int64  # a generation is kept as its popsize/2 table offsets

    def _setup(self, options: dict) -> None:
        opts = {k: options.get(k, v) for k, v in NT_DEFAULTS.items()}
        self.device = resolve_device(opts["device"])
        self.noise_access = resolve_access(opts["noise_access"], self.device)
        self.table = self._table(opts["table_seed"], opts["table_size"], opts["dtype"])
        self._last_offsets: np.ndarray | None = None  # offsets of the last asked generation
        self._asked_theta: torch.Tensor | None = None  # the theta it was asked around
        self.last_weights: np.ndarray | None = None  # w_j of the last update (_gradient)

    def _table(self, seed, size, dtype) -> NoiseTable:
        if isinstance(size, bool) or int(size) != size or int(size) < self.dim + self.popsize:
            raise ValueError(f"table_size must be an integer >= dim + popsize = "
                             f"{self.dim + self.popsize}, got {size!r}")
        if isinstance(seed, bool) or int(seed) != seed:
            raise ValueError(f"table_seed must be an integer, got {seed!r}")
        return NoiseTable.shared(int(seed), int(size), self.device, dtype)

    def _vector(self, x: np.ndarray) -> torch.Tensor:
        return torch.tensor(np.asarray(x, dtype=np.float64), device=self.device)

    def _to_host(self, x):
        if isinstance(x, torch.Tensor):
            return x.detach().to("cpu", torch.float64).numpy()
        return x

    @property
    def asked_center(self) -> np.ndarray | None:
        """The center the last asked generation was sampled around (None before any)."""
        return None if self._asked_theta is None else np.array(self._to_host(self._asked_theta))

    # ---- asking ----------------------------------------------------------------------------
    def _ask(self) -> np.ndarray:
        """The generation as kept until its tell: ``popsize/2`` offsets drawn from the seeded
        Generator; the genomes are built from them and the current theta on demand."""
        self._stale = False
        self._last_offsets = self.table.sample_offsets(self._rng, self.popsize // 2, self.dim)
        self._asked_theta = self.theta  # never modified in place: updates make a new tensor
        return self._last_offsets

    def _population(self, off: np.ndarray) -> torch.Tensor:
        """The population ``(popsize, dim)`` in ``dtype`` on ``device``: the windows gathered
        straight into the output, then scaled and shifted in place (as openai-es does)."""
        h = self.popsize // 2
        X = torch.empty((self.popsize, self.dim), dtype=self.table.dtype, device=self.device)
        step = self.table.gather(off, self.dim, out=X[:h], method=self.noise_access)
        step.mul_(self.sigma)
        c = self._asked_theta.to(self.table.dtype)
        torch.sub(c, step, out=X[h:])
        step.add_(c)
        return X

    def ask_tensor(self) -> torch.Tensor:
        """Start a generation: the population ``(popsize, dim)`` in ``dtype`` on ``device``
        (:meth:`~islands.strategies.base.Strategy.ask_native`). Answer with ``tell``."""
        return self.ask_native()

    def ask_offsets(self) -> tuple[np.ndarray, np.ndarray]:
        """Start a generation without building it: ``(offsets, signs)``, each ``(popsize,)``
        int64; row ``i`` of the population is ``center + signs[i] * sigma *
        table[offsets[i] : offsets[i] + dim]``. Answer with ``tell``."""
        self._begin_generation()
        return self.last_offsets

    @property
    def last_offsets(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(offsets, signs)`` of the last asked generation, each ``(popsize,)``."""
        if self._last_offsets is None:
            return None
        h = len(self._last_offsets)
        return (np.concatenate([self._last_offsets, self._last_offsets]),
                np.repeat(np.array([1, -1], dtype=np.int64), h))

    def describe(self, i: int) -> tuple[int, int]:
        """``(offset, sign)`` of row ``i`` of the last asked generation; the genome is
        ``reconstruct([offset], [sign], asked_center)``."""
        if self._last_offsets is None:
            raise RuntimeError("describe() needs a generation: call ask() first")
        if not 0 <= int(i) < self.popsize:
            raise ValueError(f"row must be in [0, {self.popsize}), got {i}")
        h = self.popsize // 2
        return int(self._last_offsets[int(i) % h]), 1 if int(i) < h else -1

    def reconstruct(self, offsets, signs, center=None, sigma: float | None = None
                    ) -> np.ndarray:
        """Genomes ``(k, dim)`` float64 from ``(offset, sign)`` pairs, bit-identical to the
        rows :meth:`ask` returned. ``center`` defaults to :attr:`asked_center`, ``sigma`` to
        this strategy's."""
        if center is None:
            if self._asked_theta is None:
                raise RuntimeError("reconstruct() needs a center: none asked yet")
            center = self._asked_theta
        sigma = self.sigma if sigma is None else float(sigma)
        X = self.table.perturb(center, offsets, signs, sigma, self.noise_access)
        return X.to("cpu", torch.float64).numpy()

    def _asked_row(self, i: int) -> np.ndarray:
        off, sign = self.describe(i)  # only the new best-so-far's genome comes to the host
        return self.reconstruct([off], [sign])[0]

    # ---- telling ---------------------------------------------------------------------------
    def _gradient(self, off: np.ndarray, u: np.ndarray) -> torch.Tensor:
        """openai-es's ``g`` as ``sum_j w_j eps_j`` with ``w_j = (u_j+ - u_j-) / n``, summed
        from the table windows in place (the weights are kept as :attr:`last_weights`)."""
        h = self.popsize // 2
        self.last_weights = (u[:h] - u[h:]) / self.popsize
        return self.table.weighted_sum(off, self.last_weights, self.dim, self.noise_access)

    # ---- state -----------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        return {
            **super()._state(),
            "table_seed": self.table.seed,
            "table_size": self.table.size,
            "dtype": self.table.dtype_name,
            "table_fingerprint": self.table.fingerprint,
            "last_offsets": None if self._last_offsets is None else self._last_offsets.copy(),
            "asked_theta": self.asked_center,
            "last_weights": None if self.last_weights is None else self.last_weights.copy(),
        }

    def _load_state(self, d: dict[str, Any]) -> None:
        super()._load_state(d)
        self.table = self._table(int(d["table_seed"]), int(d["table_size"]), str(d["dtype"]))
        if self.table.fingerprint != str(d["table_fingerprint"]):
            raise ValueError(
                f"noise table (seed {self.table.seed}, size {self.table.size}) differs from "
                f"the saved one (fingerprint {self.table.fingerprint} != "
                f"{d['table_fingerprint']}): this torch build draws other normals"
            )
        last, theta, lw = d["last_offsets"], d["asked_theta"], d["last_weights"]
        self._last_offsets = None if last is None else np.array(last, np.int64)
        self._asked_theta = None if theta is None else self._vector(theta)
        self.last_weights = None if lw is None else np.array(lw, np.float64)
