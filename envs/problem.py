"""A user's own objective as an evaluator: ``f`` over genomes instead of an environment.

``f`` is a Python callable, or ``"package.module:function"`` imported in the process that
evaluates (an island's). It takes either the whole population, a ``(P, D)`` float64 numpy
array, and returns ``P`` values, or one genome, a ``(D,)`` array, and returns one number:
:class:`ProblemEvaluator` calls it on the population first and falls back to one call per
genome when that call raises or does not return ``P`` values (as pycma's ``fmin2`` takes a
per-solution function and evosax / EvoTorch a batched one). ``minimize`` turns a cost into
the fitness the strategies maximize (``-f``). ``bounds`` ``(low, high)``: genomes are
clipped into the box before ``f`` sees them (the strategies themselves are unbounded).
A value that is not finite (NaN, inf) makes that genome's fitness ``-inf``, as a broken
episode does for an environment. The "policy" is the genome itself
(:class:`envs.synthetic.Genome`), started uniformly in ``bounds`` or in ``[-3, 3]^D``.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .base import EvalResult, Evaluator, check_seed
from .synthetic import Genome, genome_rows


class ProblemError(ValueError):
    """A target that does not import, is not callable, or returns the wrong shape."""


def load_target(target: str | Callable) -> Callable:
    """``target`` itself when callable, else the function ``"package.module:function"``
    names; ProblemError (one line) otherwise."""
    if callable(target):
        return target
    module, sep, attr = str(target).partition(":")
    if not sep or not module or not attr:
        raise ProblemError(f"problem {target!r}: expected package.module:function")
    try:
        fn = importlib.import_module(module)
        for part in attr.split("."):
            fn = getattr(fn, part)
    except (ImportError, AttributeError) as e:
        raise ProblemError(f"problem {target!r} cannot be imported: {e}") from None
    if not callable(fn):
        raise ProblemError(f"problem {target!r} is not callable ({type(fn).__name__})")
    return fn


PREFIX = "problem:"
KWARGS = ("dim", "minimize", "bounds")


def problem_kwargs(env_id: str, env_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """The evaluator's arguments from an env id ``problem:package.module:function`` and its
    ``env_kwargs`` (``dim`` required; ``minimize``, ``bounds``); ProblemError otherwise."""
    kw = dict(env_kwargs or {})
    unknown = sorted(set(kw) - set(KWARGS))
    if unknown:
        raise ProblemError(f"env {env_id!r}: unknown env_kwargs key {unknown[0]!r} "
                           f"(known: {', '.join(KWARGS)})")
    if kw.get("dim") is None:
        raise ProblemError(f"env {env_id!r}: a user's objective needs its dimension "
                           "(--dim D, or env_kwargs dim)")
    return {"target": str(env_id)[len(PREFIX):], **kw}


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
                 bounds: tuple[float, float] | None = None, **_: Any) -> None:
        if int(dim) < 1:
            raise ProblemError(f"problem dimension must be at least 1, got {dim}")
        if bounds is not None:
            low, high = (float(b) for b in bounds)
            if not low < high:
                raise ProblemError(f"problem bounds must be (low, high) with low < high, "
                                   f"got {tuple(bounds)}")
            bounds = (low, high)
        self.fn, self.target = load_target(target), target
        self.name = getattr(self.fn, "__name__", "problem")
        self.env_id, self.episodes = f"problem:{self.name}", 1
        self.sign = -1.0 if minimize else 1.0
        self.bounds = bounds
        self.policy = BoxGenome(int(dim), bounds)
        self.batched: bool | None = None  # decided on the first call

    @classmethod
    def from_env(cls, env_id: str, env_kwargs: dict[str, Any] | None) -> ProblemEvaluator:
        """Built as the other backends are, from an env id and ``env_kwargs``."""
        kw = problem_kwargs(env_id, env_kwargs)
        ev = cls(kw.pop("target"), **kw)
        ev.env_id = str(env_id)
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
        value = self.sign * self.values(X)
        broken = ~np.isfinite(value)
        fitness = np.where(broken, -np.inf, value)
        P = len(X)
        return EvalResult(fitness=fitness, returns=fitness[:, None].copy(),
                          lengths=np.ones((P, 1), np.int64), env_steps=P, frames=P,
                          broken=broken, wall_s=time.perf_counter() - t0)

    def set_obs_stats(self, state_dict) -> None:
        if state_dict is not None:
            raise ValueError(f"problem {self.name}: a function has no observations")
