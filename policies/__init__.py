"""Batched population policies: ``make(kind, obs_shape, action, **options)``.

Kinds: ``mlp`` (fully connected tanh), ``cnn`` (Atari frame stacks), ``neuromod``
(neuromodulated plastic network). Every kind maps ``params (P, D)`` and
``obs (P, B, *obs_shape)`` to actions ``(P, B, ...)`` in one batched call.
"""

from __future__ import annotations

import importlib
import inspect
from typing import TYPE_CHECKING, Any

from .obsnorm import RunningMeanStd
from .registry import LazyRegistry
from .spec import ActionSpec

if TYPE_CHECKING:
    from .base import Policy
    from .cnn import CNNPolicy
    from .mlp import MLPPolicy
    from .neuromod import NeuromodPolicy

# The kinds, imported (with torch) on first lookup: names alone cost nothing.
POLICIES: LazyRegistry = LazyRegistry({
    "mlp": "policies.mlp:MLPPolicy",
    "cnn": "policies.cnn:CNNPolicy",
    "neuromod": "policies.neuromod:NeuromodPolicy",
})

_LAZY = {"Policy": "base", "MLPPolicy": "mlp", "CNNPolicy": "cnn", "NeuromodPolicy": "neuromod"}


def __getattr__(name: str) -> Any:
    """``policies.Policy`` and the kinds' classes, imported on first use (PEP 562)."""
    if name in _LAZY:
        return getattr(importlib.import_module(f"policies.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'policies' has no attribute {name!r}")


def option_names(kind: str) -> tuple[str, ...]:
    """The options policy ``kind`` takes: its constructor's keywords after the shapes."""
    params = inspect.signature(POLICIES[kind].__init__).parameters.values()
    return tuple(p.name for p in params if p.name not in ("self", "obs_shape", "action")
                 and p.kind is p.POSITIONAL_OR_KEYWORD)


def check_options(kind: str, options: dict[str, Any]) -> None:
    """ValueError naming the first unknown key, so a typo (``hiden``) is not silently
    ignored in favour of the default network."""
    if not options:  # nothing to check: the kind's class (and torch) stays unimported
        return
    known = option_names(kind)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} for policy {kind!r} "
                         f"(known: {', '.join(known)})")


def make(kind: str, obs_shape, action: ActionSpec, **options: Any) -> Policy:
    """Build a policy of ``kind`` for ``obs_shape`` and ``action``; unknown kinds and
    unknown options raise ValueError."""
    try:
        cls = POLICIES[kind]
    except KeyError:
        raise ValueError(
            f"unknown policy {kind!r}; choose one of {', '.join(sorted(POLICIES))}"
        ) from None
    check_options(kind, options)
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
    "check_options",
    "from_spec",
    "make",
    "option_names",
]
