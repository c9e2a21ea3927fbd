"""The policy contract: a population of parameter vectors acting on batched observations.

A policy kind knows its parameter count for given observation/action spaces and maps
``params (P, D)`` and ``obs (P, B, *obs_shape)`` to ``actions (P, B, ...)`` in one batched
call, never a Python loop over individuals. Recurrent / plastic policies carry a ``state``
that the evaluator creates with ``initial_state`` and resets per environment slot with
``reset_state`` when an episode ends.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch


@dataclass(frozen=True)
class ActionSpec:
    """What the policy must output: ``n`` discrete actions, or a Box with ``low``/``high``."""

    discrete: bool
    n: int = 0  # number of discrete actions
    shape: tuple[int, ...] = ()  # Box shape
    low: tuple[float, ...] = ()  # Box bounds, flattened
    high: tuple[float, ...] = ()

    @property
    def size(self) -> int:
        """Width of the network's output layer."""
        return self.n if self.discrete else int(np.prod(self.shape))

    @staticmethod
    def from_space(space) -> ActionSpec:
        """From a Gymnasium (or gym-compatible) ``Discrete`` or ``Box`` space."""
        if hasattr(space, "n") and not hasattr(space, "low"):
            return ActionSpec(discrete=True, n=int(space.n))
        if hasattr(space, "low"):
            low = np.asarray(space.low, dtype=np.float64).reshape(-1)
            high = np.asarray(space.high, dtype=np.float64).reshape(-1)
            return ActionSpec(
                discrete=False,
                shape=tuple(int(s) for s in space.shape),
                low=tuple(float(x) for x in low),
                high=tuple(float(x) for x in high),
            )
        raise ValueError(f"unsupported action space {space!r}: need Discrete or Box")

    def to_dict(self) -> dict[str, Any]:
        return {
            "discrete": self.discrete,
            "n": self.n,
            "shape": list(self.shape),
            "low": list(self.low),
            "high": list(self.high),
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> ActionSpec:
        return ActionSpec(
            discrete=bool(d["discrete"]),
            n=int(d["n"]),
            shape=tuple(d["shape"]),
            low=tuple(d["low"]),
            high=tuple(d["high"]),
        )


class Policy(ABC):
    """A policy kind bound to an observation shape and an action spec."""

    kind: str = "base"

    def __init__(self, obs_shape: tuple[int, ...], action: ActionSpec, **options: Any) -> None:
        self.obs_shape = tuple(int(s) for s in obs_shape)
        self.action = action
        self.options = dict(options)

    @property
    @abstractmethod
    def num_params(self) -> int:
        """Length D of one individual's parameter vector."""

    @abstractmethod
    def act(
        self,
        params: torch.Tensor,
        obs: torch.Tensor,
        state: Any = None,
        obs_mean: torch.Tensor | None = None,
        obs_std: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """Actions for ``obs (P, B, *obs_shape)`` under ``params (P, D)``.

        Returns ``(actions, new_state)``: discrete actions are int64 ``(P, B)``; Box actions
        float32 ``(P, B, *action.shape)`` inside the bounds. ``obs_mean``/``obs_std`` (shape
        ``obs_shape``), when given, normalize observations inside the forward pass.
        """

    def initial_state(self, P: int, B: int, device: torch.device | str = "cpu") -> Any:
        """Per-slot recurrent state for P individuals x B envs (None for stateless kinds)."""
        return None

    def reset_state(self, state: Any, done: torch.Tensor) -> Any:
        """Reset the state of slots where ``done (P, B)`` is True (episode starts)."""
        return state

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        """A sensible initial search center, shape ``(num_params,)``, float64."""
        return np.zeros(self.num_params)

    def spec(self) -> dict[str, Any]:
        """JSON-able description that ``policies.from_spec`` turns back into this policy."""
        return {
            "kind": self.kind,
            "obs_shape": list(self.obs_shape),
            "action": self.action.to_dict(),
            "options": self.options,
        }
