"""Synthetic tasks for load tests: a genome scored by an analytic function, at a chosen cost.

Env ids ``rastrigin:D`` and ``sphere:D`` (``D`` parameters, e.g. ``rastrigin:100``) run on
the ``synthetic`` backend. An individual's "episode" is one evaluation of the function at its
genome; fitness is ``-f(x)``, so the optimum is 0 at ``x = 0`` (Rastrigin: ``10 D + sum(x^2
- 10 cos(2 pi x))``, Rastrigin 1974 in the D-dimensional form of Muehlenbein et al. 1991,
the standard multimodal test function; sphere: ``sum(x^2)``). So thousands of islands fit
on one machine, and what a run measures is the archipelago itself: reports, migration, the
coordinator, the driver.

``env_kwargs`` set the cost of one ``evaluate`` call, to stand in for a real env:

* ``cost_ms``: CPU time spent per individual (a busy loop);
* ``wait_ms``: time waited per call without using a CPU (a remote simulator, a GPU). With
  ``defer_waits`` set (an island host process does, for its batch of islands) the call
  only adds the wait to :attr:`SyntheticEvaluator.owed_s` and the host waits once for the
  longest: its islands' simulators run side by side, and thousands of islands fit in a
  process without a thread each;
* ``noise``: the standard deviation of Gaussian noise added to each episode's return
  (seeded by the call's seed: common random numbers across the population).

There is no observation and no policy network: the genome is the parameter vector
(:class:`Genome`, ``kind`` "genome").
"""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np

from .base import EvalResult, Evaluator, check_seed

FUNCTIONS = {
    "rastrigin": lambda X: 10.0 * X.shape[1] + (X * X - 10.0 * np.cos(2 * np.pi * X)).sum(1),
    "sphere": lambda X: (X * X).sum(1),
}
_ID = re.compile(r"^(?P<name>[a-z]+):(?P<dim>\d+)$")
OPTIONS = ("cost_ms", "wait_ms", "noise")


def parse_synthetic(env_id: str) -> tuple[str, int] | None:
    """``("rastrigin", 100)`` for ``"rastrigin:100"``; None for ids of other backends.
    ValueError for a synthetic name with a dimension below 1."""
    m = _ID.match(str(env_id))
    if m is None or m["name"] not in FUNCTIONS:
        return None
    if int(m["dim"]) < 1:
        raise ValueError(f"env {env_id!r}: the dimension must be at least 1")
    return m["name"], int(m["dim"])


def evaluator_waits(eval_spec) -> bool:
    """Whether ``eval_spec``'s evaluator spends its calls waiting rather than computing (a
    synthetic task with ``wait_ms``): a process can then serve many islands at once."""
    kw = eval_spec.env_kwargs or {}
    return parse_synthetic(eval_spec.env_id) is not None and float(kw.get("wait_ms", 0)) > 0


class Genome:
    """The "policy" of a synthetic task: the parameter vector is the point evaluated."""

    kind = "genome"

    def __init__(self, dim: int) -> None:
        self.num_params = int(dim)

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        """A start away from the optimum: uniform in [-3, 3]^D (Rastrigin's box is 5.12)."""
        return rng.uniform(-3.0, 3.0, self.num_params)

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "num_params": self.num_params}


def genome_rows(params, dim: int, env_id: str) -> np.ndarray:
    """``params`` as float64 rows ``(P, dim)`` (one genome becomes one row); ValueError
    naming ``env_id`` for any other shape. Shared by the genome backends (synthetic,
    problem)."""
    X = np.asarray(params, dtype=np.float64)
    X = X[None, :] if X.ndim == 1 else X
    if X.ndim != 2 or X.shape[1] != dim:
        raise ValueError(f"params must have shape (P, {dim}) for {env_id}, got {X.shape}")
    return X


class SyntheticEvaluator(Evaluator):
    """Evaluates genomes on ``rastrigin:D`` / ``sphere:D`` (see the module docstring); takes
    the evaluator keywords of :class:`envs.base.Evaluator`, of which only ``episodes`` and
    ``env_kwargs`` mean anything here."""

    backend = "synthetic"
    obs_stats = None

    def __init__(self, env_id: str, *, episodes: int = 1, env_kwargs=None, **_: Any) -> None:
        parsed = parse_synthetic(env_id)
        if parsed is None:
            raise ValueError(f"no synthetic env {env_id!r}; ids look like rastrigin:100 "
                             f"({', '.join(FUNCTIONS)})")
        kw = dict(env_kwargs or {})
        unknown = sorted(set(kw) - set(OPTIONS))
        if unknown:
            raise ValueError(f"env {env_id!r}: unknown env_kwargs key {unknown[0]!r} "
                             f"(known: {', '.join(OPTIONS)})")
        if int(episodes) < 1:
            raise ValueError(f"episodes must be >= 1, got {episodes}")
        self.env_id, self.episodes = env_id, int(episodes)
        self.fn = FUNCTIONS[parsed[0]]
        self.policy = Genome(parsed[1])
        self.cost_s = float(kw.get("cost_ms", 0.0)) / 1000
        self.wait_s = float(kw.get("wait_ms", 0.0)) / 1000
        self.noise = float(kw.get("noise", 0.0))
        self.defer_waits, self.owed_s = False, 0.0

    def evaluate(self, params, seed: int) -> EvalResult:
        t0 = time.perf_counter()
        check_seed(seed)
        X = genome_rows(params, self.num_params, self.env_id)
        P, E = len(X), self.episodes
        value = -self.fn(X)
        R = np.repeat(value[:, None], E, axis=1)
        if self.noise:  # the same draws for every individual: common random numbers
            R = R + self.noise * np.random.default_rng(seed).standard_normal(E)[None, :]
        self._spend(P, t0)
        broken = ~np.isfinite(R).all(1)
        fitness = np.where(broken, -np.inf, R.mean(1))
        return EvalResult(fitness=fitness, returns=R, lengths=np.ones((P, E), np.int64),
                          env_steps=P * E, frames=P * E, broken=broken,
                          wall_s=time.perf_counter() - t0)

    def _spend(self, P: int, t0: float) -> None:
        """The call's cost: ``cost_ms`` of CPU per individual, then ``wait_ms`` asleep."""
        until = t0 + self.cost_s * P
        while time.perf_counter() < until:
            pass
        if self.defer_waits:
            self.owed_s += self.wait_s
        elif self.wait_s:
            time.sleep(self.wait_s)

    def take_owed(self) -> float:
        """The waits deferred since the last call of this (seconds), reset to 0."""
        owed, self.owed_s = self.owed_s, 0.0
        return owed

    def set_obs_stats(self, state_dict) -> None:
        if state_dict is not None:
            raise ValueError(f"{self.env_id}: a synthetic task has no observations")
