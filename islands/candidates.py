"""Which genomes get tested against the target, in what order, and which one is the solution.

Plain Python: the run loop (``islands.runtime.loop``) feeds island results in, takes the
next test out (:class:`Validation`: a passing test is confirmed first), and asks
:meth:`Validation.solution` at the end.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .messages import EvolveResult

KINDS = ("center", "sample")  # tested in turn, center first
# --candidates: which kinds are tested (docs/results/confirmation.md)
CANDIDATE_SETS = {"center,sample": KINDS, "center": ("center",), "sample": ("sample",)}


@dataclasses.dataclass
class Candidate:
    """A genome to test against the target. ``kind`` "sample": the island's best evaluated
    genome; "center": the island's search center (distribution mean; the GA elite) at the
    time a sample reached the target, ``fitness`` being that sample's. The best sample's
    training fitness is biased upwards -- it won among ``popsize`` noisy evaluations on the
    same few episodes --, so it often fails a test on fresh episodes; the center was never
    selected on noise. Neither kind always passes first (docs/results/candidates.md), but a
    confirmed center held on a third test where a confirmed sample often did not
    (docs/results/confirmation.md): runs test centers alone unless ``--candidates`` says
    otherwise."""

    params: np.ndarray
    fitness: float
    island: int
    generation: int
    obs_stats: dict[str, Any] | None
    kind: str = "sample"
    # the archipelago's totals (evals, episodes, env_steps, wall_s) when it was found
    found_at: dict[str, float] = dataclasses.field(default_factory=dict)
    # the island's re-evaluation on fresh training episodes (None: none ran), its std error
    reeval: float | None = None
    reeval_se: float = 0.0

    @property
    def score(self) -> float:
        return self.fitness if self.reeval is None else self.reeval


class CandidateQueue:
    """The best untested candidate of each kind that could pass a test
    (``CandidateOffer.plausible``: its island's re-evaluation on fresh episodes not more
    than two standard errors below the target; without one, a training fitness at the
    target), ranked by score (the re-evaluation's mean where there is one);
    ``next()`` alternates between the kinds, center first. ``rejected`` counts offers
    whose re-evaluation fell short although their training fitness reached the target."""

    def __init__(self, target: float | None, kinds: tuple[str, ...] = KINDS) -> None:
        self.target, self.kinds = target, tuple(kinds)
        self.best: dict[str, Candidate | None] = dict.fromkeys(self.kinds)
        self._last = self.kinds[-1]
        self.rejected = 0

    def offer(self, i: int, result: EvolveResult, found_at: dict[str, float] | None = None
              ) -> None:
        """Take island ``i``'s offers (``result.offers``); ``found_at``: the run's totals
        at this report."""
        if self.target is None:
            return
        for o in result.offers:
            if o.kind not in self.best:  # a kind this run does not test
                continue
            if not o.plausible(self.target):
                self.rejected += int(o.fitness >= self.target)
                continue
            prev = self.best[o.kind]
            if prev is None or prev.score < o.score:
                self.best[o.kind] = Candidate(
                    np.array(o.params), o.fitness, i, result.report.generation,
                    result.obs_stats, o.kind, dict(found_at or {}), o.reeval,
                    o.reeval_se)

    def full(self) -> bool:
        """A candidate of every kind is waiting."""
        return all(c is not None for c in self.best.values())

    def next(self) -> Candidate | None:
        """The next candidate to test (removed from the queue), or None."""
        kinds = self.kinds
        start = (kinds.index(self._last) + 1) % len(kinds)
        for kind in kinds[start:] + kinds[:start]:
            cand = self.best[kind]
            if cand is not None:
                self.best[kind], self._last = None, kind
                return cand
        return None


def passes(test: dict[str, Any] | None, target: float | None) -> bool:
    """A full (not stopped early) test whose mean reaches the target."""
    return (target is not None and test is not None and not stopped_early(test)
            and test["mean"] >= target)


def stopped_early(test: dict[str, Any]) -> bool:
    """Whether a test stopped early, clearly below the target
    (``evaluate.sequential_test``): ``"stopped_early"``, or in records written before the
    rename ``"screened_out"`` (now only migrants are screened out: ``island/screen.py``)."""
    return bool(test.get("stopped_early", test.get("screened_out", False)))


@dataclasses.dataclass
class Verdict:
    """A tested candidate: ``test`` the test that selected it (the first to reach the target
    stops the search among candidates), ``retest`` its confirmation on fresh episodes (None:
    none ran)."""

    cand: Candidate
    test: dict[str, Any]
    retest: dict[str, Any] | None = None


class Validation:
    """What the tester runs next, and when the run is solved.

    A genome whose test reaches the target is re-tested once on fresh episodes (its
    confirmation, ``retest_episodes`` of them) before anything else is tested; the run is
    solved when that confirmation reaches the target too. The first test to reach the target
    is the maximum of many noisy tests, so its mean is biased upwards: ten LunarLander runs
    that all passed their selecting test fell below 200 four times on 100 fresh episodes
    (issue 42, docs/results/confirmation.md). With ``retest_episodes`` 0 the selecting test
    decides (the old rule)."""

    def __init__(self, target: float | None, retest_episodes: int) -> None:
        self.target, self.retest_episodes = target, int(retest_episodes)
        self.tested: list[Verdict] = []
        self.awaiting: Verdict | None = None  # passed its test, confirmation not yet run
        self.solved = False
        self.n_tests = self.n_retests = 0  # seeds: the n-th test / confirmation of the run

    def next(self, queue: CandidateQueue) -> tuple[str, Candidate] | None:
        """``("retest", cand)`` for a genome awaiting its confirmation, else ``("test",
        cand)`` for the queue's next candidate, else None (nothing to do, or solved)."""
        if self.solved:
            return None
        if self.awaiting is not None:
            return "retest", self.awaiting.cand
        cand = queue.next()
        return None if cand is None else ("test", cand)

    def record(self, kind: str, cand: Candidate, res: dict[str, Any]) -> Verdict:
        """A finished test (``kind`` "test") or confirmation ("retest") of ``cand``."""
        if kind == "retest":
            t = self.awaiting if self.awaiting is not None and self.awaiting.cand is cand \
                else self._find(cand)
            t.retest, self.awaiting = res, None
            self.n_retests += 1
            # an unsolved run's end-of-run confirmation of its best genome solves nothing:
            # only a genome whose own test passed can be confirmed
            self.solved = self.solved or (passes(t.test, self.target)
                                          and passes(res, self.target))
            return t
        t = Verdict(cand, res)
        self.tested.append(t)
        self.n_tests += 1
        if passes(res, self.target):
            if self.retest_episodes > 0:
                self.awaiting = t
            else:
                self.solved = True
        return t

    def _find(self, cand: Candidate) -> Verdict:
        for t in self.tested:
            if t.cand is cand:
                return t
        raise KeyError("confirmation of a candidate that was never tested")

    def confirmed(self, t: Verdict) -> bool:
        """``t`` passed its test and (where confirmations run) its confirmation."""
        return passes(t.test, self.target) and (
            self.retest_episodes <= 0 or passes(t.retest, self.target))

    def solution(self) -> Verdict | None:
        """The run's solution: the first confirmed genome, else the best by a full test
        (tests stopped early do not count: their few episodes are not comparable); None when no full
        test ran."""
        for t in self.tested:
            if self.confirmed(t):
                return t
        full = [t for t in self.tested if not stopped_early(t.test)]
        return max(full, key=lambda t: t.test["mean"]) if full else None

    def untested(self, cand: Candidate) -> bool:
        """True when no full test has run on ``cand``'s genome yet."""
        return not any(np.array_equal(t.cand.params, cand.params) for t in self.tested
                       if not stopped_early(t.test))
