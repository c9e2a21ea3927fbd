"""Fully connected tanh network evaluated for a whole population with batched matmuls.

Layout of one parameter vector, layer by layer: weight ``(in, out)`` row-major, then bias
``(out,)``. 8 -> 64 -> 32 -> 4 has 8*64+64 + 64*32+32 + 32*4+4 = 2,788 parameters.

Forward for P individuals x B envs: ``h = tanh(h @ W + b)`` with ``W (P, in, out)`` through
``torch.baddbmm``; the output layer is linear, then argmax (discrete) or
``low + (tanh(y) + 1) / 2 * (high - low)`` (Box).

``actor`` is the same computation for an evaluation's fixed parameters on the CPU, in NumPy:
each layer's weights and bias are copied once into one contiguous ``(P, in + 1, out)`` array,
and a step is one matmul per layer, one tanh per hidden layer and an argmax, into buffers
kept between steps. Per-call overhead, not arithmetic, is most of what a small network's
step costs, and a NumPy call's is lower than a torch operator's
(docs/results/eval-throughput.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .base import OBS_CLIP, ActionSpec, Policy, dense_layout, normalize_obs


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
        # (w_off, b_off, fan_in, fan_out) per layer
        self._layers, self._num_params = dense_layout(self.sizes)

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

    def actor(self, params, obs_mean=None, obs_std=None) -> _MLPActor | None:
        if params.dim() != 2 or params.shape[1] != self.num_params:
            raise ValueError(
                f"policy {self.kind!r} needs params of shape (P, {self.num_params}), "
                f"got {tuple(params.shape)}"
            )
        if (obs_mean is None) != (obs_std is None):
            raise ValueError("obs_mean and obs_std must be given together")
        if params.device.type != "cpu":
            return None  # GPU inference goes through act (one host<->device copy per step)
        p = params.detach().to(dtype=torch.float32).numpy()
        P = p.shape[0]
        # Each layer's bias as one more input row: x @ W + b == [x, 1] @ [[W], [b]].
        layers = [
            np.concatenate([p[:, w_off:b_off].reshape(P, fi, fo),
                            p[:, b_off : b_off + fo].reshape(P, 1, fo)], axis=1)
            for w_off, b_off, fi, fo in self._layers
        ]
        norm = None
        if obs_mean is not None:
            norm = tuple(np.asarray(t.detach().cpu(), dtype=np.float32).reshape(-1)
                         for t in (obs_mean, obs_std))
        return _MLPActor(self, layers, norm)

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        """Zero center: with tanh and a linear head every action starts equally likely
        (argmax ties break to action 0, and the first ES perturbation breaks them)."""
        return np.zeros(self.num_params)


class _MLPActor:
    """``MLPPolicy.act`` for fixed parameters on the CPU (see ``Policy.actor``), in NumPy:
    a NumPy call costs about a microsecond against a few for a torch operator, and this
    network is small enough for that to dominate. Same operations as ``forward`` +
    ``to_action`` -- ``clip((x - mean) / std)``, ``tanh(x @ W + b)`` per hidden layer, a
    linear output layer, argmax -- in float32; the bias rides along in the product as one
    more input row and another BLAS sums the products, so outputs agree with ``act`` to
    float rounding: an argmax can differ only between near-equal outputs, a Box action by
    ~1e-6 (which chaotic dynamics can amplify over an episode; ``EnvPoolEvaluator(...,
    fast_actor=False)`` keeps torch's results bit for bit).

    Buffers: layer ``i`` reads ``(P, B, fan_in + 1)`` activations whose last column is 1, so
    a step is one matmul per layer, one tanh per hidden layer and an argmax."""

    def __init__(self, policy: MLPPolicy, layers, norm) -> None:
        self.policy = policy
        self.layers = layers  # [(P, in + 1, out)] float32, bias last
        self.norm = norm  # (mean, std) flattened float32, or None
        self.P = int(layers[0].shape[0])
        self._B: int | None = None

    def rows(self, idx) -> _MLPActor:
        """Rows ``idx`` (a slice: views; integer indices: copies) of the population."""
        if isinstance(idx, torch.Tensor):
            idx = idx.cpu().numpy()
        return _MLPActor(self.policy, [W[idx] for W in self.layers], self.norm)

    def inputs(self, B: int) -> np.ndarray:
        """The ``(P, B, *obs_shape)`` float32 array that ``actor()`` reads, kept between
        calls (without normalization, a view into the first layer's input)."""
        if B != self._B:
            pol, P = self.policy, self.P
            self._ins = [np.ones((P, B, W.shape[1]), dtype=np.float32) for W in self.layers]
            self._outs = [np.empty((P, B, W.shape[2]), dtype=np.float32) for W in self.layers]
            self._act = np.empty((P, B), dtype=np.int32) if pol.action.discrete else None
            first = self._ins[0][..., :-1]
            if self.norm is not None:
                first = np.empty((P, B, pol.in_dim), dtype=np.float32)
            self._raw = first  # what normalization reads
            self._obs = first.reshape(P, B, *pol.obs_shape)
            self._B = B
        return self._obs

    def __call__(self, obs=None) -> np.ndarray:
        """Actions for ``obs (P, B, *obs_shape)`` (array or CPU tensor; None: what is in
        ``inputs(B)``): int32 ``(P, B)`` (the action indices, in EnvPool's dtype) or float32
        ``(P, B, *action.shape)``, in a buffer that the next call overwrites."""
        if obs is None and self._B is None:
            raise ValueError("actor() without obs reads inputs(B): call inputs(B) first")
        if obs is not None:
            if isinstance(obs, torch.Tensor):
                obs = obs.numpy()
            pol = self.policy
            if obs.ndim < 2 or obs.shape[0] != self.P or tuple(obs.shape[2:]) != pol.obs_shape:
                raise ValueError(
                    f"policy {pol.kind!r} actor for {self.P} individuals needs obs of shape "
                    f"({self.P}, B, *{pol.obs_shape}), got {tuple(obs.shape)}")
            np.copyto(self.inputs(obs.shape[1]), obs, casting="unsafe")
        if self.norm is not None:  # as normalize_obs: (x - mean) / std, clamped
            x = self._ins[0][..., :-1]
            np.subtract(self._raw, self.norm[0], out=x)
            np.divide(x, self.norm[1], out=x)
            np.clip(x, -OBS_CLIP, OBS_CLIP, out=x)
        last = len(self.layers) - 1
        for i, (W, x, y) in enumerate(zip(self.layers, self._ins, self._outs, strict=True)):
            np.matmul(x, W, out=y)
            if i < last:
                np.tanh(y, out=self._ins[i + 1][..., :-1])
        if self._act is None:
            return self.policy.to_action(torch.from_numpy(y)).numpy()
        return np.argmax(y, axis=-1, out=self._act)
