"""The evaluator contract: a population of parameter vectors in, fitness out.

Build an evaluator once (env id, policy, episodes per individual, max episode steps,
threads, device); then ``evaluate(params, seed)`` runs every individual for ``episodes``
full episodes and returns an :class:`EvalResult`. Within one call every individual meets
the same episode seeds (common random numbers); callers pass a new ``seed`` each
generation so the episodes change between generations. Example::

    >>> from envs import make_evaluator
    >>> with make_evaluator("CartPole-v1", episodes=2) as ev:
    ...     res = ev.evaluate(np.zeros((3, ev.num_params)), seed=0)
    >>> res.fitness.shape
    (3,)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # annotations only: the contract needs no policy code at run time
    from policies import Policy, RunningMeanStd


def check_seed(seed) -> None:
    """One-line error for anything but a non-negative int (numpy ints included)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")


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
    """Turns ``params (P, D)`` into fitness; subclasses own their environments.

    Everything an island uses is declared here. Every backend's constructor takes the same
    keyword arguments (``envs.EvalSpec`` holds them, ``envs.make_evaluator`` picks the
    class)::

        Backend(env_id, policy="mlp", policy_options=None, episodes=1,
                max_episode_steps=None, num_threads=1, device="cpu", obs_norm=False,
                env_kwargs=None, env_module=None, **backend_specific)

    env_id: a registered id, ``"package.module:ClassName"`` or ``"package.module:Id-v0"``.
    policy: a kind of ``policies.POLICIES`` or a built :class:`policies.Policy`, with
        ``policy_options`` (e.g. ``{"hidden": (32,)}``) for a kind.
    episodes: episodes per individual per ``evaluate``; fitness is their mean return.
    max_episode_steps: truncation (None: the env's own limit).
    num_threads: the cores the evaluator may keep busy (EnvPool's env threads; torch's for
        the torch backend on CPU; Gymnasium steps its envs in the calling thread).
    device: where the policy runs (``"cpu"``, ``"cuda"``).
    obs_norm: normalize observations with running statistics (:attr:`obs_stats`).
    env_kwargs: passed to the env's constructor.
    env_module: a module imported first, so the ids it registers resolve in any process.
    """

    backend: str  # the backend's name, one of ``envs.BACKENDS`` other than "auto"
    env_id: str  # as passed to the constructor
    policy: Policy  # the batched policy the parameter vectors belong to
    # Observation statistics used to normalize inside the forward pass (None without
    # obs_norm): frozen during one ``evaluate``, merged with its observations afterwards.
    obs_stats: RunningMeanStd | None

    @property
    def num_params(self) -> int:
        """Length D of one parameter vector (the policy's)."""
        return self.policy.num_params

    @abstractmethod
    def evaluate(self, params, seed: int) -> EvalResult:
        """Run every row of ``params`` for ``episodes`` episodes with episode seeds from
        ``seed``; ``params`` is a float array ``(P, num_params)`` (numpy or torch)."""

    @abstractmethod
    def set_obs_stats(self, state_dict: dict[str, Any] | None) -> None:
        """Replace :attr:`obs_stats` with ``RunningMeanStd.from_state_dict(state_dict)``
        (e.g. the statistics merged over the islands). ValueError for a shape other than
        the env's, or for statistics given to an evaluator without ``obs_norm`` (which
        accepts None and does nothing)."""

    def restart_episodes(self) -> None:  # noqa: B027 - optional hook
        """Make the next ``evaluate``'s episodes depend on its ``seed`` alone, as in a fresh
        evaluator. A no-op where that always holds (Gymnasium, torch-native); EnvPool draws
        episode starts from generators that carry over between calls and rebuilds its pool.
        Islands call it at each checkpoint due by generation count, so a run resumed from
        one sees the same episodes as the run that went on."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release environments and threads."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
