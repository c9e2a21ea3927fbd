"""Which backend has an env id, how to build it, and what its spaces are.

Env ids come in three forms:

* a registered id (``"LunarLander-v3"``): EnvPool's registry first, then Gymnasium's;
* ``"package.module:ClassName"``: a user's ``gymnasium.Env`` subclass, built directly with
  ``env_kwargs`` (Gymnasium backend);
* ``"package.module:Some-v0"``: Gymnasium's own convention, the module is imported (it
  registers the id) and the id is made.

``env_module="mypkg.envs"`` names a module to import before anything is looked up, so an id
that module registers resolves in any process that builds the evaluator (Ray workers
included: they build their evaluator from the same arguments).
"""

from __future__ import annotations

import difflib
import importlib
import os
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from policies.spec import ActionSpec

from .byvalue import install as install_by_value
from .byvalue import is_packed
from .objective import PREFIX as PROBLEM_PREFIX  # problem:<name>: a user's objective
from .synthetic import parse_synthetic
from .torch_registry import torch_envs

# "auto" picks EnvPool when it has the id, else Gymnasium, else the torch-native backend;
# synthetic ids (rastrigin:D) have a backend of their own (envs/synthetic.py)
BACKENDS = ("auto", "envpool", "gymnasium", "torch", "synthetic", "problem")


@dataclass(frozen=True)
class EnvTarget:
    """A resolved env id: a registered Gymnasium/EnvPool id or a user class."""

    env_id: str  # as the caller wrote it
    name: str  # registered id to make, or the class name
    cls: type | None = None  # set for "package.module:ClassName"


def import_env_module(env_module: str | None) -> None:
    """Import the module that registers the caller's env ids (no-op for None), or install
    the functions and env classes a run got by value (``byvalue:...``, envs/byvalue.py)."""
    if is_packed(env_module):
        try:
            install_by_value(env_module)
        except ImportError as exc:
            raise ValueError(f"cannot import the env_module of the run's packed functions: "
                             f"{exc}") from exc
    elif env_module:
        try:
            importlib.import_module(env_module)
        except ImportError as exc:
            raise ValueError(f"cannot import env_module {env_module!r}: {exc}") from exc


def import_envpool():
    """``import envpool`` without its side effect on matplotlib: EnvPool 1.2's jumanji
    renderer, imported with it, does ``os.environ.setdefault("MPLBACKEND", "Agg")`` and
    imports pyplot, which left a script's ``plt.show()`` blank (and a kernel started from
    such a process without its inline backend). An empty MPLBACKEND makes that setdefault a
    no-op and matplotlib ignores it (``if os.environ.get('MPLBACKEND')``); it is removed
    again after."""
    unset = "MPLBACKEND" not in os.environ
    if unset:
        os.environ["MPLBACKEND"] = ""
    try:
        import envpool
    finally:
        if unset and os.environ.get("MPLBACKEND") == "":
            del os.environ["MPLBACKEND"]
    return envpool


def envpool_ids() -> list[str]:
    try:
        envpool = import_envpool()
    except ImportError:  # EnvPool is a dependency, but keep Gymnasium-only setups working
        return []
    return list(envpool.list_all_envs())


def has_envpool(env_id: str) -> bool:
    return ":" not in env_id and env_id in set(envpool_ids())


def gymnasium_ids() -> list[str]:
    import gymnasium

    return list(gymnasium.registry.keys())


def _register_ale() -> None:
    # Gymnasium >= 1.0 knows the "ALE/..." ids only after ale_py registers them.
    try:
        import ale_py
        import gymnasium

        gymnasium.register_envs(ale_py)
    except ImportError:
        pass


def resolve_gymnasium(env_id: str) -> EnvTarget:
    """The Gymnasium target for ``env_id``; ValueError with suggestions when unknown."""
    import gymnasium

    if ":" in env_id:
        module_name, name = env_id.split(":", 1)
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ValueError(
                f"env {env_id!r}: cannot import module {module_name!r}: {exc}"
            ) from exc
        obj = getattr(module, name, None)
        if isinstance(obj, type):
            if not issubclass(obj, gymnasium.Env):
                raise ValueError(f"env {env_id!r}: {name} is not a gymnasium.Env subclass")
            return EnvTarget(env_id, name, obj)
        if name in gymnasium.registry:  # the module registered it
            return EnvTarget(env_id, name)
        raise ValueError(
            f"env {env_id!r}: module {module_name!r} has no env class {name!r} and did not "
            f"register an id {name!r}{_suggest(name, dir(module) + gymnasium_ids())}"
        )
    if env_id.startswith("ALE/") and env_id not in gymnasium.registry:
        _register_ale()
    if env_id not in gymnasium.registry:
        raise unknown_env_error(env_id)
    return EnvTarget(env_id, env_id)


