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
* ``mujoco`` / ``humanoid``: MuJoCo Warp steps/s at 1K-64K worlds vs EnvPool on all cores
  (``mjwarp_speed.py``) / Humanoid-v4 to 6,000 with ars-nt GPU islands (results/mjwarp.md).
* ``pytest_gpu``: ``pytest -m gpu -q`` (needs CUDA; skipped in --quick).

``--quick`` runs tiny sizes everywhere (a 2-core CPU finishes in about 2.5 minutes; its
island run goes to a generation count, not the clock, so that it solves on any machine); the full
suite is sized for 8 minutes on one H100 with 16 cores (estimated ~7: compiles ~2, the
island runs ~1, scaling ~1.5, pytest ~1, the rest ~1.5). ``--seconds`` (a soft budget) skips
parts that would start after it ("time budget"). Prints each part's table as it goes, writes
gpu.json / gpu.md after every part, and prints gpu.json as the last stdout line (the shape of
``islands.output.benchmarking``: a row per part; each part's note names its baseline). The parts
are in ``_gpu_parts.py``, their tables in ``_gpu_tables.py``.

    python benchmarks/gpu_suite.py --out gpu-suite-out          # CUDA when available
    python benchmarks/gpu_suite.py --device cpu --quick --out /tmp/suite
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
import time
from datetime import datetime
from pathlib import Path

import torch

from islands.output import benchmarking as bench

if __package__:  # python -m benchmarks.gpu_suite
    from . import _gpu_parts as parts
    from . import _gpu_tables as tables
else:  # python benchmarks/gpu_suite.py: this folder is first on the path
    import _gpu_parts as parts
    import _gpu_tables as tables

PART_FNS = parts.PART_FNS  # name -> part function (the one dict: tests replace a part in it)
PARTS = ("cartpole", "snake", "pong", "noise_table", "nt_island", "archipelago_scaling",
         "mujoco", "humanoid", "pytest_gpu")
PART_HELP = {
    "cartpole": "torch-native CartPole + MLP steps/s, eager and torch.compile, vs random",
    "snake": "torch-native Snake + MLP steps/s (eager), vs random actions",
    "pong": "EnvPool Pong + CNN on CUDA, float32 and bfloat16 (CUDA only)",
    "noise_table": "openai-es-nt ask / tell at 100K-10M parameters, CUDA vs CPU",
    "nt_island": "an openai-es-nt island through islands.launch on CartPole, CUDA vs CPU",
    "archipelago_scaling": "LunarLander env steps/s with 1-16 islands, efficiency vs 1",
    "mujoco": "MuJoCo Warp Hopper/Ant/Humanoid steps/s at 1K-64K worlds vs EnvPool",
    "humanoid": "Humanoid-v4 to 6,000 with ars-nt islands on MuJoCo Warp (launcher)",
    "pytest_gpu": "pytest -m gpu -q (CUDA only, not in --quick)",
}


def run_part(s: parts.Suite, name: str) -> dict:
    """One part, never raising: ok with its figures, skipped or failed with a reason."""
    t = time.perf_counter()
    budget = s.args.seconds
    if name not in s.args.parts:
        p = {"status": "skipped", "reason": "not in --parts"}
    elif budget is not None and s.elapsed() >= budget:
        p = {"status": "skipped", "reason": f"time budget (--seconds {budget:g} spent)"}
    else:
        s.say(f"{name}: start")
        fig: dict = {}  # filled as the part goes: a failure keeps what it measured
        try:
            PART_FNS[name](s, fig)
            p = {"status": "ok", "reason": None, **fig}
        except parts.Skip as e:
            p = {"status": "skipped", "reason": str(e)}
        except Exception as e:  # recorded; the next part runs
            p = {"status": "failed", "reason": parts.one_line(e), **fig}
        parts.free_memory(s.device)
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
    bench.add_quick(ap, "tiny sizes everywhere: a smoke run (about 2 minutes on a 2-core CPU)")
    bench.add_out(ap, "gpu-suite-out", "output directory (default: ./gpu-suite-out)", type=Path)
    ap.add_argument("--parts", metavar="A,B", default=",".join(PARTS),
                    help="comma list of the parts to run (default: all); the others are "
                    "recorded as skipped")
    bench.add_seconds(ap, None, "soft time budget: parts that would start after it are "
                      "skipped (default: none)", old=("--budget-s",))
    ap.add_argument("--address", default=None, metavar="HOST:PORT",
                    help="the parts that run on Ray (nt_island, archipelago_scaling, "
                    "humanoid) join this running Ray instead of starting one each (default: "
                    "their own; archipelago_scaling's islands, a CPU each, must fit its CPUs)")
    ap.add_argument("--humanoid-seconds", type=float, default=None, metavar="S",
                    help="the humanoid run's time budget (default: 540 at full size), to fit "
                    "the device time a session has left")
    args = ap.parse_args(argv)
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    bad = [p for p in args.parts if p not in PARTS]
    if bad or not args.parts:
        what = f"unknown part(s) {', '.join(map(repr, bad))}" if bad else "no part given"
        ap.error(f"--parts: {what}; parts: {', '.join(PARTS)}")
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: CUDA is not available on this machine")
    for flag in ("seconds", "humanoid_seconds"):
        v = getattr(args, flag)
        if v is not None and not v > 0:
            ap.error(f"--{flag.replace('_', '-')} must be > 0, got {v:g}")
    return args


def describe_device(device: torch.device) -> str:
    cores = f"{bench.machine_facts()['cpus']} CPU cores"
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)}, {cores}"
    return f"CPU ({cores}), no GPU used"


