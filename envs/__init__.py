"""Evaluators: a population of parameter vectors in, fitness out (no Ray needed).

    from envs import make_evaluator
    ev = make_evaluator("LunarLander-v3", policy="mlp", policy_options={"hidden": (16,)},
                        episodes=4, num_threads=2)
    res = ev.evaluate(params, seed=generation)  # params (P, ev.num_params)
    res.fitness, res.lengths, res.env_steps, res.live_fraction

Backends: ``"envpool"`` (default for every id EnvPool has), ``"gymnasium"`` (any other
Gymnasium id, ``"package.module:ClassName"``, or an id registered by ``env_module``) and
``"torch"`` (torch-native CartPole on CPU or CUDA).
"""

from __future__ import annotations

from typing import Any

from .base import EvalResult, Evaluator
from .spaces import env_spaces, pick_backend


def make_evaluator(env_id: str, backend: str = "auto", **kwargs: Any) -> Evaluator:
    """Build the evaluator for ``env_id``.

    ``backend="auto"`` picks EnvPool when it has the id, else Gymnasium. ``kwargs`` are the
    evaluator arguments (``policy, policy_options, episodes, max_episode_steps,
    num_threads, device, obs_norm, env_kwargs, env_module`` and backend-specific ones such
    as ``num_envs`` / ``max_envs``). An unknown id raises ValueError naming close matches.
    """
    backend = pick_backend(env_id, backend, kwargs.get("env_module"))
    if backend == "envpool":
        from .envpool_evaluator import EnvPoolEvaluator

        return EnvPoolEvaluator(env_id, **kwargs)
    if backend == "gymnasium":
        from .gym_evaluator import GymnasiumEvaluator

        return GymnasiumEvaluator(env_id, **kwargs)
    from .torch_evaluator import TorchEvaluator  # imported only when asked for

    return TorchEvaluator(env_id, **kwargs)


__all__ = ["EvalResult", "Evaluator", "env_spaces", "make_evaluator"]
