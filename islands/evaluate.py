"""Test a genome on fresh episodes; re-evaluate a run's saved solution; render it as a GIF.

``python -m islands.evaluate DIR [--episodes N] [--seed S] [--gif FILE]`` loads
``DIR/solution.npz`` (no unpickling), runs it for N episodes and prints one JSON line
``{"mean", "std", "episodes", ...}``; ``--gif`` also renders one episode with Gymnasium's
``render_mode="rgb_array"`` into an animated GIF (Pillow).

Seeds: a run trains below 2**30 and tests in ranges drawn from its own seed
(:mod:`islands.seeds`); ``--seed`` defaults to ``AUDIT_SEED``, above all of them, so a re-test
meets none of the run's episodes. Each seed expands into independent 31-bit episode seeds
(``envs.common.episode_seeds``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from typing import Any

import numpy as np

from envs.spec import EvalSpec

from .envdefaults import mujoco_task
from .seeds import AUDIT_SEED


def test_genome(spec: EvalSpec, params: np.ndarray, obs_stats: dict[str, Any] | None,
                seed: int, num_threads: int = 1) -> dict[str, Any]:
    """Mean/std of the return of ``params`` over ``spec.episodes`` episodes (frozen obs
    stats)."""
    cpu0 = time.process_time()
    r, lengths, steps, rounds = _episodes(spec, params, obs_stats, [int(seed)], num_threads)
    return _summary(r, lengths, seed, steps, time.process_time() - cpu0, rounds)


def _episodes(spec: EvalSpec, params, obs_stats, seeds: list[int], num_threads: int = 1,
              chunk: int | None = None, target: float | None = None):
    """Returns and lengths of ``params`` over ``spec.episodes`` episodes: evaluation seed
    ``seeds[k]`` for the k-th chunk of ``chunk`` episodes (one chunk when None), and the env
    steps and the evaluator's rounds (batched steps, EnvPool's; 0 elsewhere) they took.
    With ``target``, stops after a chunk (not the last) once the mean so far is more than
    two standard errors below it (:func:`sequential_test`). Each chunk gets an evaluator of
    its own: a reused one would continue its pool's episode streams instead of starting the
    chunk's seed."""
    total = int(spec.episodes)
    chunk = total if chunk is None else int(chunk)
    x = np.array(params, dtype=np.float64)[None, :]  # a copy: store arrays are read-only
    returns, lengths, steps, rounds = [], [], 0, 0
    with _torch_threads(spec, num_threads):
        for seed in seeds:
            r, ln, st, rd = _chunk(spec.replace(episodes=min(chunk, total - len(returns))), x,
                                   obs_stats, int(seed), num_threads)
            returns, lengths, steps, rounds = returns + r, lengths + ln, steps + st, rounds + rd
            if len(returns) >= total or (target is not None
                                         and _clearly_below(returns, target)):
                break
    return np.array(returns), np.array(lengths), steps, rounds


def _chunk(spec: EvalSpec, x: np.ndarray, obs_stats, seed: int, num_threads: int
           ) -> tuple[list[float], list[float], int, int]:
    """One evaluator's episodes of genome ``x`` from evaluation seed ``seed``."""
    ev = spec.build(num_threads=num_threads, device="cpu")
    try:
        if obs_stats is not None and ev.obs_stats is not None:
            ev.set_obs_stats(obs_stats)
        res = ev.evaluate(x, seed=seed)
    finally:
        ev.close()
    return ([float(v) for v in np.asarray(res.returns)[0]],
            [float(v) for v in np.asarray(res.lengths)[0]], int(res.env_steps),
            int(res.extra.get("rounds", 0)))


@contextlib.contextmanager
def _torch_threads(spec: EvalSpec, n: int):
    """Torch's intra-op threads at ``n`` (as many as the env's) while a test runs, and the
    caller's own setting back after: torch's default threads beside EnvPool's contend for
    the same cores (docs/results/eval-throughput.md), and a notebook's torch keeps its
    setting. A genome's backend (a function, a synthetic id) has no policy: torch is left
    alone, not even imported."""
    from envs.synthetic import parse_synthetic

    if spec.objective is not None or parse_synthetic(spec.env_id) is not None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(max(1, int(n)))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def with_value(spec: EvalSpec, out: dict[str, Any]) -> dict[str, Any]:
    """A test of a user's function with its mean in the function's own scale too
    (``value``: the cost for a minimized one); an env's test as it is."""
    if spec.objective is not None:
        out["value"] = spec.objective.scale.user(out["mean"])
    return out


def _clearly_below(returns: list[float], target: float) -> bool:
    """The mean so far plus two standard errors is below ``target``."""
    r = np.asarray(returns)
    return bool(r.mean() + 2 * r.std() / np.sqrt(len(r)) < target)


def _summary(r: np.ndarray, lengths: np.ndarray, seed: int, steps: int, cpu_s: float,
             rounds: int = 0) -> dict[str, Any]:
    return {"mean": float(np.mean(r)), "std": float(np.std(r)), "episodes": int(len(r)),
            "ci95": mean_interval(r),
            "min": float(np.min(r)), "max": float(np.max(r)),
            "mean_length": float(np.mean(lengths)), "seed": int(seed),
            # what the test cost: it runs beside the islands, on their CPUs
            "env_steps": int(steps), "rounds": int(rounds), "cpu_s": cpu_s}


def mean_interval(r: np.ndarray) -> list[float]:
    """95% t-interval of the mean return (Student's t on ``len(r) - 1`` degrees of freedom;
    the mean itself, twice, for a single episode)."""
    from scipy import stats

    m = float(np.mean(r))
    if len(r) < 2:
        return [m, m]
    half = float(stats.t.ppf(0.975, len(r) - 1) * np.std(r, ddof=1) / np.sqrt(len(r)))
    return [m - half, m + half]


