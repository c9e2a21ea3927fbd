"""A user's own objective as an evaluator: ``f`` over genomes instead of an environment.

``f`` is a Python callable, or what an :class:`envs.objective.Objective` names (imported or
unpickled in the process that evaluates, an island's or the tester's). It takes either the
whole population, a ``(P, D)`` float64 numpy array, and returns ``P`` values, or one genome,
a ``(D,)`` array, and returns one number:
:class:`ProblemEvaluator` calls it on the population first and falls back to one call per
genome when that call raises or does not return ``P`` values (as pycma's ``fmin2`` takes a
per-solution function and evosax / EvoTorch a batched one). ``minimize`` turns a cost into
the fitness the strategies maximize (``-f``). ``bounds`` ``(low, high)``: genomes are
clipped into the box before ``f`` sees them (the strategies themselves are unbounded).
A value that is not finite (NaN, inf) makes that genome's fitness ``-inf``, as a broken
episode does for an environment. The "policy" is the genome itself
(:class:`envs.synthetic.Genome`), started uniformly in ``bounds`` or in ``[-3, 3]^D``.

An evaluation of ``episodes`` "episodes" is that many calls of ``f`` for a ``noisy``
function (averaged, as an env's episodes are), and one call whose value stands for all of
them for a deterministic one: a second call would return the same, so a test or a
confirmation of a deterministic function costs one call and has no spread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .base import EvalResult, Evaluator, check_seed
from .objective import PREFIX, Objective, load_function
from .objective import ObjectiveError as ProblemError
from .synthetic import Genome, genome_rows


class BoxGenome(Genome):
    """A genome started uniformly inside ``bounds`` (``Genome``'s [-3, 3] without them)."""

    def __init__(self, dim: int, bounds: tuple[float, float] | None) -> None:
        super().__init__(dim)
        self.bounds = bounds

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        if self.bounds is None:
            return super().init_params(rng)
        return rng.uniform(self.bounds[0], self.bounds[1], self.num_params)


class ProblemEvaluator(Evaluator):
    """Evaluates genomes on a user's function (see the module docstring)."""

    backend = "problem"
    obs_stats = None

    def __init__(self, target: str | Callable, dim: int, *, minimize: bool = False,
                 bounds: tuple[float, float] | None = None, noisy: bool = False,
                 episodes: int = 1, **_: Any) -> None:
        if int(dim) < 1:
            raise ProblemError(f"problem dimension must be at least 1, got {dim}")
        if int(episodes) < 1:
            raise ProblemError(f"episodes must be >= 1, got {episodes}")
        if bounds is not None:
            low, high = (float(b) for b in bounds)
            if not low < high:
                raise ProblemError(f"problem bounds must be (low, high) with low < high, "
                                   f"got {tuple(bounds)}")
            bounds = (low, high)
        self.fn, self.target = load_function(target), target
        self.name = getattr(self.fn, "__name__", "problem")
        self.env_id, self.episodes = f"{PREFIX}{self.name}", int(episodes)
        self.sign = -1.0 if minimize else 1.0
        self.bounds, self.noisy = bounds, bool(noisy)
        self.policy = BoxGenome(int(dim), bounds)
        self.batched: bool | None = None  # decided on the first call

    @classmethod
    def from_objective(cls, obj: Objective, episodes: int = 1) -> ProblemEvaluator:
        """The evaluator of a run's objective (what ``EvalSpec.build`` makes)."""
        ev = cls(obj.source, obj.dim, minimize=obj.minimize, bounds=obj.bounds,
                 noisy=obj.noisy, episodes=episodes)
        ev.env_id = obj.env_id
        return ev

    def values(self, X: np.ndarray) -> np.ndarray:
        """``f`` of each row of ``X`` as float64, ``(P,)``; ProblemError for a wrong shape."""
        if self.batched is not False:
            try:
                v = np.asarray(self.fn(X), dtype=np.float64)
            except Exception:  # noqa: BLE001 - a per-genome function given a population
                if self.batched:
                    raise
                v = None
            if v is not None and v.shape in ((len(X),), (len(X), 1)):
                self.batched = True
                return v.reshape(len(X))
            if self.batched:
                raise ProblemError(f"problem {self.name}: returned shape {v.shape} for "
                                   f"{len(X)} genomes, expected ({len(X)},)")
            self.batched = False
        return np.array([self._one(x) for x in X], dtype=np.float64)

    def _one(self, x: np.ndarray) -> float:
        v = np.asarray(self.fn(x), dtype=np.float64)
        if v.size != 1:
            raise ProblemError(f"problem {self.name}: returned shape {v.shape} for one "
                               f"genome of shape {x.shape}, expected a number")
        return float(v.reshape(()))

    def evaluate(self, params, seed: int) -> EvalResult:
        t0 = time.perf_counter()
        check_seed(seed)
        X = genome_rows(params, self.num_params, self.env_id)
        if self.bounds is not None:
            X = np.clip(X, *self.bounds)
        P, E = len(X), self.episodes
        if self.noisy:  # one call per episode, each its own draw of the function's noise
            R = np.stack([self.sign * self.values(X) for _ in range(E)], axis=1)
        else:  # the same value E times over: one call
            R = np.repeat((self.sign * self.values(X))[:, None], E, axis=1)
        broken = ~np.isfinite(R).all(1)
        fitness = np.where(broken, -np.inf, R.mean(1))
        R = np.where(np.isfinite(R), R, -np.inf)
        calls = P * (E if self.noisy else 1)
        return EvalResult(fitness=fitness, returns=R, lengths=np.ones((P, E), np.int64),
                          env_steps=calls, frames=calls, broken=broken,
                          wall_s=time.perf_counter() - t0)

    def set_obs_stats(self, state_dict) -> None:
        if state_dict is not None:
            raise ValueError(f"problem {self.name}: a function has no observations")
