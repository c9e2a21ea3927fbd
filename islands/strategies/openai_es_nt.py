"""OpenAI-ES on a torch device with a shared noise table ("openai-es-nt").

The maths, defaults and migrant rule are those of :mod:`islands.strategies.openai_es`
(Salimans et al. 2017): mirrored pairs, centered ranks, ``g = 1/n sum_j (u_j+ - u_j-)
eps_j`` without the ``1/sigma`` factor, L2 decay ``l2 * theta``, Adam ascent, fixed sigma,
and the same migrant rule (a migrant that beats the best-so-far re-centers the search and
resets Adam; an outstanding generation's gradient is then dropped). What changes is where the
noise comes from and where the arithmetic runs.

Noise table (as in OpenAI's evolution-strategies-starter, ``SharedNoiseTable``: seed 123,
offsets drawn uniformly from ``[0, size - dim]``). One block of ``table_size`` standard
normals is generated once, on the CPU, by ``torch.randn`` with a ``torch.Generator`` seeded
with ``table_seed``, then moved to ``device``: the table is a function of ``(table_seed,
table_size)`` alone, the same on every device, so it is never checkpointed or shipped (the
state holds the seed, the size and a fingerprint checked on load, which catches a torch
build whose CPU ``randn`` draws different numbers). Perturbation ``j`` of a generation is the
window ``eps_j = table[off_j : off_j + dim]``; rows ``j`` and ``j + n/2`` of the population
are ``theta + sigma eps_j`` and ``theta - sigma eps_j``. So any genome of this island is
``(offset, sign)`` plus the center it was asked around (:meth:`OpenAIESNT.describe`,
:meth:`OpenAIESNT.reconstruct`, :func:`reconstruct`), and an update is ``(offsets,
weights)`` (:attr:`OpenAIESNT.last_weights`, :meth:`NoiseTable.weighted_sum`). Shifted
windows of i.i.d. noise are uncorrelated (``E[eps_a . eps_b] = 0`` for ``a != b``), so
overlapping windows are fine. Tables are shared between instances of one process with the
same ``(table_seed, table_size, device, dtype)``; islands default to the same table seed,
so a receiver can rebuild a sender's genome from its description.

Precision. ``theta``, Adam's ``m`` and ``v`` and the gradient are float64 on the device
(dim-sized, cheap; the center, ``x0`` and migrants stay exact). The big tensors, the table
and the population, are in ``dtype`` (default float32, what GPU policies consume; the
evaluators cast to float32 anyway). A genome is ``c + sigma * eps`` with ``c = theta``
rounded to ``dtype``, computed in ``dtype``; :meth:`OpenAIESNT.ask` returns those values as
float64, bit-identical to :meth:`OpenAIESNT.reconstruct`. With ``dtype="float64"`` this is
the arithmetic of :class:`~islands.strategies.openai_es.OpenAIES`: fed the same ``eps``, its
first population is bit-identical and later centers agree to ~1e-15 relative (Adam's
rounding differs); with float32, ~1e-7 (tests/test_noise_table.py).

The update never materializes the ``(n, dim)`` noise matrix (256 x 1M float32 is 1 GB):
``g = sum_j w_j table[off_j : off_j + dim]`` with ``w_j = (u_j+ - u_j-) / n``: partial sums
over a few windows in the table dtype, added into a float64 ``g``. Two ways (option
``noise_access``), chosen by device with ``"auto"``:

* ``"loop"`` (auto on CPU): ``buf = w_j * window_j + ...`` in place over ``LOOP_CHUNK`` (16)
  plain slices of the table, then ``g += buf``; the only temporaries are dim-sized. Measured
  on CPU (2 shared cores, torch 2.13, 128 pairs, dim 1M): 25-35 ms, against 70-125 ms when
  every window is added straight into the float64 ``g`` (CPU casts each float32 window to a
  float64 temporary first). ``"gather"`` took 0.6-5 s there: CPU ``index_select`` from the
  overlapping strided view below is an element-wise strided copy.
* ``"gather"`` (auto on CUDA): windows gathered ``chunk`` rows at a time from the zero-copy
  view ``as_strided(table, (size - dim + 1, dim), (1, 1))`` (row ``o`` is the window at
  offset ``o``) with ``index_select``, then ``g += w_chunk @ E_chunk`` (``mv``). The chunk
  holds at most ``GATHER_BYTES`` (64 MB: 16 rows at 1M float32), so memory stays bounded.
  Two kernels per chunk instead of one per window: at 100K dims the loop is launch-bound (~128
  launches of tiny kernels) while a single chunk is two; at 1M both move ~1.5 GB (the gather
  reads and writes the chunk, ``mv`` reads it again), about half a millisecond at H100
  bandwidth (an estimate: benchmarks/noise_table_update.py measures it on a GPU).
  ``F.embedding_bag`` with ``per_sample_weights`` would be one kernel and read each window
  once, but its CPU path copies the view to contiguous (tried: a 130 TB allocation) and its
  CUDA path could not be checked here, so it is not used.

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

import hashlib
import threading
import weakref
from typing import Any

import numpy as np
import torch

from islands.strategies.base import (
    Strategy,
    check_options,
    check_x0,
    rng_state,
    sanitize_fitness,
    set_rng_state,
)
from islands.strategies.openai_es import (
    DEFAULTS,
    centered_ranks,
    es_settings,
)

DEFAULT_TABLE_SIZE = 2**25
DEFAULT_TABLE_SEED = 123
NT_DEFAULTS = {
    "device": "cpu",
    "table_size": DEFAULT_TABLE_SIZE,
    "table_seed": DEFAULT_TABLE_SEED,
    "dtype": "float32",
    "noise_access": "auto",
}
DTYPES = {"float32": torch.float32, "float64": torch.float64}
NOISE_ACCESS = ("auto", "loop", "gather")
GATHER_BYTES = 64 * 2**20  # largest chunk of gathered windows in the "gather" update
LOOP_CHUNK = 16  # windows summed in the table dtype before joining the float64 gradient
_FINGERPRINT_SAMPLES = 65536


def _device(device) -> torch.device:
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must be a torch device such as 'cpu' or 'cuda', "
                         f"got {device!r}") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} is not available (no CUDA here)")
        if dev.index is None:  # one cache entry per physical device
            dev = torch.device("cuda", torch.cuda.current_device())
    return dev


def _access(method: str, device: torch.device) -> str:
    if method not in NOISE_ACCESS:
        raise ValueError(f"noise_access must be one of {', '.join(NOISE_ACCESS)}, "
                         f"got {method!r}")
    if method == "auto":
        return "gather" if device.type == "cuda" else "loop"
    return method


class NoiseTable:
    """``size`` standard normals from ``torch.Generator().manual_seed(seed)`` (CPU), stored
    on ``device`` in ``dtype``. Use :meth:`shared` to reuse one table per process."""

    _cache: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
    _lock = threading.Lock()

    def __init__(self, seed: int, size: int, device="cpu", dtype: str = "float32") -> None:
        self.seed, self.size = int(seed), int(size)
        if self.size < 1:
            raise ValueError(f"table_size must be positive, got {size}")
        if not 0 <= self.seed < 2**63:
            raise ValueError(f"table_seed must be in [0, 2**63), got {seed}")
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        self.device, self.dtype_name, self.dtype = _device(device), dtype, DTYPES[dtype]
        gen = torch.Generator().manual_seed(self.seed)
        cpu = torch.randn(self.size, generator=gen, dtype=torch.float32)
        self.fingerprint = fingerprint(cpu)
        # float64 tables hold the same (float32) numbers, so both dtypes share one noise
        self.data = cpu.to(device=self.device, dtype=self.dtype)

    @classmethod
    def shared(cls, seed: int, size: int, device="cpu", dtype: str = "float32") -> NoiseTable:
        """The process-wide table for these arguments (kept while someone holds it)."""
        key = (int(seed), int(size), str(_device(device)), dtype)
        with cls._lock:
            table = cls._cache.get(key)
            if table is None:
                table = cls(seed, size, device, dtype)
                cls._cache[key] = table
            return table

    def num_offsets(self, dim: int) -> int:
        """How many windows of length ``dim`` fit (offsets ``0 .. size - dim``)."""
        return self.size - int(dim) + 1

    def sample_offsets(self, rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
        return rng.integers(0, self.num_offsets(dim), size=int(n), dtype=np.int64)

    def check_offsets(self, offsets, dim: int) -> np.ndarray:
        off = np.asarray(offsets).reshape(-1)
        if off.size and (not np.issubdtype(off.dtype, np.integer)
                         or off.min() < 0 or off.max() >= self.num_offsets(dim)):
            raise ValueError(f"offsets must be integers in [0, {self.num_offsets(dim) - 1}] "
                             f"for dim {dim} in a table of {self.size}")
        return off.astype(np.int64)

    def window(self, offset: int, dim: int) -> torch.Tensor:
        """``eps = table[offset : offset + dim]`` (a view)."""
        return self.data[int(offset) : int(offset) + int(dim)]

    def windows(self, dim: int) -> torch.Tensor:
        """Zero-copy ``(size - dim + 1, dim)`` view whose row ``o`` is :meth:`window` ``o``."""
        return self.data.as_strided((self.num_offsets(dim), int(dim)), (1, 1))

    def gather(self, offsets: np.ndarray, dim: int, out: torch.Tensor | None = None,
               method: str = "auto") -> torch.Tensor:
        """The windows at ``offsets`` as rows of ``out (k, dim)`` (allocated if None)."""
        method = _access(method, self.device)
        off = np.asarray(offsets, dtype=np.int64).reshape(-1)
        if out is None:
            out = torch.empty((len(off), int(dim)), dtype=self.dtype, device=self.device)
        if method == "gather":
            idx = torch.as_tensor(off, device=self.device)
            torch.index_select(self.windows(dim), 0, idx, out=out)
        else:
            for j, o in enumerate(off.tolist()):
                out[j].copy_(self.data[o : o + dim])
        return out

    def weighted_sum(self, offsets: np.ndarray, weights: np.ndarray, dim: int,
                     method: str = "auto") -> torch.Tensor:
        """``sum_j weights[j] * table[offsets[j] : offsets[j] + dim]`` as a float64 ``(dim,)``
        tensor on the device, without forming the ``(k, dim)`` matrix (module docstring)."""
        method = _access(method, self.device)
        off = np.asarray(offsets, dtype=np.int64).reshape(-1)
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        g = torch.zeros(int(dim), dtype=torch.float64, device=self.device)
        if method == "gather":
            chunk = max(1, GATHER_BYTES // (int(dim) * self.data.element_size()))
            wt = torch.as_tensor(w, dtype=self.dtype, device=self.device)
            buf = torch.empty((min(chunk, len(off)), int(dim)), dtype=self.dtype,
                              device=self.device)
            for s in range(0, len(off), chunk):
                E = self.gather(off[s : s + chunk], dim, out=buf[: len(off[s : s + chunk])],
                                method="gather")
                g.add_(torch.mv(E.t(), wt[s : s + chunk]))
        else:
            buf = torch.empty(int(dim), dtype=self.dtype, device=self.device)
            for s in range(0, len(off), LOOP_CHUNK):
                pairs = zip(off[s : s + LOOP_CHUNK].tolist(), w[s : s + LOOP_CHUNK].tolist(),
                            strict=True)
                for n, (o, wj) in enumerate(pairs):
                    if n == 0:
                        torch.mul(self.data[o : o + dim], wj, out=buf)
                    else:
                        buf.add_(self.data[o : o + dim], alpha=wj)
                g.add_(buf)
        return g

    def perturb(self, center, offsets, signs, sigma: float, method: str = "auto"
                ) -> torch.Tensor:
        """Genomes ``c + sign * sigma * eps`` (``c`` = center rounded to the table dtype),
        rows ``(k, dim)`` in the table dtype on the device, as the strategy builds them."""
        c = torch.as_tensor(center, dtype=torch.float64, device=self.device).reshape(-1)
        dim = c.numel()
        off = self.check_offsets(offsets, dim)
        sg = np.asarray(signs).reshape(-1)
        if sg.shape != off.shape or not np.isin(sg, (-1, 1)).all():
            raise ValueError(f"signs must be {len(off)} values of +1 or -1, got {sg!r}")
        step = self.gather(off, dim, method=method).mul_(float(sigma))
        c = c.to(self.dtype)
        pos = torch.as_tensor(sg > 0, device=self.device)[:, None]
        return torch.where(pos, step + c, c - step)  # same ops as OpenAIESNT.ask_tensor


def fingerprint(table: torch.Tensor) -> str:
    """A short hash of an evenly strided sample (plus the last entry) of a CPU table."""
    n = table.numel()
    sample = table[:: max(1, n // _FINGERPRINT_SAMPLES)][:_FINGERPRINT_SAMPLES]
    data = sample.contiguous().numpy().tobytes() + table[-1:].numpy().tobytes()
    return hashlib.sha256(data).hexdigest()[:16]


def reconstruct(offsets, signs, center, sigma: float, table_seed: int = DEFAULT_TABLE_SEED,
                table_size: int = DEFAULT_TABLE_SIZE, dtype: str = "float32") -> np.ndarray:
    """Genomes ``(k, dim)`` float64 from ``(offset, sign)`` pairs, the center they were asked
    around and sigma, for the table ``(table_seed, table_size)`` (built or reused on CPU)."""
    table = NoiseTable.shared(table_seed, table_size, "cpu", dtype)
    return table.perturb(center, offsets, signs, sigma, "loop").to(torch.float64).numpy()


class OpenAIESNT(Strategy):
    """OpenAI-ES with a noise table on a torch device; see the module docstring."""

    name = "openai-es-nt"

    def __init__(self, dim, popsize=None, sigma=None, seed=0, x0=None, **options) -> None:
        super().__init__(dim, popsize, sigma, seed, x0)
        check_options(self.name, options, {**DEFAULTS, **NT_DEFAULTS})
        self.popsize, self.sigma, self.hp = es_settings(self.name, popsize, sigma, options)
        opts = {k: options.get(k, v) for k, v in NT_DEFAULTS.items()}
        self.device = _device(opts["device"])
        self.noise_access = _access(opts["noise_access"], self.device)
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
