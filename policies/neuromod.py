"""Neuromodulated plastic recurrent network (Miconi et al. 2020, "Backpropamine"), batched.

One recurrent tanh layer of H units whose recurrent weights are the sum of a fixed part W
and a plastic part ``alpha * Hebb``; the Hebbian trace is updated every step, gated by a
modulatory signal M the network computes itself ("simple neuromodulation" in the paper).
With row-vector convention (``x W`` maps ``x`` through ``W (in, out)``), for input x_t::

    h_t      = tanh(x_t W_in + h_{t-1} (W + alpha ⊙ Hebb_t) + b)
    M_t      = tanh(h_t · w_m + b_m)                               (scalar per slot)
    Hebb_t+1 = clip(Hebb_t + M_t * outer(h_{t-1}, h_t), -1, 1)
    y_t      = h_t W_out + b_out       -> argmax (discrete) / tanh scaled to bounds (Box)

``Hebb[i, j]`` belongs to the connection from unit i (at t-1) to unit j (at t), like
``W[i, j]`` and ``alpha[i, j]``. Evolved (in the parameter vector): W_in, b, W, alpha (one
plasticity coefficient per connection), the modulator weights w_m and b_m (M plays the role
of the trace learning rate eta, now signed and input-dependent), W_out, b_out. Not evolved:
h and Hebb, which are per-episode state.

Layout of one parameter vector: W_in ``(in, H)``, b ``(H,)``, W ``(H, H)``, alpha ``(H, H)``,
w_m ``(H,)``, b_m ``(1,)``, W_out ``(H, out)``, b_out ``(out,)``, each row-major. Count:
``in*H + H + 2*H*H + H + 1 + H*out + out``; 8 inputs, H = 32, 4 outputs: 2,501.

State: ``{"h": (P, B, H), "hebb": (P, B, H, H)}`` per (individual, env) slot, zero at the
start of an episode (``initial_state``; ``reset_state(state, done)`` zeroes the slots where
``done``; ``state=None`` means a fresh episode in every slot). The traces take 4*P*B*H*H
bytes, hence the small default H = 32 (P=256, B=8: 8 MiB). Observations are flattened and
normalized with ``obs_mean``/``obs_std`` exactly like ``mlp`` (clipped to +-10 std).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .base import ActionSpec, Policy, normalize_obs


class NeuromodPolicy(Policy):
    kind = "neuromod"

    def __init__(
        self, obs_shape: tuple[int, ...], action: ActionSpec, hidden: int = 32, **options: Any
    ) -> None:
        hidden = int(hidden)
        if hidden < 1:
            raise ValueError(f"neuromod hidden size must be positive, got {hidden}")
        super().__init__(obs_shape, action, hidden=hidden, **options)
        self.in_dim = int(np.prod(self.obs_shape))
        self.hidden = hidden
        H, n_in, n_out = hidden, self.in_dim, action.size
        shapes = {
            "W_in": (n_in, H), "b": (H,), "W": (H, H), "alpha": (H, H),
            "w_m": (H,), "b_m": (1,), "W_out": (H, n_out), "b_out": (n_out,),
        }
        self._slices: dict[str, tuple[int, int, tuple[int, ...]]] = {}
        off = 0
        for name, shape in shapes.items():
            n = int(np.prod(shape))
            self._slices[name] = (off, off + n, shape)
            off += n
        self._num_params = off

    @property
    def num_params(self) -> int:
        return self._num_params

    def unpack(self, params: torch.Tensor) -> dict[str, torch.Tensor]:
        """Views of ``params (P, D)`` per named tensor, each ``(P, *shape)``."""
        P = params.shape[0]
        return {k: params[:, a:b].reshape(P, *shape) for k, (a, b, shape) in self._slices.items()}

    def initial_state(self, P: int, B: int, device: torch.device | str = "cpu") -> Any:
        H = self.hidden
        return {
            "h": torch.zeros(P, B, H, device=device),
            "hebb": torch.zeros(P, B, H, H, device=device),
        }

    def reset_state(self, state: Any, done) -> Any:
        """New state with the slots where ``done (P, B)`` is True zeroed (masked_fill, so a
        NaN left in a finished slot does not survive the reset)."""
        h, hebb = state["h"], state["hebb"]
        done = torch.as_tensor(done, device=h.device, dtype=torch.bool)
        if done.shape != h.shape[:2]:
            raise ValueError(f"done must have shape {tuple(h.shape[:2])}, got {tuple(done.shape)}")
        return {
            "h": h.masked_fill(done[..., None], 0.0),
            "hebb": hebb.masked_fill(done[..., None, None], 0.0),
        }

    def forward(self, params, obs, state=None, obs_mean=None, obs_std=None):
        P, B = self.check_inputs(params, obs)
        H = self.hidden
        p = self.unpack(params.to(dtype=torch.float32))
        x = obs.reshape(P, B, self.in_dim).to(device=params.device, dtype=torch.float32)
        x = normalize_obs(x, obs_mean, obs_std)
        if state is None:
            state = self.initial_state(P, B, params.device)
        h_prev, hebb = state["h"], state["hebb"]
        if h_prev.shape != (P, B, H):
            raise ValueError(f"neuromod state h has shape {tuple(h_prev.shape)}, need {(P, B, H)}")

        pre = torch.baddbmm(p["b"].unsqueeze(1), x, p["W_in"])
        pre = torch.baddbmm(pre, h_prev, p["W"])
        # Plastic part: sum_i h_prev[i] * alpha[i, j] * Hebb[i, j], per slot.
        plastic = torch.matmul(h_prev.unsqueeze(-2), p["alpha"].unsqueeze(1) * hebb)
        h = torch.tanh(pre + plastic.squeeze(-2))
        m = torch.tanh((h * p["w_m"].unsqueeze(1)).sum(-1) + p["b_m"])  # (P, B)
        # Hebb + outer(M * h_prev, h) for all P*B slots in one batched matmul.
        hebb = torch.baddbmm(
            hebb.reshape(P * B, H, H),
            (m.unsqueeze(-1) * h_prev).reshape(P * B, H, 1),
            h.reshape(P * B, 1, H),
        ).clamp_(-1.0, 1.0).reshape(P, B, H, H)
        y = torch.baddbmm(p["b_out"].unsqueeze(1), h, p["W_out"])
        return y, {"h": h, "hebb": hebb}

    def act(self, params, obs, state=None, obs_mean=None, obs_std=None):
        y, state = self.forward(params, obs, state, obs_mean, obs_std)
        return self.to_action(y), state

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        """PyTorch-default-like scale: every weight matrix (W_in, W, alpha, w_m, W_out)
        ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``, biases zero. Random rather than zero so the
        recurrence, the modulator and the traces are all live from the first generation (with
        zero weights h stays 0 and no trace ever forms)."""
        out = np.zeros(self.num_params)
        fan_in = {"W_in": self.in_dim, "W": self.hidden, "alpha": self.hidden,
                  "w_m": self.hidden, "W_out": self.hidden}
        for name, fi in fan_in.items():
            a, b, _ = self._slices[name]
            bound = 1.0 / np.sqrt(fi)
            out[a:b] = rng.uniform(-bound, bound, size=b - a)
        return out
