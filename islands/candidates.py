"""Which genomes get tested against the target, in what order, and which one is the solution.

Plain Python: the run loop (``islands.runtime.loop``) feeds island results in, takes the
next candidate to test out, and asks :func:`choose_solution` at the end.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .messages import EvolveResult

KINDS = ("center", "sample")  # tested in turn, center first


@dataclasses.dataclass
class Candidate:
    """A genome to test against the target. ``kind`` "sample": the island's best evaluated
    genome; "center": the island's search center (distribution mean; the GA elite) at the
    time a sample reached the target, ``fitness`` being that sample's. The best sample's
    training fitness is biased upwards -- it won among ``popsize`` noisy evaluations on the
    same few episodes --, so it often fails a test on fresh episodes; the center was never
    selected on noise. Neither kind always passes first (docs/results/candidates.md), hence
    both, in turn."""

    params: np.ndarray
    fitness: float
    island: int
    generation: int
    obs_stats: dict[str, Any] | None
    kind: str = "sample"
    # the archipelago's totals (evals, episodes, env_steps, wall_s) when it was found
    found_at: dict[str, float] = dataclasses.field(default_factory=dict)
    # the island's re-evaluation on fresh training episodes (None: none ran), its std error
    confirmed: float | None = None
    confirmed_se: float = 0.0

    @property
    def score(self) -> float:
        return self.fitness if self.confirmed is None else self.confirmed


class CandidateQueue:
    """The best untested candidate of each kind that could pass a test
    (``CandidateOffer.plausible``: its island's re-evaluation on fresh episodes not more
    than two standard errors below the target; without one, a training fitness at the
    target), ranked by score (the re-evaluation's mean where there is one);
    ``next()`` alternates between the kinds, center first. ``rejected`` counts offers
    whose re-evaluation fell short although their training fitness reached the target."""

    def __init__(self, target: float | None) -> None:
        self.target = target
        self.best: dict[str, Candidate | None] = dict.fromkeys(KINDS)
        self._last = KINDS[-1]
        self.rejected = 0

    def offer(self, i: int, result: EvolveResult, found_at: dict[str, float] | None = None
              ) -> None:
        """Take island ``i``'s offers (``result.offers``); ``found_at``: the run's totals
        at this report."""
        if self.target is None:
            return
        for o in result.offers:
            if not o.plausible(self.target):
                self.rejected += int(o.fitness >= self.target)
                continue
            prev = self.best[o.kind]
            if prev is None or prev.score < o.score:
                self.best[o.kind] = Candidate(
                    np.array(o.params), o.fitness, i, result.report.generation,
                    result.obs_stats, o.kind, dict(found_at or {}), o.confirmed,
                    o.confirmed_se)

    def full(self) -> bool:
        """A candidate of every kind is waiting."""
        return all(c is not None for c in self.best.values())

    def next(self) -> Candidate | None:
        """The next candidate to test (removed from the queue), or None."""
        start = (KINDS.index(self._last) + 1) % len(KINDS)
        for kind in KINDS[start:] + KINDS[:start]:
            cand = self.best[kind]
            if cand is not None:
                self.best[kind], self._last = None, kind
                return cand
        return None


def passes(test: dict[str, Any], target: float | None) -> bool:
    """A full (not screened-out) test whose mean reaches the target."""
    return target is not None and not test.get("screened_out") and test["mean"] >= target


def choose_solution(tested: list[tuple[Candidate, dict[str, Any]]], target: float | None
                    ) -> tuple[Candidate | None, dict[str, Any] | None]:
    """The run's solution: the first candidate whose test passed, else the best by a full
    test (screens do not count: their few episodes are not comparable); (None, None) when
    no full test ran."""
    for cand, test in tested:
        if passes(test, target):
            return cand, test
    full = [(c, t) for c, t in tested if not t.get("screened_out")]
    if not full:
        return None, None
    return max(full, key=lambda ct: ct[1]["mean"])


def untested(cand: Candidate, tested: list[tuple[Candidate, dict[str, Any]]]) -> bool:
    """True when no full test has run on ``cand``'s genome yet."""
    return not any(np.array_equal(c.params, cand.params) for c, t in tested
                   if not t.get("screened_out"))
