"""``make_evaluator``: the evaluator class of the backend that has an env id, built."""

from __future__ import annotations

from typing import Any

from .base import Evaluator
from .spaces import pick_backend


def make_evaluator(env_id: str, backend: str = "auto", **kwargs: Any) -> Evaluator:
    """Build the evaluator for ``env_id``.

    ``backend="auto"`` picks EnvPool when it has the id, else Gymnasium. ``kwargs`` are the
    evaluator arguments (``policy, policy_options, episodes, max_episode_steps,
    num_threads, device, obs_norm, env_kwargs, env_module`` and backend-specific ones such
    as ``num_envs`` / ``max_envs``). An unknown id raises ValueError naming close matches.
    """
    backend = pick_backend(env_id, backend, kwargs.get("env_module"))
    # Each backend is imported only when asked for: EnvPool and torch.compile are heavy.
    if backend == "envpool":
        from .envpool_evaluator import EnvPoolEvaluator

        return EnvPoolEvaluator(env_id, **kwargs)
    if backend == "synthetic":
        from .synthetic import SyntheticEvaluator

        return SyntheticEvaluator(env_id, **kwargs)
    if backend == "problem":  # a user's function: EvalSpec(objective=...).build()
        raise ValueError(f"{env_id}: a user's objective is built from its Objective "
                         "(envs/objective.py), not from an env id")
    if backend == "gymnasium":
        from .gym_evaluator import GymnasiumEvaluator

        return GymnasiumEvaluator(env_id, **kwargs)
    from .torch_evaluator import TorchEvaluator

    return TorchEvaluator(env_id, **kwargs)
