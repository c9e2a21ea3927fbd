"""The GPU suite: every GPU-relevant figure in one command, written to gpu.json and gpu.md.

Parts (``--parts`` runs a subset; each is skipped with its reason when a package or device
is missing, and one that raises is recorded "failed" with its one-line error while the rest
go on, so a GPU run is never lost to one broken part):

* ``cartpole`` / ``snake``: torch-native env + MLP 64-64 steps/s (gpu_throughput.py's
  ``bench_cartpole`` / ``bench_snake``), eager at every size and ``torch.compile`` "default"
  and "reduce-overhead" (CUDA graphs: CUDA only) at fewer sizes, since each population shape
  compiles for tens of seconds (CUDA: eager 1K/16K/256K/1M, compiled 16K and 1M; Snake
  eager only). Baseline: the env with random actions and no policy (the ceiling).
  References: gymnax CartPole ~20M steps/s (random policy, A100); the goal is >= 200M on
  one H100.
* ``pong``: EnvPool Pong + CNN on CUDA, float32 and bfloat16, 16 EnvPool threads
  (``bench_pong``, 64 individuals x 16 episodes); baseline: random actions, no policy.
* ``noise_table``: one openai-es-nt ask_tensor / tell at 100K / 1M / 10M parameters, popsize
  256 (noise_table_update.py), on CUDA against the CPU; plain numpy openai-es for reference
  at 100K only (its numpy ask at 1M would take ~30 s of the suite; noise_table_update.py).
* ``nt_island``: one openai-es-nt island on torch-native CartPole through
  ``python -m islands.launch`` (a subprocess, its own Ray) on CUDA and on the CPU: solved,
  wall, env steps/s; baseline: the CPU run.
* ``archipelago_scaling``: env steps/s of an archipelago on LunarLander-v3 with 1, 2, 4, 8,
  16 islands of one CPU each (archipelago_scaling.py's ``throughput``; a subprocess with one
  Ray, started after the island runs have exited); efficiency = s(n) / (n * s(1)).
* ``pytest_gpu``: ``pytest -m gpu -q`` (needs CUDA; skipped in --quick).

``--quick`` runs tiny sizes everywhere (a 2-core CPU finishes in about 2 minutes); the full
suite is sized for 8 minutes on one H100 with 16 cores (estimated ~7: compiles ~2, the
island runs ~1, scaling ~1.5, pytest ~1, the rest ~1.5). ``--budget-s`` skips parts that
would start after it ("time budget"). Prints each part's table as it goes, writes gpu.json /
gpu.md after every part, and prints gpu.json as the last stdout line.

    python benchmarks/gpu_suite.py --out gpu-suite-out          # CUDA when available
    python benchmarks/gpu_suite.py --device cpu --quick --out /tmp/suite
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import types
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import torch

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(BENCH)]

import gpu_throughput as gt  # noqa: E402
import noise_table_update as nut  # noqa: E402

from islands.strategies.noise_table import resolve_access  # noqa: E402

PARTS = ("cartpole", "snake", "pong", "noise_table", "nt_island", "archipelago_scaling",
         "pytest_gpu")
PART_HELP = {
    "cartpole": "torch-native CartPole + MLP steps/s, eager and torch.compile, vs random",
    "snake": "torch-native Snake + MLP steps/s (eager), vs random actions",
    "pong": "EnvPool Pong + CNN on CUDA, float32 and bfloat16 (CUDA only)",
    "noise_table": "openai-es-nt ask / tell at 100K-10M parameters, CUDA vs CPU",
    "nt_island": "an openai-es-nt island through islands.launch on CartPole, CUDA vs CPU",
    "archipelago_scaling": "LunarLander env steps/s with 1-16 islands, efficiency vs 1",
    "pytest_gpu": "pytest -m gpu -q (CUDA only, not in --quick)",
}
MODES = ("eager", "default", "reduce-overhead")  # torch.compile modes ("eager": none)
POPSIZE = 256  # noise_table's population
SCALING_ENV = "LunarLander-v3"


@dataclass(frozen=True)
class Sizes:
    """What every part runs at: env counts, dimensions, island and scaling settings."""

    cartpole: tuple[int, ...]
    cartpole_compile: tuple[int, ...]
    snake: tuple[int, ...]
    snake_compile: tuple[int, ...]
    repeats: int  # timed evaluate calls per row
    random_steps: int
    pong_envs: int
    pong_steps: int
    dims: tuple[int, ...]
    plain_max_dim: int  # plain numpy openai-es only up to this dimension
    nt_repeats: int
    table_size: int  # noise table of the noise_table part (>= max dim + popsize)
    island_popsize: int
    island_budget_s: float
    island_table_size: int
    island_test_episodes: int
    scaling_counts: tuple[int, ...]
    scaling_seconds: float


FULL_CUDA = Sizes(  # about 7 minutes on one H100 with 16 cores (estimate: the module doc)
    cartpole=(1024, 16384, 262144, 1048576), cartpole_compile=(16384, 1048576),
    snake=(1024, 16384, 262144), snake_compile=(), repeats=2, random_steps=100,
    pong_envs=1024, pong_steps=200, dims=(100_000, 1_000_000, 10_000_000),
    plain_max_dim=100_000, nt_repeats=3, table_size=2**25, island_popsize=4096,
    island_budget_s=60.0, island_table_size=2**25, island_test_episodes=100,
    scaling_counts=(1, 2, 4, 8, 16), scaling_seconds=6.0)
FULL_CPU = dataclasses.replace(  # --device cpu without --quick: CPU-sized rows
    FULL_CUDA, cartpole=(1024, 16384), cartpole_compile=(16384,), snake=(1024, 4096),
    dims=(100_000, 1_000_000), island_popsize=256)
QUICK = dataclasses.replace(  # a smoke run: every part at tiny sizes
    FULL_CUDA, cartpole=(256, 1024), cartpole_compile=(1024,), snake=(256, 1024),
    repeats=1, random_steps=20, pong_envs=64, pong_steps=50, dims=(10_000, 100_000),
    nt_repeats=2, table_size=2**18, island_popsize=64, island_budget_s=30.0,
    island_table_size=2**20, island_test_episodes=20, scaling_counts=(1, 2),
    scaling_seconds=4.0)


class Skip(Exception):
    """A part (or row) that cannot run here; the message is the reason."""


@dataclass
class Suite:
    """One run of the suite: its flags, device, sizes, clock and results so far."""

    args: argparse.Namespace
    device: torch.device
    sizes: Sizes
    out: Path
    t0: float
    record: dict

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def say(self, msg: str) -> None:
        print(f"[{self.elapsed():7.1f} s] {msg}", flush=True)


# ---- cartpole / snake ----------------------------------------------------------------------
def _throughput(s: Suite, fig: dict, env: str) -> None:
    """Eager rows at every size, then each compile mode at its sizes; a mode that cannot
    run here (reduce-overhead on CPU) or fails is recorded in ``modes`` with its reason."""
    bench = gt.bench_cartpole if env == "cartpole" else gt.bench_snake
    sizes = {"eager": getattr(s.sizes, env)}
    for mode in MODES[1:]:
        sizes[mode] = getattr(s.sizes, f"{env}_compile")
    rows, modes = [], {}
    fig.update(rows=rows, modes=modes, hidden=[64, 64])
    for mode in MODES:
        if mode == "reduce-overhead" and not s.cuda:
            modes[mode] = {"status": "skipped", "reason": "CUDA graphs: CUDA only; device cpu"}
            continue
        if not sizes[mode]:
            modes[mode] = {"status": "skipped", "reason": "eager only, to keep the suite in time"}
            continue
        try:
            for n in sizes[mode]:
                rows.append(_throughput_row(s, bench, n, mode))
        except Exception as e:  # a compile failure (or OOM) keeps the other modes' rows
            modes[mode] = {"status": "failed", "reason": one_line(e)}
            _free(s.device)
            continue
        modes[mode] = {"status": "ok", "reason": None}
    best = max(rows, key=lambda r: r["steps_per_s"], default=None)
    fig.update(best_steps_per_s=best and best["steps_per_s"],
               best_row=best and f"{best['compile']} N={best['N']}")


def _throughput_row(s: Suite, bench, n: int, mode: str) -> dict:
    ns = types.SimpleNamespace(
        episodes=256, hidden=[64, 64], sigma=0.02, repeats=s.sizes.repeats,
        random_steps=s.sizes.random_steps, threads=1 if s.cuda else os.cpu_count(),
        compile=False if mode == "eager" else mode)
    row = {"compile": mode, **bench(n, ns, s.device)}
    row["ratio"] = row["steps_per_s"] / row["random_steps_per_s"]
    s.say(f"  {row['bench']} {mode} N={n}: {row['steps_per_s']:,.0f} steps/s "
          f"(random {row['random_steps_per_s']:,.0f})")
    return row


def part_cartpole(s: Suite, fig: dict) -> None:
    _throughput(s, fig, "cartpole")


def part_snake(s: Suite, fig: dict) -> None:
    _throughput(s, fig, "snake")


# ---- pong ----------------------------------------------------------------------------------
def part_pong(s: Suite, fig: dict) -> None:
    """EnvPool Pong + CNN on CUDA in float32 and bfloat16 (gpu_throughput.bench_pong)."""
    if not s.cuda:
        raise Skip("no CUDA (--device cpu): the CNN's inference is what this part measures")
    try:
        import envpool
    except ImportError as e:
        raise Skip(f"envpool is not installed ({e})") from None
    if "Pong-v5" not in envpool.list_all_envs():
        raise Skip("envpool has no Pong-v5 (Atari ROMs missing)")
    threads = min(16, os.cpu_count() or 1)
    rows, old = [], torch.get_num_threads()
    fig.update(rows=rows, threads=threads)
    torch.set_num_threads(1)  # the host cores belong to EnvPool's threads
    try:
        for dtype in ("float32", "bfloat16"):
            ns = types.SimpleNamespace(pong_envs=s.sizes.pong_envs, episodes=16,
                                       pong_dtype=dtype, pong_steps=s.sizes.pong_steps,
                                       threads=threads, repeats=s.sizes.repeats)
            row = gt.bench_pong(ns, s.device)
            if isinstance(row, str):
                raise Skip(row)
            row.update(dtype=dtype, ratio=row["steps_per_s"] / row["random_steps_per_s"])
            s.say(f"  pong {dtype}: {row['steps_per_s']:,.0f} steps/s")
            rows.append(row)
    finally:
        torch.set_num_threads(old)


# ---- noise_table ---------------------------------------------------------------------------
def part_noise_table(s: Suite, fig: dict) -> None:
    """openai-es-nt ask_tensor / tell per dimension on the CPU and (when here) CUDA; plain
    numpy openai-es up to ``plain_max_dim``. ``x_cpu`` = CPU openai-es-nt time / this time."""
    fit = np.random.default_rng(0).standard_normal(POPSIZE)
    devices = [torch.device("cpu")] + ([s.device] if s.cuda else [])
    reps, rows = s.sizes.nt_repeats, []
    fig.update(rows=rows, popsize=POPSIZE, repeats=reps, table_size=s.sizes.table_size,
               cpu_threads=torch.get_num_threads())
    # untimed: the process's first CPU calls (thread pool, allocator) are slower than later
    nut.bench_nt(s.sizes.dims[0], POPSIZE, 1, fit, devices[0], "loop", "float32",
                 s.sizes.table_size)
    for dim in s.sizes.dims:
        group = []
        if dim <= s.sizes.plain_max_dim:
            group.append({"dim": dim, "device": "cpu", **nut.bench_plain(dim, POPSIZE, reps, fit)})
        for dev in devices:
            method = resolve_access("auto", dev)
            r = nut.bench_nt(dim, POPSIZE, reps, fit, dev, method, "float32", s.sizes.table_size)
            group.append({"dim": dim, "device": dev.type, **r})
            _free(dev)
        cpu = next(r for r in group if r["impl"] == "openai-es-nt" and r["device"] == "cpu")
        for r in group:
            r["tell_x_cpu"] = cpu["tell_s"] / r["tell_s"]
            r["ask_x_cpu"] = cpu["ask_tensor_s"] / (r["ask_tensor_s"] or r["ask_s"])
            s.say(f"  dim {dim} {r['impl']} {r['device']}: tell {r['tell_s'] * 1e3:.2f} ms")
        rows += group


def _free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


# ---- nt_island -----------------------------------------------------------------------------
def part_nt_island(s: Suite, fig: dict) -> None:
    """One openai-es-nt island through the launcher on CUDA (when here) and on the CPU; a
    run that fails fails the part, after the other device's run."""
    rows, errors = [], []
    fig.update(rows=rows, popsize=s.sizes.island_popsize, time_budget_s=s.sizes.island_budget_s)
    if not s.cuda:
        fig["cuda"] = "CUDA run not run: no CUDA (cpu device)."
    for dev in (["cuda"] if s.cuda else []) + ["cpu"]:
        try:
            rows.append(_island_run(s, dev))
        except Exception as e:
            errors.append(f"{dev}: {one_line(e)}")
    if errors:
        raise RuntimeError("; ".join(errors))
    if s.cuda:
        fig["steps_per_s_x_cpu"] = rows[0]["steps_per_s"] / rows[1]["steps_per_s"]


