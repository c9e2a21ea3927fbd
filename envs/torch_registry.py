"""The torch-native env registry: which env ids the ``"torch"`` backend simulates.

Kept apart from :mod:`envs.torch_evaluator` so that looking an id up (backend choice,
error suggestions) imports nothing: an env's class (and torch) is imported when an id's
spaces or evaluator are needed (:class:`policies.registry.LazyRegistry`).
"""

from __future__ import annotations

from policies.registry import LazyRegistry

# Gymnasium's MuJoCo v4 locomotion on MuJoCo Warp (the optional extra "warp")
MJWARP_ENVS = {"Hopper-v4": "envs.mjwarp:WarpHopper",
               "HalfCheetah-v4": "envs.mjwarp:WarpHalfCheetah",
               "Walker2d-v4": "envs.mjwarp:WarpWalker2d",
               "Ant-v4": "envs.mjwarp:WarpAnt",
               "Humanoid-v4": "envs.mjwarp:WarpHumanoid"}
TORCH_ENVS: LazyRegistry = LazyRegistry({"CartPole-v1": "envs.torch_cartpole:TorchCartPole",
                                         "Snake-v0": "envs.torch_snake:TorchSnake",
                                         **MJWARP_ENVS})


def mujoco_warp_installed() -> bool:
    """Whether the ``warp`` extra is installed (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("mujoco_warp") is not None


def installed(env_id: str) -> bool:
    """Whether the torch backend can run ``env_id`` here: MuJoCo Warp's envs need the
    ``warp`` extra."""
    return env_id not in MJWARP_ENVS or mujoco_warp_installed()


def register_torch_env(env_id: str, cls: type) -> None:
    """Make ``cls`` available as ``env_id``. The class takes ``(num_envs, device,
    max_episode_steps, **env_kwargs)`` and provides ``obs_shape``, ``action`` (ActionSpec),
    ``max_episode_steps``, ``initial_states(count, seed)``, ``observe(st)`` and
    ``step_state(st, action) -> (st, reward, terminated, truncated)`` on tuples of tensors
    whose first dimension is the batch (see TorchCartPole)."""
    TORCH_ENVS[str(env_id)] = cls


def torch_envs() -> LazyRegistry:
    """Ids the torch-native backend simulates, with their env classes."""
    return TORCH_ENVS
