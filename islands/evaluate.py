"""Test a genome on fresh episodes; re-evaluate a run's saved solution; render it as a GIF.

``python -m islands.evaluate DIR [--episodes N] [--seed S] [--gif FILE]`` loads
``DIR/solution.npz`` (no unpickling), runs it for N episodes and prints one JSON line
``{"mean", "std", "episodes", ...}``; ``--gif`` also renders one episode with Gymnasium's
``render_mode="rgb_array"`` into an animated GIF (Pillow).

Test seeds: the launcher tests with evaluation seeds from ``TEST_SEED_BASE`` (>= 2**30) up,
training uses seeds below 2**30 (:mod:`islands.seeds`); each seed expands into independent
31-bit episode seeds (``envs.common.episode_seeds``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np

from envs.spec import EvalSpec

from .seeds import TEST_SEED_BASE


def test_genome(spec: EvalSpec, params: np.ndarray, obs_stats: dict[str, Any] | None,
                seed: int, num_threads: int = 1) -> dict[str, Any]:
    """Mean/std of the return of ``params`` over ``spec.episodes`` episodes (frozen obs
    stats)."""
    cpu0 = time.process_time()
    ev = spec.build(num_threads=num_threads, device="cpu")
    try:
        if obs_stats is not None and ev.obs_stats is not None:
            ev.set_obs_stats(obs_stats)
        # A copy: arrays from the Ray object store are read-only views.
        res = ev.evaluate(np.array(params, dtype=np.float64)[None, :], seed=int(seed))
    finally:
        ev.close()
    r = np.asarray(res.returns, dtype=np.float64)[0]
    return {"mean": float(np.mean(r)), "std": float(np.std(r)), "episodes": int(len(r)),
            "min": float(np.min(r)), "max": float(np.max(r)),
            "mean_length": float(np.mean(res.lengths[0])), "seed": int(seed),
            # what the test cost: it runs beside the islands, on their CPUs
            "env_steps": int(res.env_steps), "cpu_s": time.process_time() - cpu0}


def screened_test(spec: EvalSpec, params: np.ndarray, obs_stats: dict[str, Any] | None,
                  seed: int, target: float | None) -> dict[str, Any]:
    """``test_genome`` preceded by a cheap screen when a target is given.

    The screen runs ``max(10, spec.episodes // 5)`` episodes (other seeds); a genome whose
    screen mean is more than two standard errors below ``target`` is rejected without the
    full test (``"screened_out": True`` and the screen's numbers). Otherwise the full test
    runs on its own fresh episodes, so its mean is not biased by the screen. Most candidates
    picked by a lucky training fitness fail the screen, which saves ~80% of the test's env
    steps.
    """
    screen = None
    n = max(10, int(spec.episodes) // 5)
    if target is not None and n < spec.episodes:
        screen = test_genome(spec.replace(episodes=n), params, obs_stats, seed + 1)
        if screen["mean"] + 2 * screen["std"] / np.sqrt(n) < target:
            return {**screen, "screened_out": True}
    full = test_genome(spec, params, obs_stats, seed)
    full["screen"] = screen
    if screen is not None:  # the cost of both
        full["env_steps"] += screen["env_steps"]
        full["cpu_s"] += screen["cpu_s"]
    return full


def solution_eval_spec(sol: dict[str, Any], episodes: int, backend: str | None = None
                       ) -> EvalSpec:
    """The evaluation a saved solution was tested on (``solution.json``'s env and policy)."""
    env, pol = dict(sol["env"]), sol["policy"]
    if backend:
        env["backend"] = backend
    return EvalSpec.from_dict({**env, "policy": pol["kind"], "episodes": int(episodes),
                               "policy_options": dict(pol.get("options") or {}),
                               "obs_norm": bool(env.get("obs_norm")),
                               "env_kwargs": env.get("env_kwargs") or None})


def render_gif(sol: dict[str, Any], path: str, seed: int = TEST_SEED_BASE, fps: int = 30,
               max_frames: int = 1500) -> dict[str, Any]:
    """Run one episode in a Gymnasium env with ``render_mode="rgb_array"``; write a GIF."""
    import gymnasium
    import torch
    from PIL import Image

    import policies
    from envs.spaces import import_env_module

    env_info = sol["env"]
    import_env_module(env_info.get("env_module"))
    env_id = env_info["env_id"]
    kwargs = dict(env_info.get("env_kwargs") or {})
    atari = env_id not in gymnasium.registry and f"ALE/{env_id}" in _ale_ids()
    if atari:  # EnvPool's Atari preprocessing, rebuilt from Gymnasium wrappers
        env = gymnasium.make(f"ALE/{env_id}", render_mode="rgb_array", frameskip=1, **kwargs)
        env = gymnasium.wrappers.AtariPreprocessing(env, frame_skip=4, screen_size=84,
                                                    noop_max=30)
        env = gymnasium.wrappers.FrameStackObservation(env, 4)
    else:
        env = gymnasium.make(env_id, render_mode="rgb_array",
                             max_episode_steps=env_info.get("max_episode_steps"), **kwargs)
    pol = policies.from_spec(sol["policy"])
    params = torch.as_tensor(np.asarray(sol["params"], dtype=np.float32))[None, :]
    mean = std = None
    st = sol.get("obs_stats")
    if st is not None and env_info.get("obs_norm"):
        from policies.obsnorm import RunningMeanStd

        rms = RunningMeanStd.from_state_dict(st)
        mean = torch.as_tensor(rms.mean, dtype=torch.float32)
        std = torch.as_tensor(rms.std, dtype=torch.float32)
    obs, _ = env.reset(seed=int(seed) & 0x7FFFFFFF)
    state = pol.initial_state(1, 1)
    frames, total, steps, done = [], 0.0, 0, False
    with torch.inference_mode():
        while not done:
            if len(frames) < max_frames:
                frames.append(Image.fromarray(env.render()))
            o = torch.as_tensor(np.asarray(obs, dtype=np.float32))[None, None]
            a, state = pol.act(params, o, state, mean, std)
            a = a[0, 0].cpu().numpy()
            obs, r, term, trunc, _ = env.step(int(a) if pol.action.discrete else a)
            total += float(r)
            steps += 1
            done = term or trunc
    env.close()
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=int(1000 / fps),
                   loop=0, optimize=False)
    return {"gif": path, "gif_return": total, "gif_steps": steps, "gif_frames": len(frames)}


def _ale_ids() -> list[str]:
    try:
        import ale_py
        import gymnasium

        gymnasium.register_envs(ale_py)
        return [k for k in gymnasium.registry if k.startswith("ALE/")]
    except ImportError:
        return []


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m islands.evaluate",
        description="Re-evaluate a run's saved best solution; prints one JSON line.")
    p.add_argument("run_dir", metavar="DIR", help="run directory (or its solution.npz)")
    p.add_argument("--episodes", type=int, default=100, help="test episodes (default: 100)")
    p.add_argument("--seed", type=int, default=TEST_SEED_BASE,
                   help="evaluation seed (default: the launcher's first test seed)")
    p.add_argument("--backend", default=None, help="evaluator backend (default: the run's)")
    p.add_argument("--threads", type=int, default=1, help="evaluator threads (default: 1)")
    p.add_argument("--gif", metavar="FILE", default=None,
                   help="also render one episode to this animated GIF")
    args = p.parse_args(argv)
    from .rundir import load_solution

    try:
        if args.episodes < 1:
            raise ValueError(f"--episodes must be positive, got {args.episodes}")
        sol = load_solution(args.run_dir)
    except (OSError, ValueError) as e:
        print(f"islands.evaluate: error: {e}", file=sys.stderr)
        return 2
    import torch

    torch.set_num_threads(max(1, args.threads))  # as many as EnvPool gets: no contention
    spec = solution_eval_spec(sol, args.episodes, args.backend)
    out = test_genome(spec, sol["params"], sol.get("obs_stats"), args.seed, args.threads)
    if args.gif:
        out.update(render_gif(sol, args.gif, seed=args.seed))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