def _island_cmd(s: Suite, device: str, run_dir: Path) -> list[str]:
    spec = {"strategy": "openai-es-nt", "backend": "torch", "popsize": s.sizes.island_popsize,
            "sigma": 0.1, "options": {"lr": 0.05, "table_size": s.sizes.island_table_size}}
    if device == "cuda":
        spec["num_gpus"] = 1
    return [sys.executable, "-m", "islands.launch", "--env", "CartPole-v1", "--islands", "1",
            "--island-specs", json.dumps([spec]), "--device", device, "--out", str(run_dir),
            "--seed", "0", "--time-budget", str(s.sizes.island_budget_s),
            "--generations", "1000000", "--test-episodes", str(s.sizes.island_test_episodes),
            "--dashboard", "off", "--quiet", "on", "--tensorboard", "off"]


def _island_run(s: Suite, device: str) -> dict:
    """One launcher run; its figures from the run directory's summary.json."""
    run_dir = s.out / "nt_island" / device
    shutil.rmtree(run_dir, ignore_errors=True)
    cmd = _island_cmd(s, device, run_dir)
    proc = _child(cmd, timeout=s.sizes.island_budget_s + 300)
    summary = json.loads((run_dir / "summary.json").read_text())
    wall = summary["wall_s"]
    row = {"device": device, "solved": summary["solved"], "wall_s": wall,
           "wall_to_solve": summary["wall_to_solve"], "startup_s": summary.get("startup_s"),
           "env_steps": summary["total_env_steps"],
           "steps_per_s": summary["total_env_steps"] / wall, "test_mean": summary["test_mean"],
           "generations": sum(summary["generations"].values()),
           "backend": summary.get("backend"), "rc": proc.returncode,
           "command": shlex.join(["python", *cmd[1:]])}
    s.say(f"  nt_island {device}: solved {row['solved']}, wall {wall:.1f} s, "
          f"{row['steps_per_s']:,.0f} steps/s")
    return row


