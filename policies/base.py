"""The policy contract: a population of parameter vectors acting on batched observations.

A policy kind knows its parameter count for given observation/action spaces and maps
``params (P, D)`` and ``obs (P, B, *obs_shape)`` to ``actions (P, B, ...)`` in one batched
call, never a Python loop over individuals. Recurrent / plastic policies carry a ``state``
that the evaluator creates with ``initial_state`` and resets per environment slot with
``reset_state`` when an episode ends.

Kinds implement ``forward`` (raw network outputs: logits for discrete actions, pre-squash
values for Box) and get ``act`` = ``to_action(forward(...))``; tests compare ``forward``
against per-individual reference networks without argmax ties getting in the way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import torch

from .spec import ActionSpec


def dense_layout(sizes, offset: int = 0) -> tuple[list[tuple[int, int, int, int]], int]:
    """Where fully connected layers ``sizes[0] -> sizes[1] -> ...`` sit in a parameter
    vector, from ``offset``: per layer ``(w_off, b_off, fan_in, fan_out)`` (the weights
    ``(fan_in, fan_out)`` row-major, then the biases), and the offset after the last."""
    layers = []
    for fi, fo in zip(sizes[:-1], sizes[1:], strict=True):
        layers.append((offset, offset + fi * fo, fi, fo))
        offset += fi * fo + fo
    return layers, offset


# Normalized observations are clipped to this many standard deviations (Salimans et al. 2017),
# so one outlier observation cannot saturate every tanh unit.
OBS_CLIP = 10.0


def normalize_obs(
    x: torch.Tensor, obs_mean: torch.Tensor | None, obs_std: torch.Tensor | None
) -> torch.Tensor:
    """``clamp((x - mean) / std, -OBS_CLIP, OBS_CLIP)`` over flattened observations
    ``x (..., obs_dim)``; ``x`` unchanged when ``obs_mean`` is None."""
    if obs_mean is None:
        return x
    if obs_std is None:
        raise ValueError("obs_mean given without obs_std")
    x = (x - obs_mean.reshape(-1).to(x)) / obs_std.reshape(-1).to(x)
    return x.clamp(-OBS_CLIP, OBS_CLIP)


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

    def forward(
        self,
        params: torch.Tensor,
        obs: torch.Tensor,
        state: Any = None,
        obs_mean: torch.Tensor | None = None,
        obs_std: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """Raw outputs ``(P, B, action.size)`` float32 (logits / pre-squash) and the new
        state; same arguments as ``act``. Kinds that build on ``to_action`` implement it."""
        raise NotImplementedError(f"policy {self.kind!r} does not expose raw outputs")

    def check_inputs(self, params: torch.Tensor, obs: torch.Tensor) -> tuple[int, int]:
        """``(P, B)`` after checking ``params (P, D)`` and ``obs (P, B, *obs_shape)``; a
        one-line ValueError naming the mismatch otherwise."""
        if params.dim() != 2 or params.shape[1] != self.num_params:
            raise ValueError(
                f"policy {self.kind!r} needs params of shape (P, {self.num_params}), "
                f"got {tuple(params.shape)}"
            )
        if obs.dim() < 2 or tuple(obs.shape[2:]) != self.obs_shape:
            raise ValueError(
                f"policy {self.kind!r} needs obs of shape (P, B, *{self.obs_shape}), "
                f"got {tuple(obs.shape)}"
            )
        if obs.shape[0] != params.shape[0]:
            raise ValueError(
                f"params hold {params.shape[0]} individuals but obs hold {obs.shape[0]}"
            )
        return int(obs.shape[0]), int(obs.shape[1])

    def to_action(self, y: torch.Tensor) -> torch.Tensor:
        """Raw outputs ``y (P, B, action.size)`` -> actions: argmax (int64 ``(P, B)``) for
        discrete; for Box ``low + (tanh(y) + 1) / 2 * (high - low)``, reshaped to
        ``(P, B, *action.shape)``. Dimensions with an infinite bound pass ``y`` through
        unsquashed (squashing into an infinite interval would give NaN)."""
        if self.action.discrete:
            return y.argmax(dim=-1)
        low, high, finite = self._box_bounds(y.device, y.dtype)
        # The clamp keeps float rounding in ``low + (high - low)`` from passing ``high``.
        squashed = (low + (torch.tanh(y) + 1.0) * 0.5 * (high - low)).clamp(low, high)
        a = torch.where(finite, squashed, y)
        return a.reshape(*y.shape[:2], *self.action.shape)

    def _box_bounds(self, device: torch.device, dtype: torch.dtype):
        # Cached per device/dtype: building them every step would be a host->device copy.
        cache = self.__dict__.setdefault("_bounds_cache", {})
        key = (str(device), dtype)
        if key not in cache:
            low = torch.tensor(self.action.low, dtype=torch.float64)
            high = torch.tensor(self.action.high, dtype=torch.float64)
            finite = torch.isfinite(low) & torch.isfinite(high)
            cache[key] = (
                torch.where(finite, low, 0.0).to(device=device, dtype=dtype),
                torch.where(finite, high, 0.0).to(device=device, dtype=dtype),
                finite.to(device=device),
            )
        return cache[key]

    def actor(
        self,
        params: torch.Tensor,
        obs_mean: torch.Tensor | None = None,
        obs_std: torch.Tensor | None = None,
    ) -> Any:
        """Optional fast path for many ``act`` calls with the same ``params (P, D)`` and
        normalization (an evaluation): None where the kind has none (the default, and for
        parameters on a GPU), else an object with

        - ``actor(obs)``: for a NumPy array ``obs (P, B, *obs_shape)``, the actions that
          ``act(params, obs, None, obs_mean, obs_std)`` gives, as a NumPy array in a buffer
          that the next call overwrites (equal up to float rounding: an argmax may differ
          between outputs that are equal to rounding; discrete actions may be int32);
        - ``actor.inputs(B)``: the ``(P, B, *obs_shape)`` array that ``actor()`` (no
          argument) reads, for callers that write observations in place;
        - ``actor.rows(idx)``: an actor for rows ``idx`` (slice or integer array) only.

        Stateless kinds only. Preparing the parameters once per evaluation, not once per
        step, is the point: a small network's step costs mostly per-operation overhead."""
        return None

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
            "options": dict(self.options),
        }
