"""Migration graphs (pure Python, no Ray)."""

from __future__ import annotations

import pytest

from islands.topology import Topology, format_edges, parse_edges


def test_ring_sends_to_the_next_island_and_wraps():
    t = Topology("ring", 4)
    assert [t.targets(i) for i in range(4)] == [[1], [2], [3], [0]]
    assert all(t.in_degree(i) == 1 for i in range(4))


def test_full_sends_to_every_other_island():
    t = Topology("full", 3)
    assert [t.targets(i) for i in range(3)] == [[1, 2], [0, 2], [0, 1]]


def test_single_island_has_no_edges():
    for kind in ("ring", "full", "random"):
        assert Topology(kind, 1).targets(0) == []


def test_random_draws_k_distinct_other_islands_afresh_each_round():
    t = Topology("random", 8, degree=3, seed=1)
    draws = [tuple(t.targets(2)) for _ in range(50)]
    for d in draws:
        assert len(d) == 3 and len(set(d)) == 3 and 2 not in d
    assert len(set(draws)) > 10  # redrawn each round, not fixed
    # Seeded: the same seed gives the same sequence of rounds.
    t2 = Topology("random", 8, degree=3, seed=1)
    assert [tuple(t2.targets(2)) for _ in range(50)] == draws


def test_random_degree_is_capped_by_the_number_of_other_islands():
    assert sorted(Topology("random", 3, degree=5).targets(0)) == [1, 2]


def test_random_state_round_trip_continues_the_same_draws():
    t = Topology("random", 6, degree=2, seed=4)
    t.targets(0)
    state = t.state_dict()
    expect = [t.targets(1) for _ in range(5)]
    t2 = Topology("random", 6, degree=2, seed=99)
    t2.load_state_dict(state)
    assert [t2.targets(1) for _ in range(5)] == expect


def test_explicit_edges_from_string_and_pairs():
    assert parse_edges("0>1, 1>2,2>0") == [(0, 1), (1, 2), (2, 0)]
    assert parse_edges([[0, 1], (2, 1)]) == [(0, 1), (2, 1)]
    t = Topology("edges", 3, edges="0>1,0>2,2>1,1>1")
    assert t.targets(0) == [1, 2] and t.targets(1) == [] and t.targets(2) == [1]
    assert t.in_degree(1) == 2
    assert format_edges(t.edges()) == "0>1,0>2,2>1"  # the self-loop is dropped


@pytest.mark.parametrize(
    "kind, kw, match",
    [
        ("star", {}, "unknown topology"),
        ("edges", {"edges": "0>5"}, "outside"),
        ("edges", {"edges": "0-1"}, "SRC>DST"),
        ("edges", {"edges": "a>1"}, "integers"),
        ("random", {"degree": 0}, "degree"),
    ],
)
def test_bad_topologies_name_the_problem(kind, kw, match):
    with pytest.raises(ValueError, match=match):
        Topology(kind, 3, **kw)