def _spawn(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    """``cmd`` in the repository root, without RAY_ADDRESS (it starts its own Ray)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _child(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    """``_spawn``, raising with the child's last stderr line when it fails."""
    proc = _spawn(cmd, timeout)
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        raise RuntimeError(f"exit {proc.returncode}: {tail}")
    return proc


# ---- archipelago_scaling -------------------------------------------------------------------
def part_archipelago_scaling(s: Suite, fig: dict) -> None:
    """Island counts up to this machine's cores, one Ray in a child process."""
    cores = os.cpu_count() or 1
    counts = [n for n in s.sizes.scaling_counts if n <= cores]
    secs = s.sizes.scaling_seconds
    code = (f"import sys; sys.path.insert(0, {str(BENCH)!r}); import gpu_suite; "
            f"gpu_suite.scaling_child({counts!r}, {secs!r}, {cores})")
    proc = _child([sys.executable, "-c", code], timeout=len(counts) * (secs + 120) + 120)
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    one = rows[0]["steps_per_s"]
    for r in rows:
        r["efficiency"] = r["steps_per_s"] / (r["islands"] * one)
    fig.update(env=SCALING_ENV, seconds=secs, cpus=cores, rows=rows,
               not_run=[n for n in s.sizes.scaling_counts if n > cores])


def scaling_child(counts: list[int], seconds: float, cpus: int) -> None:
    """In the child process: one local Ray, ``throughput`` per island count, a JSON line."""
    import archipelago_scaling as scaling  # imports Ray: only here
    import ray

    ray.init(address="local", num_cpus=max(cpus, *counts), include_dashboard=False,
             object_store_memory=500 * 1024**2, log_to_driver=False)
    try:
        rows = [scaling.throughput(SCALING_ENV, n, seconds, seed=0) for n in counts]
    finally:
        ray.shutdown()
    print(json.dumps(rows), flush=True)


# ---- pytest_gpu ----------------------------------------------------------------------------
def part_pytest_gpu(s: Suite, fig: dict) -> None:
    """``pytest -m gpu -q`` in a child process: its counts and exit status."""
    if not s.cuda:
        raise Skip("no CUDA (cpu device): every gpu test would skip")
    if s.args.quick:
        raise Skip("--quick")
    proc = _spawn([sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider"],
                  timeout=480)
    rc, text = proc.returncode, proc.stdout.strip()
    last = text.splitlines()[-1] if text else ""
    counts = {k: 0 for k in ("passed", "failed", "skipped", "errors", "deselected")}
    for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected)", last):
        counts["errors" if word.startswith("error") else word] = int(n)
    if rc not in (0, 1, 5):  # 1: tests failed, 5: none collected; else pytest itself broke
        raise RuntimeError(f"pytest exit {rc}: {last or proc.stderr.strip()[-200:]}")
    fig.update(rc=rc, **counts, summary=last,
               failures=[ln[:300] for ln in text.splitlines()
                         if ln.startswith(("FAILED", "ERROR"))])
    if rc:
        fig.update(status="failed", reason=f"pytest exit {rc}: {last}")


PART_FNS = {"cartpole": part_cartpole, "snake": part_snake, "pong": part_pong,
            "noise_table": part_noise_table, "nt_island": part_nt_island,
            "archipelago_scaling": part_archipelago_scaling, "pytest_gpu": part_pytest_gpu}


# ---- tables --------------------------------------------------------------------------------
def _n(x, fmt=",.0f") -> str:
    return "-" if x is None else format(x, fmt)


def _ms(x) -> str:
    return "-" if x is None else f"{x * 1e3:.2f}"


def table_throughput(p: dict) -> tuple[str, list[str], list[list[str]]]:
    modes = "; ".join(f"{m}: {v['status']}" + (f" ({v['reason']})" if v["reason"] else "")
                      for m, v in p["modes"].items())
    note = ("Baseline: the same env with random actions and no policy (the ceiling on this "
            "device); x random = policy steps/s / random steps/s. MLP 64-64, 256 episodes per "
            f"individual. Modes: {modes}.")
    if p["rows"] and p["rows"][0]["bench"] == "cartpole":
        note += (f" Best: {_n(p['best_steps_per_s'])} steps/s ({p['best_row']}); goal >= 200M "
                 "on one H100; gymnax CartPole ~20M with a random policy on an A100.")
    head = ["compile", "N envs", "P x E", "policy steps/s", "random steps/s", "x random",
            "live", "return", "wall s"]
    rows = [[r["compile"], _n(r["N"]), f"{r['P']} x {r['E']}", _n(r["steps_per_s"]),
             _n(r["random_steps_per_s"]), _n(r["ratio"], ".2f"), _n(r["live_fraction"], ".2f"),
             _n(r["mean_return"], ".1f"), _n(r["wall_s"], ".2f")] for r in p["rows"]]
    return note, head, rows


def table_pong(p: dict) -> tuple[str, list[str], list[list[str]]]:
    note = (f"EnvPool Pong-v5, {p['threads']} EnvPool threads, CNN on CUDA. Baseline: random "
            "actions, no policy; x random = policy steps/s / random steps/s.")
    head = ["dtype", "N envs", "P x E", "policy steps/s", "random steps/s", "x random",
            "wall s"]
    rows = [[r["dtype"], _n(r["N"]), f"{r['P']} x {r['E']}", _n(r["steps_per_s"]),
             _n(r["random_steps_per_s"]), _n(r["ratio"], ".2f"), _n(r["wall_s"], ".2f")]
            for r in p["rows"]]
    return note, head, rows


def table_noise_table(p: dict) -> tuple[str, list[str], list[list[str]]]:
    note = (f"One generation's ask / tell, popsize {p['popsize']}, median of {p['repeats']}; "
            f"CPU with {p['cpu_threads']} torch threads. Baseline: openai-es-nt on the CPU; "
            "x CPU = its time / this time (> 1: faster). openai-es = plain numpy float64.")
    head = ["dim", "impl", "device", "method", "ask_tensor ms", "ask ms", "tell ms",
            "tell x CPU", "ask x CPU", "tell MB"]
    rows = [[_n(r["dim"]), r["impl"], r["device"], r["method"], _ms(r["ask_tensor_s"]),
             _ms(r["ask_s"]), _ms(r["tell_s"]), _n(r.get("tell_x_cpu"), ".2f"),
             _n(r.get("ask_x_cpu"), ".2f"), _n(r["tell_mb"], ".1f")] for r in p["rows"]]
    return note, head, rows


def table_nt_island(p: dict) -> tuple[str, list[str], list[list[str]]]:
    note = (f"openai-es-nt on torch-native CartPole-v1, popsize {p['popsize']}, time budget "
            f"{p['time_budget_s']:.0f} s, seed 0. Baseline: the CPU run; x CPU = steps/s over "
            "the CPU's. " + (p.get("cuda") or ""))
    cpu = next((r["steps_per_s"] for r in p["rows"] if r["device"] == "cpu"), None)
    head = ["device", "solved", "wall s", "to solve s", "env steps", "steps/s", "x CPU",
            "test mean", "generations"]
    rows = [[r["device"], str(r["solved"]), _n(r["wall_s"], ".1f"), _n(r["wall_to_solve"], ".1f"),
             _n(r["env_steps"]), _n(r["steps_per_s"]), _n(cpu and r["steps_per_s"] / cpu, ".2f"),
             _n(r["test_mean"], ".1f"), _n(r["generations"])] for r in p["rows"]]
    return note, head, rows


def table_archipelago_scaling(p: dict) -> tuple[str, list[str], list[list[str]]]:
    note = (f"{p['env']}, one CPU per island, {p['seconds']:.0f} s each, Ray with {p['cpus']} "
            "CPUs. Baseline: 1 island; efficiency = steps/s(n) / (n x steps/s(1))."
            + (f" Not run (more islands than cores): {p['not_run']}." if p["not_run"] else ""))
    head = ["islands", "steps/s", "x 1 island", "efficiency", "generations", "gen time s"]
    one = p["rows"][0]["steps_per_s"]
    rows = [[str(r["islands"]), _n(r["steps_per_s"]), _n(r["steps_per_s"] / one, ".2f"),
             _n(r["efficiency"], ".2f"), _n(r["generations"]), _n(r["generation_s"], ".3f")]
            for r in p["rows"]]
    return note, head, rows


def table_pytest_gpu(p: dict) -> tuple[str, list[str], list[list[str]]]:
    head = ["rc", "passed", "failed", "skipped", "errors"]
    note = "; ".join([p["summary"], *p.get("failures", [])])
    return note, head, [[str(p[k]) for k in ("rc", "passed", "failed", "skipped",
                                                       "errors")]]


TABLES = {"cartpole": table_throughput, "snake": table_throughput, "pong": table_pong,
          "noise_table": table_noise_table, "nt_island": table_nt_island,
          "archipelago_scaling": table_archipelago_scaling, "pytest_gpu": table_pytest_gpu}


def md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def part_markdown(name: str, p: dict) -> list[str]:
    """A part's section: its status line, then (when it ran) its note and table."""
    lines = [f"## {name}", "", f"{p['status']} ({p['elapsed_s']:.1f} s)"
             + (f": {p['reason']}" if p["reason"] else ""), ""]
    if p.get("rows") or name == "pytest_gpu" and "rc" in p:
        try:
            note, head, rows = TABLES[name](p)
            lines += [note, "", *md_table(head, rows), ""]
        except Exception as e:  # a partial record: its figures are still in gpu.json
            lines += [f"(table not rendered: {one_line(e)})", ""]
    return lines


def markdown(rec: dict) -> str:
    lines = ["# GPU suite", "", f"- date: {rec['date']}", f"- device: {rec['device']}",
             f"- commit: `{rec['commit']}`", f"- command: `{rec['command']}`"]
    if "wall_s" in rec:
        lines.append(f"- suite wall time: {rec['wall_s']:.0f} s")
    lines.append("")
    for name, p in rec["parts"].items():
        lines += part_markdown(name, p)
    return "\n".join(lines)


# ---- the run -------------------------------------------------------------------------------
def one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


def run_part(s: Suite, name: str) -> dict:
    """One part, never raising: ok with its figures, skipped or failed with a reason."""
    t = time.perf_counter()
    budget = s.args.budget_s
    if name not in s.args.parts:
        p = {"status": "skipped", "reason": "not in --parts"}
    elif budget is not None and s.elapsed() >= budget:
        p = {"status": "skipped", "reason": f"time budget (--budget-s {budget:g} spent)"}
    else:
        s.say(f"{name}: start")
        fig: dict = {}  # filled as the part goes: a failure keeps what it measured
        try:
            PART_FNS[name](s, fig)
            p = {"status": "ok", "reason": None, **fig}
        except Skip as e:
            p = {"status": "skipped", "reason": str(e)}
        except Exception as e:  # recorded; the next part runs
            p = {"status": "failed", "reason": one_line(e), **fig}
        _free(s.device)
    p["elapsed_s"] = time.perf_counter() - t
    return p


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage block (as islands.launch does)
        self.exit(2, f"{self.prog}: error: {message}\n")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parts = "\n".join(f"  {k:20} {v}" for k, v in PART_HELP.items())
    ap = _Parser(prog="gpu_suite.py", description=__doc__.split("\n")[0],
                 formatter_class=argparse.RawDescriptionHelpFormatter,
                 epilog=f"parts, in the order they run:\n{parts}\n\nOutputs: DIR/gpu.json, "
                 "DIR/gpu.md, DIR/nt_island/<device>/ (the island runs); the last stdout line "
                 "is gpu.json. Sizes and what each part measures: the module docstring.")
    ap.add_argument("--device", choices=["cuda", "cpu"],
                    default="cuda" if torch.cuda.is_available() else "cpu",
                    help="device of the GPU parts (default: cuda when available, else cpu)")
    ap.add_argument("--quick", action="store_true",
                    help="tiny sizes everywhere: a smoke run (about 2 minutes on a 2-core CPU)")
    ap.add_argument("--out", metavar="DIR", default="gpu-suite-out", type=Path,
                    help="output directory (default: ./gpu-suite-out)")
    ap.add_argument("--parts", metavar="A,B", default=",".join(PARTS),
                    help="comma list of the parts to run (default: all); the others are "
                    "recorded as skipped")
    ap.add_argument("--budget-s", metavar="SECONDS", type=float, default=None,
                    help="soft time budget: parts that would start after it are skipped "
                    "(default: none)")
    args = ap.parse_args(argv)
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    bad = [p for p in args.parts if p not in PARTS]
    if bad or not args.parts:
        what = f"unknown part(s) {', '.join(map(repr, bad))}" if bad else "no part given"
        ap.error(f"--parts: {what}; parts: {', '.join(PARTS)}")
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: CUDA is not available on this machine")
    if args.budget_s is not None and not args.budget_s > 0:
        ap.error(f"--budget-s must be > 0, got {args.budget_s:g}")
    return args


def describe_device(device: torch.device) -> str:
    cores = f"{os.cpu_count()} CPU cores"
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)}, {cores}"
    return f"CPU ({cores}), no GPU used"


