"""Small conv net for Atari frame stacks, evaluated for a whole population at once.

Input: EnvPool's ``(4, 84, 84)`` uint8 frame stacks (any ``(C, H, W)`` image works), scaled
to [0, 1] by /255 inside the forward pass. Default network (Nature-DQN shape, slimmed to
land near 100K parameters)::

    conv 8x8 stride 4, 16 ch -> ReLU -> conv 4x4 stride 2, 32 ch -> ReLU   (4x84x84 -> 32x9x9)
    flatten (2,592) -> fc 32 -> ReLU -> fc n_actions

Parameters for ``(4, 84, 84)`` and A actions: conv1 16*4*8*8+16 = 4,112; conv2
32*16*4*4+32 = 8,224; fc 2,592*32+32 = 82,976; head 32*A+A; total 95,312 + 33*A
(95,510 for A = 6, 95,906 for A = 18).

Layout of one parameter vector, layer by layer: conv weight ``(out, in, k, k)`` (PyTorch's
order) then bias ``(out,)``; fc weight ``(in, out)`` row-major (as in ``mlp``) then bias.
The flatten between conv and fc is PyTorch's ``(C, H, W)`` order.

Batching: one grouped convolution per layer. Observations ``(P, B, C, H, W)`` become
``(B, P*C, H, W)`` and the P weight sets ``(P*out, in, k, k)`` with ``groups=P``, so group
p sees only individual p's channels and weights; fc layers use ``torch.baddbmm``. It was
faster than vmap over ``functional_call`` and than a loop over individuals
(docs/results/cnn-batching.md): vmap's conv batching rule lowers to the same grouped conv,
so it can only add functorch dispatch and unpacking overhead. Two details matter for speed:
the uint8 frames are permuted before the float conversion (moving 1-byte rather than 4-byte
elements), and the /255 is folded into the first layer's weights instead of being a pass
over the largest tensor.

Observation normalization (``obs_mean``/``obs_std``) is ignored: pixels already have a
fixed range and the /255 scaling plays that role; running pixel statistics would only add
noise and cost.

``dtype`` option (``"float32"`` default, ``"bfloat16"``, ``"float16"``): compute dtype of
the convs and matmuls, for reduced-precision inference on CUDA; outputs are returned as
float32. (float16 convs may be unsupported on CPU; bfloat16 works there but is not faster.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from .base import ActionSpec, Policy, dense_layout

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class CNNPolicy(Policy):
    kind = "cnn"

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        action: ActionSpec,
        convs=((16, 8, 4), (32, 4, 2)),
        hidden=(32,),
        dtype: str = "float32",
        **options: Any,
    ) -> None:
        obs_shape = tuple(int(s) for s in obs_shape)
        if len(obs_shape) != 3:
            raise ValueError(
                f"policy 'cnn' needs image observations (C, H, W); env gives shape {obs_shape}"
            )
        convs = [[int(v) for v in c] for c in convs]
        if any(len(c) != 3 or min(c) < 1 for c in convs):
            raise ValueError(
                f"cnn convs must be [out_channels, kernel, stride] triples >= 1, got {convs}"
            )
        hidden = [int(h) for h in hidden]
        if any(h < 1 for h in hidden):
            raise ValueError(f"hidden sizes must be positive, got {hidden}")
        if dtype not in DTYPES:
            raise ValueError(f"cnn dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        super().__init__(obs_shape, action, convs=convs, hidden=hidden, dtype=dtype, **options)
        self.dtype = DTYPES[dtype]

        c, h, w = obs_shape
        # (w_off, b_off, in_ch, out_ch, kernel, stride)
        self._convs: list[tuple[int, int, int, int, int, int]] = []
        off = 0
        for out_ch, k, s in convs:
            h, w = (h - k) // s + 1, (w - k) // s + 1
            if h < 1 or w < 1:
                raise ValueError(
                    f"policy 'cnn': image {obs_shape} too small for conv layers {convs} "
                    "(expects channels first, e.g. EnvPool's (4, 84, 84))"
                )
            self._convs.append((off, off + out_ch * c * k * k, c, out_ch, k, s))
            off += out_ch * c * k * k + out_ch
            c = out_ch
        self.feature_shape = (c, h, w)
        # (w_off, b_off, fan_in, fan_out) per fully connected layer, after the convs
        self._fcs, self._num_params = dense_layout((c * h * w, *hidden, action.size), off)

    @property
    def num_params(self) -> int:
        return self._num_params

    def forward(self, params, obs, state=None, obs_mean=None, obs_std=None):
        P, B = self.check_inputs(params, obs)
        dt = self.dtype
        p = params.to(dtype=dt)
        C, H, W = self.obs_shape
        # Permute while still uint8 (4x less memory traffic than permuting floats); the
        # float conversion then writes the contiguous (B, P*C, H, W) grouped-conv input.
        x = obs.to(device=p.device).permute(1, 0, 2, 3, 4).reshape(B, P * C, H, W).to(dt)
        for i, (w_off, b_off, cin, cout, k, s) in enumerate(self._convs):
            wt = p[:, w_off:b_off].reshape(P * cout, cin, k, k)
            if i == 0:
                wt = wt * (1.0 / 255.0)  # pixel scaling folded into the (small) weights
            bias = p[:, b_off : b_off + cout].reshape(P * cout)
            x = F.relu(F.conv2d(x, wt, bias, stride=s, groups=P))
        x = x.reshape(B, P, -1).transpose(0, 1)  # (P, B, C*H*W), per-individual channels
        last = len(self._fcs) - 1
        for i, (w_off, b_off, fi, fo) in enumerate(self._fcs):
            wt = p[:, w_off:b_off].reshape(P, fi, fo)
            bias = p[:, b_off : b_off + fo].unsqueeze(1)
            x = torch.baddbmm(bias, x, wt)
            if i < last:
                x = F.relu(x)
        return x.float(), state

    def act(self, params, obs, state=None, obs_mean=None, obs_std=None):
        y, state = self.forward(params, obs, state)  # obs_mean/obs_std: see module docstring
        return self.to_action(y), state

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        """Random per-layer init (a zero CNN gives the same output for every frame).

        ReLU layers: He/Kaiming uniform, ``U(-b, b)`` with ``b = sqrt(6 / fan_in)`` (keeps
        activation scale through depth); output layer: PyTorch's default ``b = 1/sqrt(fan_in)``;
        biases zero. fan_in counts ``in * k * k`` for convs, on the [0, 1]-scaled pixels."""
        out = np.zeros(self.num_params)
        layers = [(w, b, cin * k * k) for w, b, cin, _, k, _ in self._convs]
        layers += [(w, b, fi) for w, b, fi, _ in self._fcs]
        for i, (w_off, b_off, fan_in) in enumerate(layers):
            bound = np.sqrt(6.0 / fan_in) if i < len(layers) - 1 else 1.0 / np.sqrt(fan_in)
            out[w_off:b_off] = rng.uniform(-bound, bound, size=b_off - w_off)
        return out
