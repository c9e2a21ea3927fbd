"""Fully connected tanh network evaluated for a whole population with batched matmuls.

Layout of one parameter vector, layer by layer: weight ``(in, out)`` row-major, then bias
``(out,)``. 8 -> 64 -> 32 -> 4 has 8*64+64 + 64*32+32 + 32*4+4 = 2,788 parameters.

Forward for P individuals x B envs: ``h = tanh(h @ W + b)`` with ``W (P, in, out)`` through
``torch.baddbmm``; the output layer is linear, then argmax (discrete) or
``low + (tanh(y) + 1) / 2 * (high - low)`` (Box).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .base import ActionSpec, Policy, normalize_obs


class MLPPolicy(Policy):
    kind = "mlp"

    def __init__(
        self, obs_shape: tuple[int, ...], action: ActionSpec, hidden=(64, 64), **options: Any
    ) -> None:
        hidden = tuple(int(h) for h in hidden)
        if any(h < 1 for h in hidden):
            raise ValueError(f"hidden sizes must be positive, got {hidden}")
        super().__init__(obs_shape, action, hidden=list(hidden), **options)
        self.in_dim = int(np.prod(self.obs_shape))
        self.sizes = (self.in_dim, *hidden, action.size)
        self._layers: list[tuple[int, int, int, int]] = []  # (w_off, b_off, fan_in, fan_out)
        off = 0
        for fi, fo in zip(self.sizes[:-1], self.sizes[1:], strict=True):
            self._layers.append((off, off + fi * fo, fi, fo))
            off += fi * fo + fo
        self._num_params = off

    @property
    def num_params(self) -> int:
        return self._num_params

    def forward(self, params, obs, state=None, obs_mean=None, obs_std=None):
        P, B = self.check_inputs(params, obs)
        p = params.to(dtype=torch.float32)
        h = obs.reshape(P, B, self.in_dim).to(device=p.device, dtype=torch.float32)
        h = normalize_obs(h, obs_mean, obs_std)
        last = len(self._layers) - 1
        for i, (w_off, b_off, fi, fo) in enumerate(self._layers):
            W = p[:, w_off:b_off].reshape(P, fi, fo)
            b = p[:, b_off : b_off + fo].unsqueeze(1)
            h = torch.baddbmm(b, h, W)
            if i < last:
                h = torch.tanh(h)
        return h, state

    def act(self, params, obs, state=None, obs_mean=None, obs_std=None):
        y, state = self.forward(params, obs, state, obs_mean, obs_std)
        return self.to_action(y), state

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        """Zero center: with tanh and a linear head every action starts equally likely
        (argmax ties break to action 0, and the first ES perturbation breaks them)."""
        return np.zeros(self.num_params)
