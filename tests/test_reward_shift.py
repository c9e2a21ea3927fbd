"""The training reward shift (``--reward-shift S``, ARS's removal of the survival bonus)
without Ray: training fitness is the return less S per step; confirmations of candidates
see the task's own returns; the candidate threshold drops by a full episode's shift.
CartPole through the Gymnasium backend (tests/island_core.py), episodes of at most 100
steps."""

from __future__ import annotations

import numpy as np
import pytest
from island_core import island, island_cfg

from islands.config import ConfigError, parse_args, resolve
from islands.island.confirm import Confirmation
from islands.planning import plan_islands
from islands.seeds import confirm_seed


def test_training_fitness_is_the_return_less_the_shift_per_step():
    plain, shifted = island(island_cfg()), island(island_cfg(reward_shift=0.5))
    X = plain.strategy.ask()
    a, b = plain._evaluate(X), shifted._evaluate(X)  # the same seeds: the same episodes
    steps = np.asarray(a.result.lengths, dtype=float).reshape(len(X), -1).mean(axis=1)
    assert steps.min() > 1 and np.allclose(b.fitness, a.fitness - 0.5 * steps)
    # re-evaluations: training fitness for probes and screens, own returns for candidates
    R = shifted.reevaluate(X[:2], 2, seed=7)
    raw = shifted.reevaluate(X[:2], 2, seed=7, shifted=False)
    assert np.all(R < raw)
    own = plain.reevaluate(X[:2], 2, seed=confirm_seed(0, 0, 0), shifted=False).mean(axis=1)
    assert np.allclose(Confirmation.confirm(shifted, X[:2], 2)[0], own)


def test_the_candidate_threshold_drops_by_a_full_episodes_shift():
    cfg = resolve(parse_args(["--env", "Hopper-v4", "--reward-shift", "1"]))
    assert cfg.max_episode_steps == 1000 and cfg.target == 3120
    assert plan_islands(cfg, [2.0])[0].candidate_threshold == 3120 - 1000
    plain = resolve(parse_args(["--env", "Hopper-v4"]))
    assert plain.reward_shift == 0 and plan_islands(plain, [2.0])[0].candidate_threshold == 3120


@pytest.mark.parametrize("argv, message", [
    (["--reward-shift", "-1"], "--reward-shift must be non-negative, got -1"),
    (["--env", "islands/LineWorld-v0", "--env-module", "envs.testing", "--reward-shift", "1"],
     "--reward-shift needs --max-episode-steps"),
])
def test_bad_shifts_get_one_line(argv, message):
    with pytest.raises(ConfigError, match=message):
        resolve(parse_args(argv))
