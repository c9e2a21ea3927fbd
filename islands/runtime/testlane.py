"""The run loop's candidate test lane: one test at a time on the tester, off the islands'
critical path.

Islands offer their best genomes once they reach the target (``candidates.CandidateQueue``);
whenever no test runs, :class:`~islands.candidates.Validation` names what runs next: the
confirmation a passing test awaits (on ``retest_episodes`` fresh episodes), else the queue's
next candidate (a 100-episode test, stopped early when clearly below the target).
The run is solved when a confirmation passes. After the loop, :meth:`TestLane.finish`
runs what is still due so that every run reports a mean on episodes that played no part in
choosing its solution. Every test goes into ``tests`` for the summary.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from ..candidates import (
    CANDIDATE_SETS,
    Candidate,
    CandidateQueue,
    Validation,
    Verdict,
    passes,
    stopped_early,
)
from ..config import Config
from .port import CallFailed, CallLost, Runtime

log = logging.getLogger("islands.driver")


class TestLane:
    """The queue, the test running (its future and job), the validation state and the
    record of every test; ``elapsed()`` is the run's clock for the record."""

    __test__ = False  # (not a pytest class)

    def __init__(self, runtime: Runtime, cfg: Config, elapsed: Callable[[], float],
                 errors: list[dict[str, Any]]) -> None:
        self.rt, self.cfg, self.elapsed, self.errors = runtime, cfg, elapsed, errors
        self.queue = CandidateQueue(cfg.fitness_target, CANDIDATE_SETS[cfg.candidates])
        self.validation = Validation(cfg.fitness_target, cfg.retest_episodes)
        self.ref, self.job = None, None  # running: its future, ("test"|"retest", cand)
        self.tests: list[dict[str, Any]] = []  # every test and confirmation, for the summary

    @property
    def solved(self) -> bool:
        return self.validation.solved

    def wants_offers(self) -> bool:
        """Islands re-evaluate candidates for an offer only while the queue has room: with
        a test running and a candidate of every kind waiting, an offer's re-evaluation
        (2 genomes x --confirm-episodes, on the island's CPU) would mostly be discarded.
        BipedalWalker with the population at the target: an offer nearly every generation,
        20 episodes beside a generation of 48."""
        return not self.solved and not (self.ref is not None and self.queue.full())

    def start_next(self) -> None:
        """Start what is due when no test runs."""
        if self.ref is None:
            job = self.validation.next(self.queue)
            if job is not None:
                self.job, self.ref = job, self._submit(*job)

    def on_result(self) -> None:
        """The running test finished."""
        res, self.ref = self.rt.get(self.ref), None
        self.record(*self.job, res)

    def _submit(self, kind: str, cand: Candidate, stop_early: bool = True):
        v = self.validation
        return self.rt.test(kind, cand, v.n_retests if kind == "retest" else v.n_tests,
                            stop_early)

    def record(self, kind: str, cand: Candidate, res: dict[str, Any],
               final: bool = False) -> Verdict:
        """Log a finished test or confirmation (``kind`` "test" / "retest")."""
        role = "confirmation" if kind == "retest" else "selecting"
        self.tests.append({"role": role, "fitness": cand.fitness, "reeval": cand.reeval,
                           "reeval_se": cand.reeval_se,
                           "island": cand.island,
                           "generation": cand.generation, "kind": cand.kind, **res,
                           "passed": passes(res, self.cfg.fitness_target),
                           # the run's totals when the genome was found: what solving on
                           # this test would have cost
                           "found_at": dict(cand.found_at),
                           "wall_s": self.elapsed(), "final": final})
        log.info("%s of island %d's %s (generation %d, training fitness %.1f, "
                 "re-evaluated %s): mean %.1f over %d episodes%s", role + " test", cand.island,
                 cand.kind, cand.generation, cand.fitness,
                 "-" if cand.reeval is None else f"{cand.reeval:.1f}",
                 res["mean"], res["episodes"],
                 " (stopped early)" if stopped_early(res) else "")
        return self.validation.record(kind, cand, res)

    def finish(self, hof, found_at: Callable[[int, int], dict[str, float]]) -> None:
        """After the loop: the running test, the confirmation a passing test still awaits,
        the hall of fame's test (and confirmation) when nothing is solved, and a
        confirmation of the unsolved run's chosen genome, so that every run reports a
        mean on episodes that played no part in choosing it."""
        v = self.validation
        if self.ref is not None:
            self._wait(*self.job, ref=self.ref)
            self.ref = None
        if v.awaiting is not None:
            self._wait("retest", v.awaiting.cand)
        if not v.solved and hof.params is not None:
            hc = Candidate(np.array(hof.params), float(hof.fitness), int(hof.island),
                           int(hof.generation), hof.obs_stats,
                           found_at=found_at(int(hof.island), int(hof.generation)))
            if v.untested(hc):
                self._wait("test", hc, stop_early=False)
                if v.awaiting is not None:
                    self._wait("retest", hc)
        chosen = v.solution()
        if chosen is not None and chosen.retest is None and v.retest_episodes > 0:
            self._wait("retest", chosen.cand, stop_early=False)

    def _wait(self, kind: str, cand: Candidate, stop_early: bool = True, ref=None) -> None:
        """Run (or wait for ``ref``, already running) one test at the end of the run; a
        failure goes into the summary's errors."""
        try:
            ref = self._submit(kind, cand, stop_early) if ref is None else ref
            self.record(kind, cand, self.rt.get(ref, timeout=600), final=True)
        except (CallLost, CallFailed, TimeoutError) as e:
            role = "confirmation test" if kind == "retest" else "test"
            where = (f"final {role} of island {cand.island}'s generation-{cand.generation} "
                     f"{cand.kind}")
            log.warning("%s: %s", where, e)
            self.errors.append({"where": where, "message": str(e)})
            if kind == "retest" and self.validation.awaiting is not None:
                self.validation.awaiting = None  # not solved: its confirmation never ran
