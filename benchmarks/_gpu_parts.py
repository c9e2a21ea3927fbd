"""The GPU suite's parts (``gpu_suite.py`` runs them): what each measures, at which sizes.

Each part is ``part_NAME(suite, fig)``: it fills ``fig`` as it goes (a part that raises keeps
what it measured), raises :class:`Skip` with the reason where it cannot run here, and reuses
the measuring functions of the standalone scripts (``gpu_throughput.py``,
``noise_table_update.py``, ``archipelago_scaling.py``). This module imports them as siblings:
relatively when the suite runs as ``python -m benchmarks.gpu_suite``, by their plain names
when it runs as ``python benchmarks/gpu_suite.py`` (its folder is then first on the path).
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
from pathlib import Path

import numpy as np
import torch

from islands.strategies.noise_table import resolve_access

if __package__:  # python -m benchmarks.gpu_suite
    from . import gpu_throughput as gt
    from . import mjwarp_speed as mjs
    from . import noise_table_update as nut
else:  # python benchmarks/gpu_suite.py
    import gpu_throughput as gt
    import mjwarp_speed as mjs
    import noise_table_update as nut

ROOT = Path(__file__).resolve().parents[1]
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
    # the island run's generation cap: a speed figure runs to the clock (the budget above);
    # a smoke run (QUICK) to a generation count, so whether it solves does not depend on
    # how fast the machine is (its budget is then only a cap for a stuck run)
    island_generations: int = 1_000_000
    # the island's noise and step size: the full sizes keep gpu.md's measured settings; a
    # smoke run takes larger ones that solve its CartPole in fewer generations (seed 0:
    # 31 generations at 0.2 / 0.1 against 49 at 0.1 / 0.05)
    island_sigma: float = 0.1
    island_lr: float = 0.05
    # MuJoCo Warp: tasks, world counts, timed seconds per row (the part "mujoco")
    mujoco_envs: tuple[str, ...] = ("Hopper-v4", "Ant-v4", "Humanoid-v4")
    mujoco_worlds: tuple[int, ...] = (1024, 8192, 65536)
    mujoco_seconds: float = 3.0
    # humanoid: launcher flags of the run to 6,000 (the env row's ARS V2-t, ars-nt islands)
    humanoid: tuple[str, ...] = ("--islands", "4", "--gpus-per-island", "0.25",
                                 "--popsize-scale", "8", "--time-budget", "540")


FULL_CUDA = Sizes(  # about 7 minutes on one H100 with 16 cores (estimate: the module doc)
    cartpole=(1024, 16384, 262144, 1048576), cartpole_compile=(16384, 1048576),
    snake=(1024, 16384, 262144), snake_compile=(), repeats=2, random_steps=100,
    pong_envs=1024, pong_steps=200, dims=(100_000, 1_000_000, 10_000_000),
    plain_max_dim=100_000, nt_repeats=3, table_size=2**25, island_popsize=4096,
    island_budget_s=60.0, island_table_size=2**25, island_test_episodes=100,
    scaling_counts=(1, 2, 4, 8, 16), scaling_seconds=6.0)
FULL_CPU = dataclasses.replace(  # --device cpu without --quick: CPU-sized rows
    FULL_CUDA, cartpole=(1024, 16384), cartpole_compile=(16384,), snake=(1024, 4096),
    dims=(100_000, 1_000_000), island_popsize=256, mujoco_worlds=(64, 256),
    humanoid=("--islands", "2", "--backend", "torch", "--time-budget", "600"))
QUICK = dataclasses.replace(  # a smoke run: every part at tiny sizes
    FULL_CUDA, cartpole=(256, 1024), cartpole_compile=(1024,), snake=(256, 1024),
    repeats=1, random_steps=20, pong_envs=64, pong_steps=50, dims=(10_000, 100_000),
    nt_repeats=2, table_size=2**18, island_popsize=64, island_budget_s=300.0,
    island_table_size=2**20, island_test_episodes=20, scaling_counts=(1, 2),
    scaling_seconds=4.0, island_generations=150,  # seed 0 solves at about 31
    island_sigma=0.2, island_lr=0.1,
    mujoco_envs=("Hopper-v4",), mujoco_worlds=(16,), mujoco_seconds=1.0,
    humanoid=("--islands", "1", "--backend", "torch", "--popsize", "8", "--strategy-options",
              '{"lr": 0.02, "top": 4}', "--max-episode-steps", "10", "--generations", "2",
              "--target", "none", "--test-episodes", "2", "--test-max-episode-steps", "10",
              "--time-budget", "300"))


def with_humanoid_budget(sizes: Sizes, seconds: float) -> Sizes:
    """``sizes`` with the humanoid run's ``--time-budget`` set to ``seconds``."""
    flags = list(sizes.humanoid)
    at = flags.index("--time-budget") + 1
    flags[at] = f"{seconds:g}"
    return dataclasses.replace(sizes, humanoid=tuple(flags))


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