def write(s: parts.Suite) -> None:
    """gpu.json and gpu.md as they stand; ``rows``: each part's status so far."""
    s.record["rows"] = [{"part": name, "status": p["status"], "reason": p["reason"],
                         "elapsed_s": p["elapsed_s"]} for name, p in s.record["parts"].items()]
    (s.out / "gpu.json").write_text(json.dumps(s.record, indent=1) + "\n")
    (s.out / "gpu.md").write_text(tables.markdown(s.record) + "\n")


def main(argv: list[str] | None = None) -> dict:
    """Run the selected parts in order, writing gpu.json / gpu.md after each one."""
    args = parse_args(argv)
    device = torch.device(args.device)
    sizes = (parts.QUICK if args.quick
             else parts.FULL_CUDA if device.type == "cuda" else parts.FULL_CPU)
    if args.humanoid_seconds is not None:
        sizes = parts.with_humanoid_budget(sizes, args.humanoid_seconds)
    args.out = args.out.resolve()  # the island runs' children work in the repository root
    args.out.mkdir(parents=True, exist_ok=True)
    me = Path(__file__).resolve().relative_to(parts.ROOT).as_posix()
    command = shlex.join(["python", *(sys.argv if argv is None else [me, *argv])])
    record = bench.result(
        "gpu_suite", rows=[], baseline="each part's own (its note in gpu.md)", ratio=None,
        device=describe_device(device),
        date=datetime.now().astimezone().isoformat(timespec="seconds"),
        command=command, torch=torch.__version__, quick=args.quick,
        sizes=json.loads(json.dumps(dataclasses.asdict(sizes))), parts={})
    s = parts.Suite(args, device, sizes, args.out, time.perf_counter(), record)
    s.say(f"gpu suite on {record['device']}, torch {torch.__version__}, "
          f"{'quick' if args.quick else 'full'} sizes, out {args.out}")
    for name in PARTS:
        p = run_part(s, name)
        record["parts"][name] = p
        if name in args.parts:
            print("\n".join(tables.part_markdown(name, p)), flush=True)
        write(s)
    record["wall_s"] = s.elapsed()
    write(s)
    s.say(f"done: {args.out / 'gpu.json'}, {args.out / 'gpu.md'}")
    return bench.emit(**record)


if __name__ == "__main__":
    main()
