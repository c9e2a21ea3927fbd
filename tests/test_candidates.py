"""Candidate choice without Ray: which genome is tested next, and which is the solution."""

from __future__ import annotations

import numpy as np
from fakes import island_result

from islands.candidates import (
    CANDIDATE_SETS,
    Candidate,
    CandidateQueue,
    Validation,
    passes,
    stopped_early,
)
from islands.messages import CandidateOffer


def _result(i, g, fitness, center=None, reeval=(None, None)):
    """An island's result whose best sample has ``max(fitness)``; offers as an island
    makes them once that reaches the threshold (here: always)."""
    top = float(np.max(fitness))
    offers = [CandidateOffer("sample", np.full(2, top), top, reeval[0])]
    if center is not None:
        offers.append(CandidateOffer("center", np.full(2, float(center)), top, reeval[1]))
    return island_result(i, g, fitness, 2, offers=offers)


def _cand(x, kind="sample"):
    return Candidate(np.full(2, float(x)), float(x), 0, 1, None, kind)


def test_queue_keeps_the_best_per_kind_above_the_target_and_alternates_center_first():
    q = CandidateQueue(target=10.0)
    q.offer(0, _result(0, 1, [9.0], center=-1))  # below the target: nothing queued
    assert q.next() is None
    q.offer(0, _result(0, 2, [12.0], center=-2))
    q.offer(1, _result(1, 2, [11.0], center=-3))  # worse than the queued ones: ignored
    q.offer(1, _result(1, 3, [15.0]))  # no center came: only the sample improves
    assert q.full()  # a candidate of each kind waits: the run asks islands for no offers
    first, second = q.next(), q.next()
    assert not q.full()
    assert (first.kind, first.island, first.fitness, first.params[0]) == ("center", 0, 12, -2)
    assert (second.kind, second.island, second.fitness) == ("sample", 1, 15)
    assert q.next() is None
    q.offer(0, _result(0, 4, [20.0], center=-4))
    q.offer(0, _result(0, 5, [21.0], center=-5))
    # the last one tested was a sample: a center comes next, then the sample
    assert [c.kind for c in (q.next(), q.next())] == ["center", "sample"]


def test_a_center_only_queue_tests_centers_alone():
    q = CandidateQueue(target=10.0, kinds=CANDIDATE_SETS["center"])
    q.offer(0, _result(0, 2, [12.0], center=-2))
    q.offer(1, _result(1, 3, [15.0]))  # a sample alone: not queued
    assert q.full()
    c = q.next()
    assert (c.kind, c.params[0]) == ("center", -2) and q.next() is None


def test_offers_whose_re_evaluation_falls_short_are_dropped_and_counted():
    q = CandidateQueue(target=10.0)
    q.offer(0, _result(0, 1, [14.0], center=-1, reeval=(8.0, 9.5)))  # both fall short
    assert q.next() is None and q.rejected == 2
    q.offer(1, _result(1, 2, [12.0], center=-2, reeval=(11.0, 3.0)))
    q.offer(0, _result(0, 3, [30.0], center=-3, reeval=(10.5, 2.0)))  # ranked by 10.5
    only = q.next()
    assert (only.kind, only.island, only.reeval, only.score) == ("sample", 1, 11.0, 11.0)
    assert q.next() is None and q.rejected == 4


def test_a_re_evaluation_within_two_standard_errors_of_the_target_is_plausible():
    def offer(mean, se):
        return CandidateOffer("sample", np.zeros(2), 300.0, mean, 10, se)

    assert offer(190.0, 6.0).plausible(200.0)  # 190 + 12 >= 200: a test could pass
    assert not offer(180.0, 6.0).plausible(200.0)  # 192 < 200: a noise winner
    assert offer(200.0, 0.0).plausible(200.0)
    assert CandidateOffer("center", np.zeros(2), 200.0).plausible(200.0)  # training only
    assert not CandidateOffer("center", np.zeros(2), 199.0).plausible(200.0)


def test_no_target_queues_nothing():
    q = CandidateQueue(target=None)
    q.offer(0, _result(0, 1, [1e9], center=0))
    assert q.next() is None


def _validation(tested, target, retest_episodes=0):
    v = Validation(target, retest_episodes)
    for cand, res in tested:
        v.record("test", cand, res)
    return v


def test_solution_is_the_passing_candidate_else_the_best_full_test():
    a, b, c = _cand(1), _cand(2), _cand(3, "center")
    cut = {"mean": 99.0, "episodes": 10, "stopped_early": True}
    tested = [(a, {"mean": 40.0}), (b, cut), (c, {"mean": 60.0})]
    best = _validation(tested, target=50.0).solution()
    assert best.cand is c and best.test["mean"] == 60.0  # passes; one stopped early: not counted
    v = _validation(tested, target=70.0)
    assert v.solution().cand is c and not v.solved  # nothing passes: the best full test
    assert _validation([(b, cut)], target=70.0).solution() is None
    assert v.untested(b) and not v.untested(_cand(1))


def test_a_passing_test_is_confirmed_before_anything_else_is_tested():
    a, b = _cand(1), _cand(2)
    q = CandidateQueue(target=50.0)
    q.best["sample"] = b
    v = Validation(target=50.0, retest_episodes=100)
    v.record("test", a, {"mean": 55.0})
    assert not v.solved and v.next(q) == ("retest", a)  # the queue's b waits
    v.record("retest", a, {"mean": 49.0})  # lucky on its selecting test
    assert not v.solved and v.solution().retest["mean"] == 49.0
    assert v.next(q) == ("test", b)
    v.record("test", b, {"mean": 51.0})
    v.record("retest", b, {"mean": 52.0})
    assert v.solved and v.solution().cand is b  # the first confirmed genome, not a
    assert v.n_tests == 2 and v.n_retests == 2
    assert v.next(q) is None  # solved: nothing more to test


def test_the_end_of_run_confirmation_of_a_genome_that_failed_its_test_solves_nothing():
    # Hopper seed 1004: best test 3,119.6 against 3,120; its confirmation at the end, 3,125.5
    a = _cand(1, "center")
    v = Validation(target=3120.0, retest_episodes=100)
    v.record("test", a, {"mean": 3119.6})
    assert v.next(CandidateQueue(3120.0)) is None  # nothing awaits a confirmation
    v.record("retest", a, {"mean": 3125.5})
    assert not v.solved and not v.confirmed(v.solution())


def test_a_confirmation_stopped_early_does_not_solve():
    a = _cand(1)
    v = Validation(target=50.0, retest_episodes=100)
    v.record("test", a, {"mean": 60.0})
    v.record("retest", a, {"mean": 70.0, "episodes": 20, "stopped_early": True})
    assert not v.solved


def test_a_test_stopped_early_reads_so_under_the_key_older_runs_wrote():
    assert stopped_early({"mean": 1.0, "screened_out": True})  # summaries before the rename
    assert stopped_early({"mean": 1.0, "stopped_early": True})
    assert not stopped_early({"mean": 1.0}) and not passes({"mean": 9.0, "screened_out": True}, 5)
