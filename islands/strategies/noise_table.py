"""The noise table of openai-es-nt: one block of standard normals, read as windows.

As in OpenAI's evolution-strategies-starter (``SharedNoiseTable``: seed 123, offsets drawn
uniformly from ``[0, size - dim]``). One block of ``table_size`` standard normals is
generated once, on the CPU, by ``torch.randn`` with a ``torch.Generator`` seeded with
``table_seed``, then moved to ``device``: the table is a function of ``(table_seed,
table_size)`` alone, the same on every device, so it is never checkpointed or shipped (a
strategy's state holds the seed, the size and a :func:`fingerprint` checked on load, which
catches a torch build whose CPU ``randn`` draws different numbers). A perturbation is the
window ``eps = table[off : off + dim]``; shifted windows of i.i.d. noise are uncorrelated
(``E[eps_a . eps_b] = 0`` for ``a != b``), so overlapping windows are fine. One table is
shared by all users in a process with the same ``(table_seed, table_size, device, dtype)``
(:meth:`NoiseTable.shared`).

A weighted sum of windows (:meth:`NoiseTable.weighted_sum`: the gradient of an update,
``g = sum_j w_j table[off_j : off_j + dim]``) never materializes the ``(n, dim)`` noise
matrix (256 x 1M float32 is 1 GB): partial sums over a few windows in the table dtype, added
into a float64 ``g``. Two ways (the strategy's option ``noise_access``), chosen by device
with ``"auto"``:

* ``"loop"`` (auto on CPU): ``buf = w_j * window_j + ...`` in place over ``LOOP_CHUNK`` (16)
  plain slices of the table, then ``g += buf``; the only temporaries are dim-sized. On the
  CPU, adding each window straight into the float64 ``g`` casts it to a float64 temporary
  first, and ``index_select`` from the strided view below is an element-wise strided copy;
  both were slower (docs/results/noise-table.md).
* ``"gather"`` (auto on CUDA): windows gathered ``chunk`` rows at a time from the zero-copy
  view ``as_strided(table, (size - dim + 1, dim), (1, 1))`` (row ``o`` is the window at
  offset ``o``) with ``index_select``, then ``g += w_chunk @ E_chunk`` (``mv``). The chunk
  holds at most ``GATHER_BYTES`` (64 MB: 16 rows at 1M float32), so memory stays bounded.
  Two kernels per chunk instead of one per window: at 100K dims the loop is launch-bound
  (~128 launches of tiny kernels) while a single chunk is two; on a GPU,
  ``python benchmarks/noise_table_update.py --device cuda`` times both.
  ``F.embedding_bag`` with ``per_sample_weights`` would be one kernel and read each window
  once, but its CPU path copies the view to contiguous (a 130 TB allocation) and its CUDA
  path was not checked, so it is not used.
"""

from __future__ import annotations

import hashlib
import threading
import weakref

import numpy as np
import torch

DEFAULT_TABLE_SIZE = 2**25
DEFAULT_TABLE_SEED = 123
DTYPES = {"float32": torch.float32, "float64": torch.float64}
NOISE_ACCESS = ("auto", "loop", "gather")
GATHER_BYTES = 64 * 2**20  # largest chunk of gathered windows in the "gather" update
LOOP_CHUNK = 16  # windows summed in the table dtype before joining the float64 gradient
_FINGERPRINT_SAMPLES = 65536


def resolve_device(device) -> torch.device:
    """``device`` as a torch device that exists here; CUDA with its index made explicit."""
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


def resolve_access(method: str, device: torch.device) -> str:
    """The ``noise_access`` method to use on ``device`` ("auto": gather on CUDA, else loop)."""
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
        self.device, self.dtype_name, self.dtype = resolve_device(device), dtype, DTYPES[dtype]
        gen = torch.Generator().manual_seed(self.seed)
        cpu = torch.randn(self.size, generator=gen, dtype=torch.float32)
        self.fingerprint = fingerprint(cpu)
        # float64 tables hold the same (float32) numbers, so both dtypes share one noise
        self.data = cpu.to(device=self.device, dtype=self.dtype)

    @classmethod
    def shared(cls, seed: int, size: int, device="cpu", dtype: str = "float32") -> NoiseTable:
        """The process-wide table for these arguments (kept while someone holds it)."""
        key = (int(seed), int(size), str(resolve_device(device)), dtype)
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
        method = resolve_access(method, self.device)
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
        method = resolve_access(method, self.device)
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
