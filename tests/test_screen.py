"""Immigrant screening (islands.island.screen) without Ray: a receiving island re-evaluates
migrants and its own center on fresh episodes and injects only the migrants that beat the
center there. CartPole through the Gymnasium backend (tests/island_core.py), CMA-ES, popsize 8,
episodes of at most 100 steps."""

from __future__ import annotations

import numpy as np
import pytest
from island_core import island, island_cfg

from islands.config import ConfigError, parse_args, resolve
from islands.messages import Emigrants


def trained(generations: int = 12, **kw):
    core = island(island_cfg(**kw))
    core.evolve(generations)
    return core


def lucky_migrant(dim: int) -> Emigrants:
    """All-zero weights (always action 0: ~9 steps of CartPole), claiming a full 100 steps."""
    return Emigrants(np.zeros((1, dim)), np.array([100.0]), source=7, generation=3)


def test_a_lucky_migrant_is_screened_out_by_the_receivers_episodes():
    core = trained(migrant_episodes=3)
    episodes0 = core.counters.episodes
    assert core.accept([lucky_migrant(core.dim)]) == 0
    assert core.counters.screened_out == 1 and core.counters.immigrants == 0
    assert core.counters.episodes == episodes0 + 2 * 3  # the migrant and the center, 3 each
    assert core.evolve(1).report.screened_out == 1  # in the report row too
    # without screening the same claim is taken on trust
    trusting = trained()
    assert trusting.accept([lucky_migrant(trusting.dim)]) == 1
    assert trusting.counters.screened_out == 0


def test_a_migrant_better_than_the_center_goes_in_with_the_fitness_measured_here():
    donor = trained(generations=15, seed=5)
    good, _ = donor.best
    receiver = island(island_cfg(migrant_episodes=3))  # untrained: its center is x0
    assert receiver.accept([Emigrants(good[None, :], np.array([1e6]), 0, 15)]) == 1
    pending = receiver.strategy._pending_f  # CMA-ES keeps injected genomes until its ask
    assert len(pending) == 1 and pending[0] <= 100  # the measured fitness, not the claim
    assert receiver.counters.screened_out == 0


def test_migrant_episodes_come_from_the_flag_and_reject_negatives():
    cfg = resolve(parse_args(["--env", "CartPole-v1", "--migrant-episodes", "4"]))
    assert cfg.migrant_episodes == 4
    assert resolve(parse_args(["--env", "CartPole-v1"])).migrant_episodes == 0
    with pytest.raises(ConfigError, match="--migrant-episodes must be non-negative"):
        resolve(parse_args(["--env", "CartPole-v1", "--migrant-episodes", "-1"]))
