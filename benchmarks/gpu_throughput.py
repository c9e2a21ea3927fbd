"""Env steps per second with policy inference in the loop, on one device.

Rows:

* ``cartpole``: :class:`envs.torch_evaluator.TorchEvaluator` on torch-native CartPole-v1,
  ``N`` envs = ``P`` individuals x ``E`` episodes each (``--episodes``), an MLP population
  around a balancing controller (so most episodes run the full 500 steps); steps/s = live
  env steps / wall of whole ``evaluate`` calls (host transfers and result assembly included);
* ``snake``: the same for torch-native Snake-v0 with a random MLP population;
* ``pong``: EnvPool Pong (CPU threads) through ``EnvPoolEvaluator`` with the CNN policy on
  ``--device`` (pinned host buffers and non-blocking copies on CUDA; ``--pong-dtype`` for
  bf16/fp16), when envpool is installed (imported lazily; skipped with the reason otherwise;
  ``--skip-pong`` to leave it out).

Baseline, measured in the same run: the same env stepped with random actions and no policy
(the stateful auto-reset env, so every frame is a live step): the ceiling for that env on
that device. ``ratio`` = policy steps/s / random steps/s.

``--compile`` wraps one rollout step in torch.compile (``reduce-overhead`` adds CUDA graphs);
compilation time is excluded (one warm-up ``evaluate`` first). Design for large N on a GPU:
the state is a few float32 tensors, a step is the MLP's three batched matmuls plus a few
dozen elementwise kernels (fused by torch.compile), and the host syncs only every 16 steps.

    python benchmarks/gpu_throughput.py                      # CPU: 1K and 16K envs
    python benchmarks/gpu_throughput.py --device cuda        # 1K, 16K, 256K, 1M envs
    python benchmarks/gpu_throughput.py --device cuda --compile reduce-overhead

Prints a table and, last, one JSON line (``islands.output.benchmarking``; ``ratio``: the CartPole
row with the most envs; without CartPole rows, the row with the most). Never imports Ray.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from envs.torch_cartpole import TorchCartPole, controller_mlp_params
from envs.torch_evaluator import TorchEvaluator
from envs.torch_snake import TorchSnake
from islands.output import benchmarking as bench

CPU_SIZES = "1024,16384"
CUDA_SIZES = "1024,16384,262144,1048576"
CPU_SNAKE_SIZES = "1024,4096"
CUDA_SNAKE_SIZES = "1024,16384,262144"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _split(n: int, episodes: int) -> tuple[int, int]:
    """N envs as P individuals x E episodes (E capped at N)."""
    E = min(episodes, n)
    return max(1, n // E), E


def random_baseline(env, n_actions: int, steps: int, device: torch.device) -> float:
    """Steps/s of the auto-reset env with uniformly random actions and no policy."""
    g = torch.Generator(device=device).manual_seed(0)
    env.reset(seed=0)
    N = env.num_envs

    def run(k):
        for _ in range(k):
            env.step(torch.randint(0, n_actions, (N,), generator=g, device=device))

    run(3)  # warm-up
    _sync(device)
    t0 = time.perf_counter()
    run(steps)
    _sync(device)
    return N * steps / (time.perf_counter() - t0)


def policy_run(ev: TorchEvaluator, params: torch.Tensor, repeats: int) -> dict:
    ev.evaluate(params, seed=0)  # warm-up (and compilation with --compile)
    _sync(ev.device)
    steps = frames = 0
    wall = 0.0
    fit = []
    for r in range(repeats):
        res = ev.evaluate(params, seed=r + 1)
        steps, frames, wall = steps + res.env_steps, frames + res.frames, wall + res.wall_s
        fit.append(float(np.mean(res.fitness)))
    return {
        "steps_per_s": steps / wall,
        "frames_per_s": frames / wall,
        "live_fraction": steps / max(frames, 1),
        "mean_return": float(np.mean(fit)),
        "wall_s": wall,
    }


def bench_cartpole(n, args, device) -> dict:
    P, E = _split(n, args.episodes)
    ev = TorchEvaluator(
        "CartPole-v1", policy_options={"hidden": args.hidden}, episodes=E, device=device,
        num_threads=args.threads, compile=args.compile,
    )
    g = torch.Generator(device=device).manual_seed(1)
    center = controller_mlp_params(ev.policy.sizes).to(device=device, dtype=torch.float32)
    params = center + args.sigma * torch.randn(P, ev.num_params, generator=g, device=device)
    row = {"bench": "cartpole", "N": P * E, "P": P, "E": E, **policy_run(ev, params, args.repeats)}
    env = TorchCartPole(num_envs=P * E, device=device)
    row["random_steps_per_s"] = random_baseline(env, 2, args.random_steps, device)
    return row


def bench_snake(n, args, device) -> dict:
    P, E = _split(n, args.episodes)
    ev = TorchEvaluator(
        "Snake-v0", policy_options={"hidden": args.hidden}, episodes=E, device=device,
        num_threads=args.threads, compile=args.compile,
    )
    g = torch.Generator(device=device).manual_seed(2)
    params = torch.randn(P, ev.num_params, generator=g, device=device)
    row = {"bench": "snake", "N": P * E, "P": P, "E": E, **policy_run(ev, params, args.repeats)}
    env = TorchSnake(num_envs=P * E, device=device)
    row["random_steps_per_s"] = random_baseline(env, 3, args.random_steps, device)
    return row


def bench_pong(args, device) -> dict | str:
    """EnvPool Pong (CPU threads) through ``EnvPoolEvaluator`` with the CNN policy on
    ``device`` -- the path an island on a GPU node runs: observations land in pinned host
    memory and go to the GPU with non-blocking copies. Every episode is cut at
    ``--pong-steps`` (a random Pong game lasts far longer), so each call steps exactly
    ``N * pong_steps`` live frames. Returns a skip reason where that is impossible."""
    try:
        import envpool  # lazy: the GPU machine may have only torch
    except ImportError as e:
        return f"pong: envpool is not installed ({e})"
    from envs.envpool_evaluator import EnvPoolEvaluator

    N = args.pong_envs if args.pong_envs else (1024 if device.type == "cuda" else 32)
    P, E = _split(N, args.episodes)
    N = P * E
    ev = EnvPoolEvaluator("Pong-v5", policy="cnn", policy_options={"dtype": args.pong_dtype},
                          episodes=E, max_episode_steps=args.pong_steps,
                          num_threads=args.threads, device=device, max_envs=N)
    g = torch.Generator(device=device).manual_seed(3)
    params = 0.05 * torch.randn(P, ev.num_params, generator=g, device=device)
    row = {"bench": "pong", "N": N, "P": P, "E": E,
           **policy_run(ev, params, args.repeats)}
    ev.close()

    env = envpool.make("Pong-v5", env_type="gymnasium", num_envs=N, batch_size=N, seed=0,
                       num_threads=args.threads)
    n_act = int(env.action_space.n)
    rng = np.random.default_rng(0)
    env.reset()
    t0 = time.perf_counter()
    for _ in range(args.pong_steps):
        env.step(rng.integers(0, n_act, N).astype(np.int32))
    row["random_steps_per_s"] = N * args.pong_steps / (time.perf_counter() - t0)
    env.close()
    return row


def main(argv=None) -> dict:
    ap = bench.parser(__doc__)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--sizes", default=None,
                    help=f"CartPole env counts (default {CPU_SIZES} on CPU, {CUDA_SIZES} on CUDA)")
    ap.add_argument("--snake-sizes", default=None,
                    help=f"Snake env counts (default {CPU_SNAKE_SIZES} / {CUDA_SNAKE_SIZES}); "
                    "'' skips Snake")
    ap.add_argument("--episodes", type=int, default=256, help="E: envs per individual")
    ap.add_argument("--hidden", default="64,64", help="MLP hidden sizes")
    ap.add_argument("--sigma", type=float, default=0.02,
                    help="population spread around the balancing controller")
    ap.add_argument("--repeats", type=int, default=2, help="timed evaluate calls per size")
    ap.add_argument("--random-steps", type=int, default=100, help="steps of the random baseline")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads (torch / envpool)")
    ap.add_argument("--compile", default="none",
                    choices=["none", "default", "reduce-overhead", "max-autotune"])
    ap.add_argument("--skip-pong", action="store_true", help="skip EnvPool Pong + CUDA CNN")
    ap.add_argument("--pong-envs", type=int, default=0,
                    help="Pong envs (default 1024 on CUDA, 32 on CPU)")
    ap.add_argument("--pong-steps", type=int, default=200, help="Pong episode cut (steps)")
    ap.add_argument("--pong-dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                    help="CNN compute dtype for Pong")
    args = ap.parse_args(argv)

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda but CUDA is not available")
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    cuda = device.type == "cuda"
    args.hidden = [int(h) for h in args.hidden.split(",") if h]
    args.compile = False if args.compile == "none" else args.compile
    sizes = args.sizes if args.sizes is not None else (CUDA_SIZES if cuda else CPU_SIZES)
    snake = args.snake_sizes
    snake = snake if snake is not None else (CUDA_SNAKE_SIZES if cuda else CPU_SNAKE_SIZES)

    rows, skipped = [], []
    for n in [int(s) for s in sizes.split(",") if s]:
        rows.append(bench_cartpole(n, args, device))
    for n in [int(s) for s in snake.split(",") if s]:
        rows.append(bench_snake(n, args, device))
    if args.skip_pong:
        skipped.append("pong: --skip-pong")
    else:
        out = bench_pong(args, device)
        (skipped.append(out) if isinstance(out, str) else rows.append(out))

    name = torch.cuda.get_device_name(device) if cuda else "cpu"
    print(f"device {name}, torch {torch.__version__}, hidden {args.hidden}, "
          f"compile {args.compile or 'none'}, threads {args.threads}")
    hdr = (f"{'bench':9} {'N':>8} {'P':>6} {'E':>5} {'policy steps/s':>15} {'frames/s':>13} "
           f"{'live':>5} {'random steps/s':>15} {'ratio':>6} {'return':>7} {'wall s':>7}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        r["ratio"] = r["steps_per_s"] / r["random_steps_per_s"]
        print(f"{r['bench']:9} {r['N']:>8} {r['P']:>6} {r['E']:>5} {r['steps_per_s']:>15,.0f} "
              f"{r['frames_per_s']:>13,.0f} {r['live_fraction']:>5.2f} "
              f"{r['random_steps_per_s']:>15,.0f} {r['ratio']:>6.2f} {r['mean_return']:>7.1f} "
              f"{r['wall_s']:>7.2f}")
    for s in skipped:
        print(f"skipped {s}")
    cart = [r for r in rows if r["bench"] == "cartpole"] or rows
    headline = max(cart, key=lambda r: r["N"]) if cart else None
    return bench.emit(
        "gpu_throughput", rows=rows, baseline="the same env, random actions, no policy",
        ratio=headline and headline["ratio"], device=name, compile=args.compile or "none",
        hidden=args.hidden, skipped=skipped,
        ratios={f"{r['bench']}_{r['N']}": round(r["ratio"], 4) for r in rows})


if __name__ == "__main__":
    main()
