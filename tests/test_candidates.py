"""Candidate choice without Ray: which genome is tested next, and which is the solution."""

from __future__ import annotations

import numpy as np

from islands.candidates import Candidate, CandidateQueue, choose_solution, untested
from islands.messages import CandidateOffer, Emigrants, EvolveResult, IslandReport


def _result(i, g, fitness, center=None, confirmed=(None, None)):
    """An island's result whose best sample has ``max(fitness)``; offers as an island
    makes them once that reaches the threshold (here: always)."""
    f = np.asarray(fitness, dtype=float)
    rep = IslandReport(island=i, strategy="cmaes", generation=g)
    top = float(f.max())
    offers = [CandidateOffer("sample", np.full(2, top), top, confirmed[0])]
    if center is not None:
        offers.append(CandidateOffer("center", np.full(2, float(center)), top, confirmed[1]))
    return EvolveResult(report=rep, emigrants=Emigrants(np.tile(f[:, None], (1, 2)), f, i, g),
                        offers=offers)


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


def test_offers_whose_re_evaluation_falls_short_are_dropped_and_counted():
    q = CandidateQueue(target=10.0)
    q.offer(0, _result(0, 1, [14.0], center=-1, confirmed=(8.0, 9.5)))  # both fall short
    assert q.next() is None and q.rejected == 2
    q.offer(1, _result(1, 2, [12.0], center=-2, confirmed=(11.0, 3.0)))
    q.offer(0, _result(0, 3, [30.0], center=-3, confirmed=(10.5, 2.0)))  # ranked by 10.5
    only = q.next()
    assert (only.kind, only.island, only.confirmed, only.score) == ("sample", 1, 11.0, 11.0)
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


def test_solution_is_the_passing_candidate_else_the_best_full_test():
    a, b, c = _cand(1), _cand(2), _cand(3, "center")
    screened = {"mean": 99.0, "episodes": 10, "screened_out": True}
    tested = [(a, {"mean": 40.0}), (b, screened), (c, {"mean": 60.0})]
    best, test = choose_solution(tested, target=50.0)
    assert best is c and test["mean"] == 60.0  # passes; the screen's 99 does not count
    best, test = choose_solution(tested, target=70.0)
    assert best is c  # nothing passes: the best full test
    best, test = choose_solution([(b, screened)], target=70.0)
    assert best is None and test is None
    assert untested(b, tested) and not untested(_cand(1), tested)