def git_commit() -> str:
    """HEAD's hash; ``GIT_COMMIT`` where the copy has no .git (the GPU machine's)."""
    if os.environ.get("GIT_COMMIT"):
        return os.environ["GIT_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def write(s: Suite) -> None:
    (s.out / "gpu.json").write_text(json.dumps(s.record, indent=1) + "\n")
    (s.out / "gpu.md").write_text(markdown(s.record) + "\n")


def main(argv: list[str] | None = None) -> dict:
    """Run the selected parts in order, writing gpu.json / gpu.md after each one."""
    args = parse_args(argv)
    device = torch.device(args.device)
    sizes = QUICK if args.quick else FULL_CUDA if device.type == "cuda" else FULL_CPU
    args.out = args.out.resolve()  # the island runs' children work in the repository root
    args.out.mkdir(parents=True, exist_ok=True)
    me = Path(__file__).resolve().relative_to(ROOT).as_posix()
    command = shlex.join(["python", *(sys.argv if argv is None else [me, *argv])])
    record = {"device": describe_device(device), "commit": git_commit(),
              "date": datetime.now().astimezone().isoformat(timespec="seconds"),
              "command": command, "torch": torch.__version__, "quick": args.quick,
              "sizes": json.loads(json.dumps(dataclasses.asdict(sizes))), "parts": {}}
    s = Suite(args, device, sizes, args.out, time.perf_counter(), record)
    s.say(f"gpu suite on {record['device']}, torch {torch.__version__}, "
          f"{'quick' if args.quick else 'full'} sizes, out {args.out}")
    for name in PARTS:
        p = run_part(s, name)
        record["parts"][name] = p
        if name in args.parts:
            print("\n".join(part_markdown(name, p)), flush=True)
        write(s)
    record["wall_s"] = s.elapsed()
    write(s)
    s.say(f"done: {args.out / 'gpu.json'}, {args.out / 'gpu.md'}")
    print(json.dumps(record, separators=(",", ":")), flush=True)
    return record


if __name__ == "__main__":
    main()
