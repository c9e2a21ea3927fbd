"""What a policy must output (:class:`ActionSpec`): plain data, no torch, so that env
spaces, configs and the coordinator can name actions without loading torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


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
