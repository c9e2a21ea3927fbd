"""Hooks: what an island does around ask -> evaluate -> tell, besides the algorithm itself.

``IslandCore.evolve`` runs ``k`` times ask -> evaluate -> tell. Everything else an island
does per generation or per call attaches to it as a :class:`Hook`, in the shape of EvoTorch's
``SearchAlgorithm.before_step_hook`` / ``after_step_hook`` (whose functions may add entries to
the algorithm's status, as ``Hook.report`` adds fields to the island's report row) and
``Problem.after_eval_hook`` (``evaluated`` below). The island runs its hooks, in its list's
order, at four points:

- ``before_generation(island)``: before ``ask`` (:class:`DebugExit`);
- ``evaluated(island, gen)``: after the training evaluation, before ``tell``; it may replace
  ``gen.fitness`` (the ranking probes, :mod:`islands.island.resampling`);
- ``after_generation(island, gen)``: after ``tell`` (the episode schedule, then restarts,
  :mod:`islands.island.restarts`; :class:`DebugSlowdown`);
- ``after_call(island, call)``: after the call's generations, before its report (candidate
  re-evaluation, :mod:`islands.island.reeval`).

A hook with state names its key in the island's checkpoint (``state_key``): ``state_dict()``
is saved there, ``load_state(island, d)`` restores it (``d`` None: the checkpoint has none).

What hooks use of the island (``IslandCore``): ``strategy``, ``generation``, ``best``,
``runs`` (:class:`~islands.island.restarts.Runs`), ``evaluator``, ``set_episodes``,
``counters``, ``index``, ``run_seed``, ``candidate_threshold`` and ``reevaluate`` (where
``reevaluator`` is not None: the island has an eval spec).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

log = logging.getLogger("islands.island")


@dataclass
class Generation:
    """One generation as the hooks see it: the population, the fitness the strategy is told
    and the training evaluation (an ``envs.EvalResult``); ``returns``: the task's own mean
    returns (the fitness before a reward shift; None: the same as ``fitness``); ``halves``:
    a probe generation's two evaluations (set by the ranking probes)."""

    X: np.ndarray
    fitness: np.ndarray
    result: Any
    returns: np.ndarray | None = None
    halves: tuple[np.ndarray, np.ndarray] | None = None


class Elite:
    """The best ``n`` genomes seen during one call, by measured fitness, with their own
    returns ``r`` (the same as ``f`` unless a reward shift sets them apart)."""

    def __init__(self, n: int, dim: int) -> None:
        self.n, self.x, self.f, self.r = n, np.zeros((0, dim)), np.zeros(0), np.zeros(0)

    def add(self, X, fit: np.ndarray, returns: np.ndarray | None = None) -> None:
        """Keep the best ``n`` of the elite so far and the rows of ``X`` (numpy, or a tensor
        on a device: only the rows that can enter the elite are copied to the host)."""
        returns = fit if returns is None else returns
        ok = np.flatnonzero(np.isfinite(fit))
        ok = ok[np.argsort(-fit[ok], kind="stable")[: self.n]]
        x = np.concatenate([self.x, host_rows(X, ok)])
        f, r = np.concatenate([self.f, fit[ok]]), np.concatenate([self.r, returns[ok]])
        top = np.argsort(-f, kind="stable")[: self.n]
        self.x, self.f, self.r = x[top], f[top], r[top]


def host_rows(X, rows: np.ndarray) -> np.ndarray:
    """Rows ``rows`` of a population as float64 numpy (a torch tensor is indexed where it
    lives, then copied)."""
    if isinstance(X, np.ndarray):
        return np.asarray(X[rows], dtype=np.float64)
    import torch

    idx = torch.as_tensor(rows, dtype=torch.long, device=X.device)
    return X.index_select(0, idx).to("cpu", torch.float64).numpy()


@dataclass
class Call:
    """One ``evolve`` call as the hooks see it: the migrants it accepted, its elite (its
    emigrants), whether the run wants candidate offers from it and the offers made; ``evals0``
    / ``steps0``: the island's counts when it began (for the report's rates)."""

    accepted: int
    elite: Elite
    want_offers: bool
    evals0: int
    steps0: int
    offers: list = field(default_factory=list)


class Hook:
    """Does nothing at every point; a hook overrides the points it needs (module docstring)."""

    state_key: str | None = None  # where the hook's state goes in the island's checkpoint

    def before_generation(self, island) -> None:
        pass

    def evaluated(self, island, gen: Generation) -> None:
        pass

    def after_generation(self, island, gen: Generation) -> None:
        pass

    def after_call(self, island, call: Call) -> None:
        pass

    def report(self) -> dict[str, Any]:
        """Fields of the island's report row that this hook fills."""
        return {}

    def state_dict(self) -> Any:
        return None

    def load_state(self, island, d: Any) -> None:
        pass


class DebugExit(Hook):
    """Debug option for the fault tests (``--debug-exit-after-gen``): the process dies before
    generation ``after_gen``, once: a restarted (reconstructed) island gets no such hook."""

    def __init__(self, after_gen: int) -> None:
        self.after_gen = int(after_gen)

    def before_generation(self, island) -> None:
        if island.generation >= self.after_gen:
            log.warning("island %d: debug exit at generation %d", island.index,
                        island.generation)
            os._exit(1)


class DebugSlowdown(Hook):
    """Debug option (``slowdown_s`` in ``island_specs``): an island slow on purpose, sleeping
    after each generation."""

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)

    def after_generation(self, island, gen: Generation) -> None:
        time.sleep(self.seconds)