def _suggest(env_id: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(env_id, sorted(set(candidates)), n=3, cutoff=0.6)
    return f"; did you mean {', '.join(close)}?" if close else ""


def unknown_env_error(env_id: str) -> ValueError:
    """``ValueError("unknown env id 'X'; did you mean A, B?")`` over all registries."""
    _register_ale()
    return ValueError(
        f"unknown env id {env_id!r} (not in EnvPool, Gymnasium or the torch backend)"
        f"{_suggest(env_id, envpool_ids() + gymnasium_ids() + list(torch_envs()))}"
    )


def pick_backend(env_id: str, backend: str = "auto", env_module: str | None = None) -> str:
    """The backend for ``env_id``: the one asked for, after checking it has the id, or for
    ``"auto"`` EnvPool if it has the id, else Gymnasium, else the torch-native backend."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    import_env_module(env_module)
    if str(env_id).startswith(PROBLEM_PREFIX) or backend == "problem":
        if backend not in ("auto", "problem") or not str(env_id).startswith(PROBLEM_PREFIX):
            raise ValueError(f"{env_id!r} and the {backend} backend do not go together: "
                             "a user's objective (--problem) runs on the problem backend")
        return "problem"
    if parse_synthetic(env_id) is not None or backend == "synthetic":
        if backend not in ("auto", "synthetic") or parse_synthetic(env_id) is None:
            raise ValueError(f"{env_id!r} and the {backend} backend do not go together: "
                             "synthetic ids (rastrigin:D, sphere:D) run on the synthetic "
                             "backend only")
        return "synthetic"
    if backend == "torch":
        if env_id not in torch_envs():
            raise ValueError(
                f"the torch backend has no env {env_id!r}{_suggest(env_id, list(torch_envs()))}"
            )
        return backend
    if backend == "envpool":
        if not has_envpool(env_id):
            raise ValueError(
                f"EnvPool has no env {env_id!r}{_suggest(env_id, envpool_ids())}"
            )
        return backend
    if backend == "auto" and has_envpool(env_id):
        return "envpool"
    if backend == "auto" and ":" not in env_id and env_id in torch_envs():
        try:
            resolve_gymnasium(env_id)
        except ValueError:
            return "torch"  # only the torch backend has it (e.g. Snake-v0)
    resolve_gymnasium(env_id)  # raises with suggestions when unknown
    return "gymnasium"


def make_gymnasium_env(
    target: EnvTarget, max_episode_steps: int | None = None, env_kwargs: dict | None = None
):
    """One Gymnasium env for ``target``, truncated at ``max_episode_steps`` (TimeLimit).

    The passive env checker is off: it only warns, once, and costs a check per step."""
    import gymnasium

    kwargs = dict(env_kwargs or {})
    if target.cls is not None:
        env = target.cls(**kwargs)
        if max_episode_steps is not None:
            env = gymnasium.wrappers.TimeLimit(env, max_episode_steps=int(max_episode_steps))
        return env
    return gymnasium.make(
        target.name, max_episode_steps=max_episode_steps, disable_env_checker=True, **kwargs
    )


def spaces_to_policy_io(
    obs_space, action_space, env_id: str = "env"
) -> tuple[tuple[int, ...], ActionSpec]:
    """``(obs_shape, ActionSpec)`` from Gymnasium spaces; one-line error for others."""
    shape = getattr(obs_space, "shape", None)
    if shape is None or not hasattr(obs_space, "dtype") or obs_space.dtype is None:
        raise ValueError(f"{env_id}: unsupported observation space {obs_space!r}: need a Box")
    try:
        return tuple(int(s) for s in shape), ActionSpec.from_space(action_space)
    except ValueError as exc:
        raise ValueError(f"{env_id}: {exc}") from None


def env_spaces(
    env_id: str,
    backend: str = "auto",
    env_kwargs: dict[str, Any] | None = None,
    env_module: str | None = None,
) -> tuple[tuple[int, ...], ActionSpec]:
    """``(obs_shape, ActionSpec)`` of ``env_id`` as the chosen backend presents it.

    EnvPool ids are read from their spec without building a pool; Gymnasium envs are built
    once and closed."""
    backend = pick_backend(env_id, backend, env_module)
    if backend == "synthetic":  # no observations; the genome is the action
        return genome_spaces(parse_synthetic(env_id)[1])
    if backend == "problem":
        raise ValueError(f"{env_id}: a user's objective has no env; its spaces come from its "
                         "Objective (EvalSpec.spaces)")
    if backend == "torch":  # built as TorchEvaluator builds it
        env = torch_envs()[env_id](num_envs=1, device="cpu", max_episode_steps=None,
                                   **(env_kwargs or {}))
        return tuple(int(s) for s in env.obs_shape), env.action
    if backend == "envpool":
        envpool = import_envpool()
        spec = envpool.make_spec(env_id, **(env_kwargs or {}))
        return spaces_to_policy_io(*envpool_spaces(spec), env_id)
    env = make_gymnasium_env(resolve_gymnasium(env_id), None, env_kwargs)
    try:
        return spaces_to_policy_io(env.observation_space, env.action_space, env_id)
    finally:
        env.close()


def envpool_spaces(spec):
    """Gymnasium ``(observation_space, action_space)`` of an EnvPool spec (or pool). EnvPool
    builds float32 Boxes from float64 bounds, which makes Gymnasium warn each time; muted."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*precision lowered.*")
        if hasattr(spec, "observation_space") and hasattr(spec, "send"):  # a pool
            return spec.observation_space, spec.action_space
        return spec.gymnasium_observation_space, spec.gymnasium_action_space


def is_image(obs_shape: tuple[int, ...]) -> bool:
    """Image-like observations (C, H, W): not normalized with running statistics."""
    return len(obs_shape) >= 3


def float_obs(dtype) -> bool:
    return np.issubdtype(np.dtype(dtype), np.floating)


def genome_spaces(dim: int) -> tuple[tuple[int, ...], ActionSpec]:
    """The spaces of a task whose "policy" is the genome itself: no observations, ``dim``
    unbounded actions."""
    return (0,), ActionSpec.from_space(_box(dim))


def _box(dim: int):
    import gymnasium

    return gymnasium.spaces.Box(-np.inf, np.inf, (dim,), np.float64)
