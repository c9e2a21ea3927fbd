"""``EvalSpec``: everything that defines an evaluation, in one plain, picklable value.

The launcher resolves one from the config; islands, the tester, ``islands.evaluate`` and a
run's ``solution.json`` all build their evaluators from it, so the keyword arguments of an
evaluator are spelled out in exactly one place. Where an evaluator runs (threads, device)
is not part of the spec: each process decides that for itself in :meth:`EvalSpec.build`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from policies.spec import ActionSpec

from .base import Evaluator
from .factory import make_evaluator
from .objective import Objective


@dataclass(frozen=True)
class EvalSpec:
    """What to evaluate on: env, backend, policy, episodes per evaluation, step limit,
    observation normalization; or a user's ``objective`` (envs/objective.py: then the env
    id only names it and ``episodes`` counts calls of a noisy function). ``build`` adds where
    it runs."""

    env_id: str
    backend: str = "auto"
    policy: str = "mlp"
    policy_options: dict[str, Any] = field(default_factory=dict)
    episodes: int = 1
    max_episode_steps: int | None = None
    obs_norm: bool = False
    env_kwargs: dict[str, Any] | None = None
    env_module: str | None = None
    objective: Objective | None = None

    def replace(self, **changes: Any) -> EvalSpec:
        return dataclasses.replace(self, **changes)

    def build(self, num_threads: int = 1, device: str = "cpu", **backend_kwargs: Any
              ) -> Evaluator:
        """The evaluator for this spec (``envs.make_evaluator``); ``backend_kwargs`` are
        backend-specific extras such as ``max_envs``."""
        if self.objective is not None:
            from .problem import ProblemEvaluator
            from .spaces import import_env_module

            import_env_module(self.env_module)  # an earlier run's packed function is there
            return ProblemEvaluator.from_objective(self.objective, self.episodes)
        kw = self.to_dict()
        kw.pop("objective")
        env_id, backend = kw.pop("env_id"), kw.pop("backend")
        return make_evaluator(env_id, backend=backend, num_threads=num_threads, device=device,
                              **kw, **backend_kwargs)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON-able when ``env_kwargs`` is)."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["policy_options"] = dict(self.policy_options)
        d["env_kwargs"] = None if self.env_kwargs is None else dict(self.env_kwargs)
        d["objective"] = None if self.objective is None else self.objective.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvalSpec:
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        if isinstance(kw.get("objective"), dict):
            kw["objective"] = Objective.from_dict(kw["objective"])
        return cls(**kw)

    def spaces(self) -> tuple[tuple[int, ...], ActionSpec]:
        """``(obs_shape, ActionSpec)`` as the evaluator presents them (envs.spaces), without
        building it."""
        from .spaces import env_spaces, genome_spaces

        if self.objective is not None:
            return genome_spaces(self.objective.dim)
        return env_spaces(self.env_id, self.backend, self.env_kwargs, self.env_module)
