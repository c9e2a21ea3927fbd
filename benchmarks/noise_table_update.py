"""One openai-es-nt update (and ask) against the plain numpy openai-es, per dimension.

For each dimension in ``--dims`` (default 100K and 1M parameters, popsize 256) this times,
as the median of ``--repeats`` calls after one warm-up generation:

* plain ``openai-es`` (numpy float64, the baseline): ``ask()`` and ``tell()``;
* ``openai-es-nt`` on ``--device`` for each ``--methods`` entry (``noise_access``: "loop",
  "gather"): ``ask_tensor()`` (the population on the device, no host copy), ``ask()`` (the
  numpy contract: the same plus the copy to host float64), and ``tell()`` alone (the update:
  ranks, the noise-table weighted sum, Adam), timed after ``ask_offsets()`` so that no
  population is built for it.

CUDA calls are bracketed by ``torch.cuda.synchronize()``; on CUDA ``tell MB`` is the peak
memory allocated during ``tell()`` above what was allocated before it (on CPU: not measured).
Ratios are ``baseline time / this time`` for the same operation in the same run (``tell x``,
and ``ask x`` comparing ``ask_tensor`` with the plain ``ask``), so > 1 means faster. Needs no
Ray; runs on CPU (``--dims 10000,100000`` for a quick look). Prints a table and a final JSON
line (``islands.output.benchmarking``; ``ratio``: the first method's ``tell x`` at the largest dim).

    python benchmarks/noise_table_update.py [--device cuda] [--dims 100000,1000000]
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import torch

from islands.output import benchmarking as bench
from islands.strategies import make

BASELINE = "openai-es"


def timed(fn, device: torch.device, repeats: int, before=None) -> tuple[float, float | None]:
    """Median seconds of ``fn()`` (``before()`` runs untimed first), and on CUDA the peak
    memory fn allocated beyond what was allocated when it started, in MB."""
    times, peak = [], None
    cuda = device.type == "cuda"
    for _ in range(repeats):
        if before is not None:
            before()
        if cuda:
            torch.cuda.synchronize(device)
            base = torch.cuda.memory_allocated(device)
            torch.cuda.reset_peak_memory_stats(device)
        t0 = time.perf_counter()
        out = fn()
        if cuda:
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
        if cuda:
            peak = max(peak or 0.0, (torch.cuda.max_memory_allocated(device) - base) / 1e6)
        del out
    return statistics.median(times), peak


def bench_plain(dim: int, popsize: int, repeats: int, fit: np.ndarray) -> dict:
    s = make(BASELINE, dim, popsize=popsize, seed=0)
    s.ask()
    s.tell(fit)  # warm-up
    ask_s, _ = timed(s.ask, torch.device("cpu"), repeats)
    s.ask()
    tell_s, _ = timed(lambda: s.tell(fit), torch.device("cpu"), repeats, before=s.ask)
    return {"impl": BASELINE, "method": "numpy", "ask_s": ask_s, "ask_tensor_s": None,
            "tell_s": tell_s, "tell_mb": None}


def bench_nt(dim: int, popsize: int, repeats: int, fit: np.ndarray, device: torch.device,
             method: str, dtype: str, table_size: int) -> dict:
    t0 = time.perf_counter()
    s = make("openai-es-nt", dim, popsize=popsize, seed=0, device=str(device), dtype=dtype,
             noise_access=method, table_size=table_size)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    init_s = time.perf_counter() - t0
    s.ask_tensor()
    s.tell(fit)  # warm-up (kernels, allocator)
    s.ask_offsets()
    s.tell(fit)
    ask_tensor_s, _ = timed(s.ask_tensor, device, repeats)
    ask_s, _ = timed(s.ask, device, repeats)
    tell_s, tell_mb = timed(lambda: s.tell(fit), device, repeats, before=s.ask_offsets)
    return {"impl": "openai-es-nt", "method": method, "ask_s": ask_s,
            "ask_tensor_s": ask_tensor_s, "tell_s": tell_s, "tell_mb": tell_mb,
            "init_s": init_s}


def main(argv: list[str] | None = None) -> None:
    p = bench.parser(__doc__)
    p.add_argument("--device", default="cpu")
    p.add_argument("--dims", default="100000,1000000")
    p.add_argument("--popsize", type=int, default=256)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--methods", default="loop,gather", help="noise_access values to time")
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--table-size", type=int, default=2**25)
    p.add_argument("--threads", type=int, default=0,
                   help="torch CPU threads (0: torch's default). On a shared, oversubscribed "
                   "machine 1 gives steadier numbers")
    a = p.parse_args(argv)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: CUDA is not available")
    dims = [int(d) for d in a.dims.split(",")]
    methods = a.methods.split(",")
    fit = np.random.default_rng(0).standard_normal(a.popsize)
    rows = []
    for dim in dims:
        base = bench_plain(dim, a.popsize, a.repeats, fit)
        rows.append({"dim": dim, **base})
        for m in methods:
            r = {"dim": dim, **bench_nt(dim, a.popsize, a.repeats, fit, device, m, a.dtype,
                                        a.table_size)}
            r["tell_x"] = base["tell_s"] / r["tell_s"]
            r["ask_x"] = base["ask_s"] / r["ask_tensor_s"]
            rows.append(r)

    def ms(x):
        return f"{x * 1e3:>10.2f}" if x is not None else f"{'-':>10}"

    dev = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"one generation's ask / tell, popsize {a.popsize}, median of {a.repeats}; "
          f"openai-es-nt on {dev} ({a.dtype}), baseline {BASELINE} (numpy float64, cpu, "
          f"{torch.get_num_threads()} torch threads)")
    head = (f"{'dim':>8} {'impl':<13} {'method':<7} {'ask_tensor ms':>13} {'ask ms':>10} "
            f"{'tell ms':>10} {'ask x':>7} {'tell x':>7} {'tell MB':>8}")
    print(head)
    print("-" * len(head))
    for r in rows:
        mb = "-" if r["tell_mb"] is None else f"{r['tell_mb']:.1f}"
        print(f"{r['dim']:>8} {r['impl']:<13} {r['method']:<7} {ms(r['ask_tensor_s']):>13} "
              f"{ms(r['ask_s'])} {ms(r['tell_s'])} {r.get('ask_x', 1.0):>7.2f} "
              f"{r.get('tell_x', 1.0):>7.2f} {mb:>8}")
    headline = next(r for r in rows if r["dim"] == dims[-1] and "tell_x" in r)
    bench.emit("noise_table_update", rows=rows, baseline=BASELINE, ratio=headline["tell_x"],
               device=str(device), device_name=dev, dtype=a.dtype, popsize=a.popsize,
               repeats=a.repeats, table_size=a.table_size)


if __name__ == "__main__":
    main()
