"""Adam, the optimizer both OpenAI-ES variants step their center with.

D. P. Kingma and J. Ba (2015), "Adam: a method for stochastic optimization", ICLR, in the
form of Salimans et al. (2017)'s evolution-strategies-starter (the bias corrections folded
into the step size), used for *ascent* with L2 weight decay:

    d = g - l2 * theta
    t += 1;  m = b1 m + (1 - b1) d;  v = b2 v + (1 - b2) d^2
    theta += lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)

One class serves numpy arrays (``openai-es``) and torch tensors on any device
(``openai-es-nt``): the moments take the array type, dtype and device of the ``theta`` they
are made for. Each array type keeps its own sequence of operations (numpy's out-of-place
expressions; torch's in-place ``add_`` / ``addcmul_`` / ``addcdiv``), so each variant's
trajectory stays the same bit for bit; the two agree to rounding, not bit for bit.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np


def _torch_if_tensor(x):
    """torch when ``x`` is a torch tensor, else None. A tensor means torch is loaded
    already; numpy-only runs (openai-es, ARS) never import it (about 2 s per process)."""
    torch = sys.modules.get("torch")
    return torch if torch is not None and isinstance(x, torch.Tensor) else None


class Adam:
    """Adam moments ``m``, ``v`` and step count ``t`` for one flat parameter vector."""

    def __init__(self, theta, lr: float, b1: float, b2: float, eps: float) -> None:
        """Zero moments shaped like ``theta`` (numpy array or torch tensor), ``t = 0``."""
        self.lr, self.b1, self.b2, self.eps = float(lr), float(b1), float(b2), float(eps)
        torch = _torch_if_tensor(theta)
        zeros = torch.zeros_like if torch is not None else np.zeros_like
        self.m, self.v, self.t = zeros(theta), zeros(theta), 0

    def ascend(self, theta, g, l2: float):
        """One step up the estimate ``g`` with decay ``l2 * theta``; the new ``theta``.

        The result is a new array, never ``theta`` modified in place: callers keep the old
        center (openai-es-nt's ``asked_center``) after the step.
        """
        b1, b2 = self.b1, self.b2
        self.t += 1
        a = self.lr * np.sqrt(1 - b2**self.t) / (1 - b1**self.t)
        torch = _torch_if_tensor(theta)
        if torch is not None:
            d = torch.add(g, theta, alpha=-l2)
            self.m.mul_(b1).add_(d, alpha=1 - b1)
            self.v.mul_(b2).addcmul_(d, d, value=1 - b2)
            return torch.addcdiv(theta, self.m, self.v.sqrt().add_(self.eps), value=a)
        d = g - l2 * theta
        self.m = b1 * self.m + (1 - b1) * d
        self.v = b2 * self.v + (1 - b2) * d * d
        return theta + a * self.m / (np.sqrt(self.v) + self.eps)

    def state_dict(self) -> dict[str, Any]:
        """``m``, ``v`` as float64 numpy copies (off the device) and ``t``."""
        return {"m": _numpy(self.m), "v": _numpy(self.v), "t": self.t}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        """Moments from :meth:`state_dict`, into this instance's array type and device."""
        torch = _torch_if_tensor(self.m)
        if torch is not None:
            dev = self.m.device
            self.m, self.v = (torch.tensor(np.asarray(d[k], dtype=np.float64), device=dev)
                              for k in ("m", "v"))
        else:
            self.m, self.v = (np.array(d[k], dtype=np.float64) for k in ("m", "v"))
        self.t = int(d["t"])


def _numpy(x) -> np.ndarray:
    return x.cpu().numpy().copy() if _torch_if_tensor(x) is not None else x.copy()
