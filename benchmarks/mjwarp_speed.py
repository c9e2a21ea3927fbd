"""MuJoCo Warp's env steps per second against EnvPool's, same task, same batch, same policy.

For each task in ``--envs`` and each batch size in ``--worlds`` this runs, one after the
other in the same call:

* EnvPool (the baseline): ``num_envs = batch_size = N`` envs on all of the machine's cores
  (``num_threads = os.cpu_count()``), auto-reset, actions from a random linear policy in
  numpy;
* MuJoCo Warp (``envs/mjwarp.py``) on ``--device``: the torch backend's env, ``N`` worlds
  stepped together (``step_state``), actions from the same linear policy in torch, all on
  the device, episodes that end restarted from their first state.

Each side first steps until Warp's kernels are compiled and loaded (untimed), then for
``--seconds``; steps/s = N x steps / seconds, env steps (Gymnasium's, each ``frame_skip``
physics steps). ``ratio``: Warp's steps/s over EnvPool's at the largest batch of the first
task. On the CPU this is a check that the path works, not a GPU figure.

    python benchmarks/mjwarp_speed.py --envs Hopper-v4 --worlds 64,256 --seconds 5
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch

from islands.output import benchmarking as bench


def linear_policy(obs_dim: int, act_dim: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, 0.1, (obs_dim, act_dim))


def envpool_rate(env_id: str, n: int, seconds: float) -> dict:
    from envs.spaces import import_envpool

    envpool = import_envpool()
    env = envpool.make(env_id, env_type="gymnasium", num_envs=n, batch_size=n,
                       num_threads=os.cpu_count() or 1, seed=0)
    obs, _ = env.reset()
    w = linear_policy(obs.shape[1], env.action_space.shape[0])
    for _ in range(10):  # warm-up
        obs, *_ = env.step(np.tanh(obs @ w))
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        obs, *_ = env.step(np.tanh(obs @ w))
        steps += 1
    dt = time.perf_counter() - t0
    env.close()
    return {"impl": "envpool", "steps": steps * n, "seconds": dt,
            "steps_per_s": steps * n / dt}


def warp_rate(env_id: str, n: int, seconds: float, device: str) -> dict:
    from envs.torch_registry import TORCH_ENVS

    env = TORCH_ENVS[env_id](device=device)
    t0 = time.perf_counter()
    start = env.initial_states(n, seed=0)
    st = start
    w = torch.as_tensor(linear_policy(env.obs_shape[0], env.action.shape[0]),
                        dtype=torch.float32, device=device)

    def step(st):
        st, _, term, trunc = env.step_state(st, torch.tanh(env.observe(st) @ w))
        done = (term | trunc)[:, None]
        return tuple(torch.where(done.view(-1, *[1] * (a.dim() - 1)), s, a)
                     for a, s in zip(st, start, strict=True))

    st = step(st)  # compiles and loads Warp's kernels
    compile_s = time.perf_counter() - t0
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        st = step(st)
        steps += 1
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    return {"impl": f"mjwarp-{device}", "steps": steps * n, "seconds": dt,
            "steps_per_s": steps * n / dt, "first_step_s": compile_s}


def main(argv: list[str] | None = None) -> dict:
    p = bench.parser(__doc__)
    p.add_argument("--envs", default="Hopper-v4", help="comma-separated task ids")
    p.add_argument("--worlds", default="64,256", help="comma-separated batch sizes")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    bench.add_seconds(p, 5.0, "timed seconds per row and side")
    bench.add_quick(p, "Hopper-v4 at 16 worlds for 1 s")
    args = p.parse_args(argv)
    envs = ["Hopper-v4"] if args.quick else args.envs.split(",")
    worlds = [16] if args.quick else [int(x) for x in args.worlds.split(",")]
    seconds = 1.0 if args.quick else args.seconds
    rows = []
    print(f"{'env':<16}{'N':>7}{'envpool/s':>12}{'warp/s':>12}{'x envpool':>11}{'first s':>9}")
    for env_id in envs:
        for n in worlds:
            base = envpool_rate(env_id, n, seconds)
            w = warp_rate(env_id, n, seconds, args.device)
            row = {"env": env_id, "N": n, "envpool": base, "warp": w,
                   "ratio": w["steps_per_s"] / base["steps_per_s"]}
            rows.append(row)
            print(f"{env_id:<16}{n:>7}{base['steps_per_s']:>12,.0f}{w['steps_per_s']:>12,.0f}"
                  f"{row['ratio']:>11.3f}{w['first_step_s']:>9.1f}", flush=True)
    first = [r for r in rows if r["env"] == envs[0]]
    return bench.emit("mjwarp_speed", rows, "envpool", first[-1]["ratio"],
                      device=args.device, seconds=seconds)


if __name__ == "__main__":
    main()