def one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


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
            free_memory(s.device)
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
            free_memory(dev)
        cpu = next(r for r in group if r["impl"] == "openai-es-nt" and r["device"] == "cpu")
        for r in group:
            r["tell_x_cpu"] = cpu["tell_s"] / r["tell_s"]
            r["ask_x_cpu"] = cpu["ask_tensor_s"] / (r["ask_tensor_s"] or r["ask_s"])
            s.say(f"  dim {dim} {r['impl']} {r['device']}: tell {r['tell_s'] * 1e3:.2f} ms")
        rows += group


def free_memory(device: torch.device) -> None:
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
            "sigma": s.sizes.island_sigma,
            "options": {"lr": s.sizes.island_lr, "table_size": s.sizes.island_table_size}}
    if device == "cuda":
        spec["num_gpus"] = 1
    return [sys.executable, "-m", "islands.launch", "--env", "CartPole-v1", "--islands", "1",
            "--island-specs", json.dumps([spec]), "--device", device, "--out", str(run_dir),
            "--seed", "0", "--time-budget", str(s.sizes.island_budget_s),
            "--generations", str(s.sizes.island_generations),
            "--test-episodes", str(s.sizes.island_test_episodes),
            "--dashboard", "off", "--quiet", "on", "--tensorboard", "off", *_join(s)]


def _join(s: Suite) -> list[str]:
    """The launcher flags that join the suite's ``--address`` Ray (none: its own Ray)."""
    return [] if s.args.address is None else ["--address", s.args.address]


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
    """``cmd`` in the repository root, without RAY_ADDRESS (it starts its own Ray, or joins
    the one its flags name)."""
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
    """Island counts up to this machine's cores, one Ray in a child process (or the
    ``--address`` Ray, joined by the child)."""
    cores = os.cpu_count() or 1
    counts = [n for n in s.sizes.scaling_counts if n <= cores]
    secs = s.sizes.scaling_seconds
    code = ("from benchmarks._gpu_parts import scaling_child; "  # cwd: the repository root
            f"scaling_child({counts!r}, {secs!r}, {cores}, {s.args.address!r})")
    proc = _child([sys.executable, "-c", code], timeout=len(counts) * (secs + 120) + 120)
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    one = rows[0]["steps_per_s"]
    for r in rows:
        r["efficiency"] = r["steps_per_s"] / (r["islands"] * one)
    fig.update(env=SCALING_ENV, seconds=secs, cpus=cores, rows=rows,
               not_run=[n for n in s.sizes.scaling_counts if n > cores])


def scaling_child(counts: list[int], seconds: float, cpus: int,
                  address: str | None = None) -> None:
    """In the child process: one local Ray (or the one at ``address``, joined),
    ``throughput`` per island count, a JSON line."""
    import ray

    from . import archipelago_scaling as scaling  # imports Ray: only here (a package child)

    if address is None:
        ray.init(address="local", num_cpus=max(cpus, *counts), include_dashboard=False,
                 object_store_memory=500 * 1024**2, log_to_driver=False)
    else:
        ray.init(address=address, log_to_driver=False)
    try:
        rows = [scaling.throughput(SCALING_ENV, n, seconds, seed=0) for n in counts]
    finally:
        ray.shutdown()
    print(json.dumps(rows), flush=True)


