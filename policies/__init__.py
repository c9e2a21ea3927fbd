"""Batched population policies: ``make(kind, obs_shape, action, **options)``.

Kinds: ``mlp`` (fully connected tanh), ``cnn`` (Atari frame stacks), ``neuromod``
(neuromodulated plastic network). Every kind maps ``params (P, D)`` and
``obs (P, B, *obs_shape)`` to actions ``(P, B, ...)`` in one batched call.
"""

from __future__ import annotations

from typing import Any

from .base import ActionSpec, Policy
from .cnn import CNNPolicy
from .mlp import MLPPolicy
from .neuromod import NeuromodPolicy
from .obsnorm import RunningMeanStd

POLICIES: dict[str, type[Policy]] = {
    "mlp": MLPPolicy,
    "cnn": CNNPolicy,
    "neuromod": NeuromodPolicy,
}


def make(kind: str, obs_shape, action: ActionSpec, **options: Any) -> Policy:
    """Build a policy of ``kind`` for ``obs_shape`` and ``action``."""
    try:
        cls = POLICIES[kind]
    except KeyError:
        raise ValueError(
            f"unknown policy {kind!r}; choose one of {', '.join(sorted(POLICIES))}"
        ) from None
    return cls(tuple(obs_shape), action, **options)


def from_spec(spec: dict[str, Any]) -> Policy:
    """Rebuild a policy from ``Policy.spec()`` (JSON-able; nothing is unpickled)."""
    return make(
        spec["kind"], tuple(spec["obs_shape"]), ActionSpec.from_dict(spec["action"]),
        **spec.get("options", {}),
    )


__all__ = [
    "POLICIES",
    "ActionSpec",
    "CNNPolicy",
    "MLPPolicy",
    "NeuromodPolicy",
    "Policy",
    "RunningMeanStd",
    "from_spec",
    "make",
]
