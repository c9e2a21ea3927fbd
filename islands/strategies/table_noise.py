"""The noise of openai-es-nt and ars-nt: mirrored pairs from a shared noise table on a torch
device (:class:`TableNoise`). The scheme, its precision and the device path are described in
:mod:`islands.strategies.openai_es_nt`; a strategy combines this mixin with its
:class:`~islands.strategies.mirrored.MirroredES` (``class X(TableNoise, Base)``) and sums its
update from the table windows (``self.table.weighted_sum``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .noise_table import (
    DEFAULT_TABLE_SEED,
    DEFAULT_TABLE_SIZE,
    NoiseTable,
    resolve_access,
    resolve_device,
)

NT_DEFAULTS = {
    "device": "cpu",
    "table_size": DEFAULT_TABLE_SIZE,
    "table_seed": DEFAULT_TABLE_SEED,
    "dtype": "float32",
    "noise_access": "auto",
}


class TableNoise:
    """Mirrored noise from a shared table on a torch device, for a
    :class:`~islands.strategies.mirrored.MirroredES` (listed first among its bases); see
    :mod:`islands.strategies.openai_es_nt` for the scheme."""

    _asked_dtype = np.int64  # a generation is kept as its popsize/2 table offsets

    def _setup(self, options: dict) -> None:
        opts = {k: options.get(k, v) for k, v in NT_DEFAULTS.items()}
        self.device = resolve_device(opts["device"])
        self.noise_access = resolve_access(opts["noise_access"], self.device)
        self.table = self._table(opts["table_seed"], opts["table_size"], opts["dtype"])
        self._last_offsets: np.ndarray | None = None  # offsets of the last asked generation
        self._asked_theta: torch.Tensor | None = None  # the theta it was asked around

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
        last, theta = d["last_offsets"], d["asked_theta"]
        self._last_offsets = None if last is None else np.array(last, np.int64)
        self._asked_theta = None if theta is None else self._vector(theta)
