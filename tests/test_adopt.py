"""``--migrant-rule adopt`` without Ray: a strategy moves its center to an adopted genome and
samples around it next; an island adopts the best immigrant only when it beats the best of
its latest generation, counts it, and keeps what it compares against through a checkpoint."""

from __future__ import annotations

import numpy as np
import pytest
from island_core import island, island_cfg

from islands import strategies
from islands.messages import Emigrants
from islands.persistence.checkpointing import CheckpointSpec

MOVABLE = ("cmaes", "sep-cmaes", "openai-es", "ars")


@pytest.mark.parametrize("name", MOVABLE)
def test_an_adopted_genome_becomes_the_center_and_the_next_samples_surround_it(name):
    s = strategies.make(name, 6, popsize=200, sigma=0.01, seed=3)
    s.tell(-np.square(s.ask()).sum(axis=1))
    x = np.full(6, 5.0)
    s.adopt(x, 10.0)
    assert np.allclose(s.center, x)
    X = s.ask()
    assert np.abs(X.mean(axis=0) - x).max() < 0.01  # sigma 0.01 around the new center
    assert s.best[1] == 10.0 and np.array_equal(s.best[0], x)


def test_a_strategy_without_a_movable_center_takes_it_as_a_migrant():
    s = strategies.make("ga", 4, popsize=8, sigma=0.1, seed=0)
    s.tell(np.zeros(8) if s.ask() is not None else None)
    s.adopt(np.ones(4), 3.0)
    assert s.best[1] == 3.0
    with pytest.raises(ValueError, match="an adopted center must be 4 finite numbers"):
        s.adopt(np.ones(5), 1.0)


def adopting(tmp_path):
    cfg = island_cfg(migrant_rule="adopt")
    ck = str(tmp_path / "ck")
    return cfg, ck, island(cfg, CheckpointSpec(ck, interval=1))


def test_an_island_adopts_only_an_immigrant_that_beats_its_latest_generation(tmp_path):
    cfg, ck, a = adopting(tmp_path)
    try:
        a.evolve(1)
        latest = a.evolve(1).report.fitness_max
        own = a.adoption.reference
        assert own == latest  # the latest generation's best
        center = a.strategy.center
        worse = Emigrants(np.full((1, a.dim), 0.3), np.array([own - 1.0]), source=1)
        a.accept([worse])
        assert np.array_equal(a.strategy.center, center) and a.counters.adopted == 0
        better = Emigrants(np.stack([np.full(a.dim, 0.2), np.full(a.dim, 0.1)]),
                           np.array([own + 1.0, own + 5.0]), source=1)
        a.accept([better])
        assert np.allclose(a.strategy.center, 0.1)  # the batch's best, not its first
        assert a.counters.adopted == 1 and a.adoption.reference == own + 5.0
        a.checkpoint()
        b = island(cfg, CheckpointSpec(ck, load=True))
        try:
            assert b.adoption.reference == own + 5.0 and b.counters.adopted == 1
            assert np.allclose(b.strategy.center, 0.1)
        finally:
            b.close()
    finally:
        a.close()


def test_the_default_rule_injects_and_never_moves_the_center():
    core = island(island_cfg())
    try:
        core.evolve(1)
        center = core.strategy.center
        core.accept([Emigrants(np.full((1, core.dim), 0.1), np.array([1e9]), source=1)])
        assert core.adoption is None and core.counters.adopted == 0
        assert np.array_equal(core.strategy.center, center)
    finally:
        core.close()
