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

from .base import Evaluator
from .factory import make_evaluator


@dataclass(frozen=True)
class EvalSpec:
    """What to evaluate on: env, backend, policy, episodes per evaluation, step limit,
    observation normalization. ``build`` adds where it runs."""

    env_id: str
    backend: str = "auto"
    policy: str = "mlp"
    policy_options: dict[str, Any] = field(default_factory=dict)
    episodes: int = 1
    max_episode_steps: int | None = None
    obs_norm: bool = False
    env_kwargs: dict[str, Any] | None = None
    env_module: str | None = None

    def replace(self, **changes: Any) -> EvalSpec:
        return dataclasses.replace(self, **changes)

    def build(self, num_threads: int = 1, device: str = "cpu", **backend_kwargs: Any
              ) -> Evaluator:
        """The evaluator for this spec (``envs.make_evaluator``); ``backend_kwargs`` are
        backend-specific extras such as ``max_envs``."""
        kw = self.to_dict()
        env_id, backend = kw.pop("env_id"), kw.pop("backend")
        return make_evaluator(env_id, backend=backend, num_threads=num_threads, device=device,
                              **kw, **backend_kwargs)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON-able when ``env_kwargs`` is)."""
        d = dataclasses.asdict(self)
        d["policy_options"] = dict(self.policy_options)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvalSpec:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})
