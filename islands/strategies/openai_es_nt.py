"""OpenAI-ES on a torch device with a shared noise table ("openai-es-nt").

The maths, defaults and migrant rule are those of :mod:`islands.strategies.openai_es`
(Salimans et al. 2017): mirrored pairs, centered ranks, ``g = 1/n sum_j (u_j+ - u_j-)
eps_j`` without the ``1/sigma`` factor, L2 decay ``l2 * theta``, Adam ascent, fixed sigma,
and the same migrant rule (a migrant that beats the best-so-far re-centers the search and
resets Adam; an outstanding generation's gradient is then dropped). What changes is where the
noise comes from and where the arithmetic runs.

Noise (:mod:`islands.strategies.noise_table`, after OpenAI's evolution-strategies-starter):
perturbation ``j`` of a generation is the window ``eps_j = table[off_j : off_j + dim]`` of a
table of standard normals that is a function of ``(table_seed, table_size)`` alone, the same
on every device (never checkpointed or shipped: the state holds the seed, the size and a
fingerprint checked on load). Rows ``j`` and ``j + n/2`` of the population are ``theta +
sigma eps_j`` and ``theta - sigma eps_j``. So any genome of this island is ``(offset, sign)``
plus the center it was asked around (:meth:`OpenAIESNT.describe`,
:meth:`OpenAIESNT.reconstruct`, :func:`reconstruct`), and an update is ``(offsets,
weights)`` (:attr:`OpenAIESNT.last_weights`, :meth:`NoiseTable.weighted_sum`). Islands
default to the same table seed, so a receiver can rebuild a sender's genome from its
description.

Precision. ``theta``, Adam's ``m`` and ``v`` and the gradient are float64 on the device
(dim-sized, cheap; the center, ``x0`` and migrants stay exact). The big tensors, the table
and the population, are in ``dtype`` (default float32, what GPU policies consume; the
evaluators cast to float32 anyway). A genome is ``c + sigma * eps`` with ``c = theta``
rounded to ``dtype``, computed in ``dtype``; :meth:`OpenAIESNT.ask` returns those values as
float64, bit-identical to :meth:`OpenAIESNT.reconstruct`. With ``dtype="float64"`` this is
the arithmetic of :class:`~islands.strategies.openai_es.OpenAIES`: fed the same ``eps``, its
first population is bit-identical and later centers agree to ~1e-15 relative (Adam's
rounding differs); with float32, ~1e-7 (tests/test_noise_table.py).

The update ``g = sum_j w_j eps_j`` with ``w_j = (u_j+ - u_j-) / n`` never materializes the
``(n, dim)`` noise matrix: :meth:`NoiseTable.weighted_sum` sums windows in place, by plain
slices (``noise_access="loop"``, auto on CPU) or by chunked gathers and ``mv``
(``"gather"``, auto on CUDA); its module says why and what each costs.

The population itself (``ask_tensor``) is built the same way, gathered straight into the
output and scaled and shifted in place, as the plain strategy does.

Device path: :meth:`OpenAIESNT.ask_tensor` returns the population on ``device`` (no host
copy) for :class:`envs.torch_evaluator.TorchEvaluator`, :meth:`OpenAIESNT.ask_offsets`
starts a generation and returns only ``(offsets, signs)`` (for workers that rebuild genomes
from their own copy of the table), and :meth:`OpenAIESNT.tell` takes numpy or torch fitness.
Only ``popsize`` numbers cross to the host per generation (fitness), plus one genome
(``dim`` floats) when a new best-so-far appears.

Options (besides openai-es's ``lr``, ``l2``, ``b1``, ``b2``, ``adam_eps``):

============  ==========  ================================================================
option        default     meaning
============  ==========  ================================================================
device        "cpu"       torch device of the table, the population and the state
table_size    2**25       floats in the table (128 MB float32); at least ``dim + popsize``
table_seed    123         seed of the table (evolution-strategies-starter's)
dtype         "float32"   dtype of the table and the population ("float32" / "float64")
noise_access  "auto"      "loop" / "gather" / "auto" (gather on CUDA, loop elsewhere)
============  ==========  ================================================================

State dicts hold plain arrays (device tensors moved to CPU numpy); ``device`` and
``noise_access`` belong to the instance, so a state saved on a GPU loads on a CPU. The
continuation after a load is bit-identical on the same device and ``noise_access``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .base import (
    Strategy,
    check_options,
    check_x0,
    rng_state,
    sanitize_fitness,
    set_rng_state,
)
from .noise_table import (
    DEFAULT_TABLE_SEED,
    DEFAULT_TABLE_SIZE,
    NoiseTable,
    reconstruct,
    resolve_access,
    resolve_device,
)
from .openai_es import (
    DEFAULTS,
    centered_ranks,
    es_settings,
)

__all__ = ["NT_DEFAULTS", "OpenAIESNT", "reconstruct"]  # reconstruct: re-exported

NT_DEFAULTS = {
    "device": "cpu",
    "table_size": DEFAULT_TABLE_SIZE,
    "table_seed": DEFAULT_TABLE_SEED,
    "dtype": "float32",
    "noise_access": "auto",
}


class OpenAIESNT(Strategy):
    """OpenAI-ES with a noise table on a torch device; see the module docstring."""

    name = "openai-es-nt"

    def __init__(self, dim, popsize=None, sigma=None, seed=0, x0=None, **options) -> None:
        super().__init__(dim, popsize, sigma, seed, x0)
        check_options(self.name, options, {**DEFAULTS, **NT_DEFAULTS})
        self.popsize, self.sigma, self.hp = es_settings(self.name, popsize, sigma, options)
        opts = {k: options.get(k, v) for k, v in NT_DEFAULTS.items()}
        self.device = resolve_device(opts["device"])
        self.noise_access = resolve_access(opts["noise_access"], self.device)
        self.table = self._table(opts["table_seed"], opts["table_size"], opts["dtype"])
        self.theta = torch.as_tensor(check_x0(x0, self.dim), device=self.device)
        self._rng = np.random.default_rng(self.seed)
        self._reset_adam()
        self._stale = False  # outstanding generation asked around a theta we have left
        self._pending: np.ndarray | None = None  # offsets of the outstanding generation
        self._last_offsets: np.ndarray | None = None  # offsets of the last asked generation
        self._asked_theta: torch.Tensor | None = None  # the theta it was asked around
        self.last_weights: np.ndarray | None = None  # w_j of the last update (see docstring)

    def _table(self, seed, size, dtype) -> NoiseTable:
        if isinstance(size, bool) or int(size) != size or int(size) < self.dim + self.popsize:
            raise ValueError(f"table_size must be an integer >= dim + popsize = "
                             f"{self.dim + self.popsize}, got {size!r}")
        if isinstance(seed, bool) or int(seed) != seed:
            raise ValueError(f"table_seed must be an integer, got {seed!r}")
        return NoiseTable.shared(int(seed), int(size), self.device, dtype)

    def _reset_adam(self) -> None:
        self.m = torch.zeros(self.dim, dtype=torch.float64, device=self.device)
        self.v = torch.zeros(self.dim, dtype=torch.float64, device=self.device)
        self.t = 0

    @property
    def center(self) -> np.ndarray:
        return self.theta.cpu().numpy().copy()

    @property
    def asked_center(self) -> np.ndarray | None:
        """The center the last asked generation was sampled around (None before any)."""
        return None if self._asked_theta is None else self._asked_theta.cpu().numpy().copy()

    # ---- asking ----------------------------------------------------------------------------
    def ask_offsets(self) -> tuple[np.ndarray, np.ndarray]:
        """Start a generation without building it: ``(offsets, signs)``, each ``(popsize,)``
        int64; row ``i`` of the population is ``center + signs[i] * sigma *
        table[offsets[i] : offsets[i] + dim]``. Answer with :meth:`tell`."""
        self._stale = False
        off = self.table.sample_offsets(self._rng, self.popsize // 2, self.dim)
        self._pending = self._last_offsets = off
        self._asked_theta = self.theta  # never modified in place: updates make a new tensor
        return self.last_offsets

    def ask_tensor(self) -> torch.Tensor:
        """Start a generation: the population ``(popsize, dim)`` in ``dtype`` on ``device``."""
        self.ask_offsets()
        h = self.popsize // 2
        X = torch.empty((self.popsize, self.dim), dtype=self.table.dtype, device=self.device)
        step = self.table.gather(self._pending, self.dim, out=X[:h], method=self.noise_access)
        step.mul_(self.sigma)
        c = self.theta.to(self.table.dtype)
        torch.sub(c, step, out=X[h:])
        step.add_(c)
        return X

    def ask(self) -> np.ndarray:
        """The contract's population: :meth:`ask_tensor` as a float64 numpy array."""
        return self.ask_tensor().to("cpu", torch.float64).numpy()

    def _ask(self) -> np.ndarray:  # the base-class hook; ask() is overridden
        return self.ask()

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

    # ---- telling ---------------------------------------------------------------------------
    def tell(self, fitness) -> None:
        """Update with the fitness (to maximize) of the last ask, numpy or torch, ``(popsize,)``."""
        if self._pending is None:
            raise RuntimeError("tell() called before ask()")
        if isinstance(fitness, torch.Tensor):
            fitness = fitness.detach().to("cpu", torch.float64).numpy()
        raw = np.asarray(fitness, dtype=np.float64).reshape(-1)
        if raw.shape != (self.popsize,):
            raise ValueError(f"fitness must have shape ({self.popsize},), got {raw.shape}")
        f = sanitize_fitness(raw)
        i = int(np.argmax(f))
        if np.isfinite(raw[i]) and f[i] > self._best_f:
            h = self.popsize // 2
            x = self.table.perturb(self._asked_theta, self._pending[[i % h]],
                                   [1 if i < h else -1], self.sigma, self.noise_access)
            self._best_f, self._best_x = float(f[i]), x[0].to("cpu", torch.float64).numpy()
        off, self._pending = self._pending, None
        self._update(off, f)
        self.generation += 1

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:  # the base-class hook
        raise NotImplementedError("tell() is overridden")

    def _update(self, off: np.ndarray, f: np.ndarray) -> None:
        if self._stale:
            self._stale = False
            return
        h = self.popsize // 2
        u = centered_ranks(f)
        w = (u[:h] - u[h:]) / self.popsize
        self.last_weights = w
        g = self.table.weighted_sum(off, w, self.dim, self.noise_access)
        d = g.add_(self.theta, alpha=-self.hp["l2"])  # d = g - l2 theta
        b1, b2 = self.hp["b1"], self.hp["b2"]
        self.t += 1
        self.m.mul_(b1).add_(d, alpha=1 - b1)
        self.v.mul_(b2).addcmul_(d, d, value=1 - b2)
        a = self.hp["lr"] * np.sqrt(1 - b2**self.t) / (1 - b1**self.t)
        # a new tensor, not in place: _asked_theta may still refer to the old one
        self.theta = torch.addcdiv(self.theta, self.m, self.v.sqrt().add_(self.hp["adam_eps"]),
                                   value=a)

    # ---- migrants --------------------------------------------------------------------------
    def inject(self, solutions, fitness) -> None:
        self._best_before_inject = self._best_f  # the base class updates the best first
        super().inject(solutions, fitness)

    def _inject(self, S: np.ndarray, f: np.ndarray) -> None:
        # the openai-es migrant rule (see islands/strategies/openai_es.py)
        i = int(np.argmax(f))
        if f[i] > self._best_before_inject:
            self.theta = torch.tensor(S[i], dtype=torch.float64, device=self.device)
            self._reset_adam()
            self._stale = self._pending is not None

    # ---- state -----------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        def arr(x):
            return None if x is None else x.cpu().numpy().copy()

        return {
            "popsize": self.popsize,
            "sigma": self.sigma,
            "hp": dict(self.hp),
            "table_seed": self.table.seed,
            "table_size": self.table.size,
            "dtype": self.table.dtype_name,
            "table_fingerprint": self.table.fingerprint,
            "theta": arr(self.theta),
            "m": arr(self.m),
            "v": arr(self.v),
            "t": self.t,
            "stale": self._stale,
            "rng": rng_state(self._rng),
            "pending": None if self._pending is None else self._pending.copy(),
            "last_offsets": None if self._last_offsets is None else self._last_offsets.copy(),
            "asked_theta": arr(self._asked_theta),
            "last_weights": None if self.last_weights is None else self.last_weights.copy(),
        }

    def _load_state(self, d: dict[str, Any]) -> None:
        self.popsize = int(d["popsize"])
        self.sigma = float(d["sigma"])
        self.hp = {k: float(v) for k, v in d["hp"].items()}
        self.table = self._table(int(d["table_seed"]), int(d["table_size"]), str(d["dtype"]))
        if self.table.fingerprint != str(d["table_fingerprint"]):
            raise ValueError(
                f"noise table (seed {self.table.seed}, size {self.table.size}) differs from "
                f"the saved one (fingerprint {self.table.fingerprint} != "
                f"{d['table_fingerprint']}): this torch build draws other normals"
            )

        def tensor(x):
            return None if x is None else torch.tensor(np.asarray(x, dtype=np.float64),
                                                        device=self.device)

        self.theta, self.m, self.v = tensor(d["theta"]), tensor(d["m"]), tensor(d["v"])
        self.t = int(d["t"])
        self._stale = bool(d["stale"])
        set_rng_state(self._rng, d["rng"])
        self._pending = None if d["pending"] is None else np.array(d["pending"], np.int64)
        last = d["last_offsets"]
        self._last_offsets = None if last is None else np.array(last, np.int64)
        self._asked_theta = tensor(d["asked_theta"])
        lw = d["last_weights"]
        self.last_weights = None if lw is None else np.array(lw, np.float64)