def sequential_test(spec: EvalSpec, params: np.ndarray, obs_stats: dict[str, Any] | None,
                  seed: int, target: float | None) -> dict[str, Any]:
    """A candidate's test on ``spec.episodes`` fresh episodes, stopped early once the genome
    is clearly below ``target`` (a sequential test).

    With a target, the episodes run in chunks of ``max(10, spec.episodes // 5)``, chunk k on
    evaluation seed ``seed + k`` (candidates' seeds are 7,919 apart,
    ``seeds.candidate_test_seed``, so no two chunks of a run share one). After every chunk
    but the last, a genome whose mean so far is more than two standard errors below the
    target is rejected (``"stopped_early": True``, with the numbers so far). A genome never
    rejected has run all ``spec.episodes`` episodes and passes when their mean reaches the
    target: the full test's criterion (the early stops only ever reject). Before, a
    20-episode screen preceded a separate 100-episode test, so a near miss cost 120 episodes:
    on BipedalWalker, with the population at 280-298, one candidate after another passed
    the screen and failed the test at 283-299.6, back to back on the islands' CPUs; such a
    genome (mean 290, std 30) now stops after 20-60 episodes.
    """
    n = max(10, int(spec.episodes) // 5)
    if target is None or n >= spec.episodes:
        return test_genome(spec, params, obs_stats, seed)
    cpu0 = time.process_time()
    chunks = -(-int(spec.episodes) // n)
    r, lengths, steps, rounds = _episodes(spec, params, obs_stats,
                                          [int(seed) + k for k in range(chunks)], chunk=n,
                                          target=float(target))
    out = _summary(r, lengths, seed, steps, time.process_time() - cpu0, rounds)
    if len(r) < spec.episodes:
        out["stopped_early"] = True
    return out


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


class Controller:
    """A saved solution driving one Gymnasium env step by step, as the test evaluates it: its
    policy, its parameters and, where it was trained with ``obs_norm``, its frozen observation
    statistics. ``ctrl(obs)`` returns the env's action; ``reset()`` before each episode
    clears a recurrent policy's state."""

    def __init__(self, sol: dict[str, Any]):
        import torch

        import policies

        self.policy = policies.from_spec(sol["policy"])
        self.params = torch.as_tensor(np.asarray(sol["params"], dtype=np.float32))[None, :]
        self._mean = self._std = None
        if sol.get("obs_stats") is not None and sol["env"].get("obs_norm"):
            from policies.obsnorm import RunningMeanStd

            rms = RunningMeanStd.from_state_dict(sol["obs_stats"])
            self._mean = torch.as_tensor(rms.mean, dtype=torch.float32)
            self._std = torch.as_tensor(rms.std, dtype=torch.float32)
        self.reset()

    def reset(self) -> None:
        self.state = self.policy.initial_state(1, 1)

    def __call__(self, obs) -> Any:
        import torch

        o = torch.as_tensor(np.asarray(obs, dtype=np.float32))[None, None]
        with torch.inference_mode():
            a, self.state = self.policy.act(self.params, o, self.state, self._mean, self._std)
        a = a[0, 0].cpu().numpy()
        return int(a) if self.policy.action.discrete else a

    def normalized(self, obs) -> np.ndarray:
        """``obs`` as the policy sees it: clipped z-scores, or unchanged without obs_norm."""
        import torch

        from policies.base import normalize_obs

        x = torch.as_tensor(np.asarray(obs, dtype=np.float32))
        return normalize_obs(x, self._mean, self._std).numpy()


def render_gif(sol: dict[str, Any], path: str, seed: int = AUDIT_SEED, fps: int = 30,
               max_frames: int = 1500) -> dict[str, Any]:
    """Run one episode in a Gymnasium env with ``render_mode="rgb_array"``; write a GIF."""
    import gymnasium
    from PIL import Image

    from envs.spaces import import_env_module

    if not os.environ.get("DISPLAY"):  # MuJoCo's default (GLFW) needs one; EGL does not
        os.environ.setdefault("MUJOCO_GL", "egl")
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
        if mujoco_task(env_id) and not {"camera_id", "camera_name"} & set(kwargs):
            kwargs["camera_name"] = "track"  # the model's camera that follows the body
        env = gymnasium.make(env_id, render_mode="rgb_array",
                             max_episode_steps=env_info.get("max_episode_steps"), **kwargs)
    ctrl = Controller(sol)
    obs, _ = env.reset(seed=int(seed) & 0x7FFFFFFF)
    frames, total, steps, done = [], 0.0, 0, False
    while not done:
        if len(frames) < max_frames:
            frames.append(Image.fromarray(env.render()))
        obs, r, term, trunc, _ = env.step(ctrl(obs))
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
    p.add_argument("--seed", type=int, default=AUDIT_SEED,
                   help="evaluation seed (default: %(default)s, a range no run trains or tests on)")
    p.add_argument("--backend", default=None, help="evaluator backend (default: the run's)")
    p.add_argument("--threads", type=int, default=1, help="evaluator threads (default: 1)")
    p.add_argument("--gif", metavar="FILE", default=None,
                   help="also render one episode to this animated GIF")
    args = p.parse_args(argv)
    from .persistence.solution import load_solution

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
    out = with_value(spec, test_genome(spec, sol["params"], sol.get("obs_stats"), args.seed,
                                       args.threads))
    if args.gif:
        out.update(render_gif(sol, args.gif, seed=args.seed))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
