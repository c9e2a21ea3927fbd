"""Running observation statistics that islands can merge (Chan et al. parallel update).

Kept as (count, mean, M2) where M2 is the sum of squared deviations, so two summaries of
disjoint data merge exactly:

    n = n_a + n_b,  delta = mean_b - mean_a
    mean = mean_a + delta * n_b / n
    M2 = M2_a + M2_b + delta^2 * n_a * n_b / n

(Chan, Golub, LeVeque 1979). Variance = M2 / n; std is clipped below at ``eps`` so constant
observation dimensions do not divide by zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class RunningMeanStd:
    def __init__(self, shape: tuple[int, ...], eps: float = 1e-2) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.eps = float(eps)
        self.count = 0.0
        self.mean = np.zeros(self.shape, dtype=np.float64)
        self.m2 = np.zeros(self.shape, dtype=np.float64)

    @property
    def var(self) -> np.ndarray:
        return self.m2 / self.count if self.count > 0 else np.ones(self.shape)

    @property
    def std(self) -> np.ndarray:
        return np.maximum(np.sqrt(self.var), self.eps)

    def update(self, batch: np.ndarray) -> None:
        """Add a batch of observations, shape ``(N, *shape)``; non-finite rows are skipped."""
        x = np.asarray(batch, dtype=np.float64).reshape((-1,) + self.shape)
        x = x[np.isfinite(x.reshape(len(x), -1)).all(axis=1)]
        if len(x) == 0:
            return
        mean = x.mean(axis=0)
        m2 = ((x - mean) ** 2).sum(axis=0)
        self.merge_moments(float(len(x)), mean, m2)

    def merge_moments(self, count: float, mean: np.ndarray, m2: np.ndarray) -> None:
        """Merge another summary given as (count, mean, M2) into this one."""
        if count <= 0:
            return
        n = self.count + count
        delta = np.asarray(mean, dtype=np.float64) - self.mean
        self.mean = self.mean + delta * (count / n)
        self.m2 = self.m2 + np.asarray(m2, dtype=np.float64) + delta**2 * (self.count * count / n)
        self.count = n

    def merge(self, other: RunningMeanStd) -> None:
        self.merge_moments(other.count, other.mean, other.m2)

    def copy(self) -> RunningMeanStd:
        out = RunningMeanStd(self.shape, self.eps)
        out.load_state_dict(self.state_dict())
        return out

    def state_dict(self) -> dict[str, Any]:
        return {
            "shape": list(self.shape),
            "eps": self.eps,
            "count": self.count,
            "mean": self.mean.copy(),
            "m2": self.m2.copy(),
        }

    def load_state_dict(self, d: dict[str, Any]) -> None:
        self.shape = tuple(int(s) for s in d["shape"])
        self.eps = float(d["eps"])
        self.count = float(d["count"])
        self.mean = np.array(d["mean"], dtype=np.float64).reshape(self.shape)
        self.m2 = np.array(d["m2"], dtype=np.float64).reshape(self.shape)

    @staticmethod
    def from_state_dict(d: dict[str, Any]) -> RunningMeanStd:
        r = RunningMeanStd(tuple(d["shape"]))
        r.load_state_dict(d)
        return r