# ---- mujoco ---------------------------------------------------------------------------------
def part_mujoco(s: Suite, fig: dict) -> None:
    """MuJoCo Warp env steps/s (``envs/mjwarp.py``, a random linear policy, on the suite's
    device) per task and world count, against EnvPool on all of the machine's cores: one
    baseline per task at 8 envs per core, where its rate levels off
    (``mjwarp_speed.py``)."""
    from envs.torch_registry import mujoco_warp_installed

    if not mujoco_warp_installed():
        raise Skip('MuJoCo Warp is not installed (pip install -e ".[warp]"; the GPU machine: '
                   "make-kit with EXTRA, docs/results/mjwarp.md)")
    cores, secs = os.cpu_count() or 1, s.sizes.mujoco_seconds
    rows: list[dict] = []
    fig.update(rows=rows, seconds=secs, cpus=cores, envpool_envs=8 * cores)
    for env_id in s.sizes.mujoco_envs:
        base = mjs.envpool_rate(env_id, 8 * cores, secs)["steps_per_s"]
        for n in s.sizes.mujoco_worlds:
            w = mjs.warp_rate(env_id, n, secs, str(s.device))
            rows.append({"env": env_id, "N": n, "steps_per_s": w["steps_per_s"],
                         "first_step_s": w["first_step_s"], "envpool_steps_per_s": base,
                         "x_envpool": w["steps_per_s"] / base})
            s.say(f"  mujoco {env_id} x {n}: {w['steps_per_s']:,.0f} steps/s, "
                  f"{rows[-1]['x_envpool']:.2f}x EnvPool")
            free_memory(s.device)


# ---- humanoid -------------------------------------------------------------------------------
def part_humanoid(s: Suite, fig: dict) -> None:
    """Humanoid-v4 with ars-nt islands through ``python -m islands.launch`` (a subprocess,
    its own Ray): on a GPU the islands share it and play MuJoCo Warp there (the env row's
    ARS V2-t settings, ``Sizes.humanoid``'s shape and budget); solved (6,000, confirmed),
    wall, episodes, env steps. Quick: a smoke run of 2 generations on the CPU."""
    from envs.torch_registry import mujoco_warp_installed

    if not mujoco_warp_installed():
        raise Skip('MuJoCo Warp is not installed (pip install -e ".[warp]")')
    run_dir = s.out / "humanoid"
    shutil.rmtree(run_dir, ignore_errors=True)
    cmd = [sys.executable, "-m", "islands.launch", "--env", "Humanoid-v4", "--strategy",
           "ars-nt", *s.sizes.humanoid, "--out", str(run_dir), "--seed", "0",
           "--dashboard", "off", "--quiet", "on", "--tensorboard", "off", *_join(s)]
    proc = _child(cmd, timeout=900)
    sm = json.loads((run_dir / "summary.json").read_text())
    row = {"islands": len(sm["generations"]), "backends": sm.get("backends"),
           "solved": sm["solved"], "wall_s": sm["wall_s"], "wall_to_solve": sm["wall_to_solve"],
           "episodes": sm.get("total_episodes"), "env_steps": sm["total_env_steps"],
           "steps_per_s": sm["total_env_steps"] / sm["wall_s"], "test_mean": sm["test_mean"],
           "generations": sum(sm["generations"].values())}
    fig.update(command=shlex.join(["python", *cmd[1:]]), rc=proc.returncode, rows=[row])
    s.say(f"  humanoid: solved {row['solved']}, wall {row['wall_s']:.0f} s, test "
          f"{row['test_mean']}, {row['steps_per_s']:,.0f} steps/s")


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
            "archipelago_scaling": part_archipelago_scaling, "mujoco": part_mujoco,
            "humanoid": part_humanoid, "pytest_gpu": part_pytest_gpu}
