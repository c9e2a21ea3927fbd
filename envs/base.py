"""The evaluator contract: a population of parameter vectors in, fitness out.

Build an evaluator once (env id, policy, episodes per individual, max episode steps,
threads, device); then ``evaluate(params, seed)`` runs every individual for ``episodes``
full episodes and returns an :class:`EvalResult`. Within one call every individual meets
the same episode seeds (common random numbers); callers pass a new ``seed`` each
generation so the episodes change between generations.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np


@dataclass
class EvalResult:
    """What one population evaluation produced.

    fitness: ``(P,)`` mean episode return per individual; ``-inf`` for an individual whose
        env produced NaN/inf observations or rewards (strategies rank it last).
    returns, lengths: ``(P, E)`` per-episode return and length.
    env_steps: steps of live episodes only (the steps whose rewards count).
    frames: all env frames stepped, wasted ones included; ``live_fraction = env_steps/frames``.
    broken: ``(P,)`` True where NaN/inf was seen.
    obs_count/obs_mean/obs_m2: statistics of the observations seen in this call (Chan et al.
        mergeable moments), or None when the evaluator does not track them.
    """

    fitness: np.ndarray
    returns: np.ndarray
    lengths: np.ndarray
    env_steps: int
    frames: int
    broken: np.ndarray
    wall_s: float = 0.0
    obs_count: float = 0.0
    obs_mean: np.ndarray | None = None
    obs_m2: np.ndarray | None = None
    extra: dict = field(default_factory=dict)

    @property
    def live_fraction(self) -> float:
        return float(self.env_steps) / max(1, int(self.frames))


class Evaluator(ABC):
    """Turns ``params (P, D)`` into fitness. Subclasses own their environments."""

    backend: str = "base"

    @property
    @abstractmethod
    def num_params(self) -> int: ...

    @abstractmethod
    def evaluate(self, params, seed: int) -> EvalResult:
        """Run every row of ``params`` for ``episodes`` episodes with episode seeds from
        ``seed``; ``params`` is a float array ``(P, num_params)`` (numpy or torch)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release environments and threads."""

    def restart_episodes(self) -> None:  # noqa: B027 - optional hook
        """Make the next ``evaluate``'s episodes depend on its ``seed`` alone, as in a fresh
        evaluator. A no-op where that always holds (Gymnasium, torch-native); EnvPool draws
        episode starts from generators that carry over between calls and rebuilds its pool.
        Islands call it at each checkpoint due by generation count, so a run resumed from
        one sees the same episodes as the run that went on."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
