"""The training reward shift (``--reward-shift S``, ARS's removal of the survival bonus)
without Ray: training fitness is the return less S per step; re-evaluations of candidates
see the task's own returns, and so does the candidate threshold.
CartPole through the Gymnasium backend (tests/island_core.py), episodes of at most 100
steps."""

from __future__ import annotations

import numpy as np
import pytest
from island_core import island, island_cfg

from islands.config import ConfigError, parse_args, resolve
from islands.envdefaults import MUJOCO
from islands.island.hooks import Elite
from islands.island.reeval import Reevaluation
from islands.planning import plan_islands
from islands.seeds import reeval_seed


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
    own = plain.reevaluate(X[:2], 2, seed=reeval_seed(0, 0, 0), shifted=False).mean(axis=1)
    assert np.allclose(Reevaluation.measure(shifted, X[:2], 2)[0], own)


def test_candidates_are_offered_on_the_task_s_own_returns():
    cfg = resolve(parse_args(["--env", "Hopper-v4", "--reward-shift", "1"]))
    target = MUJOCO["Hopper"]["target"]  # ARS's threshold, from the env table
    assert cfg.target == target and plan_islands(cfg, [2.0])[0].run.candidate_threshold == target
    # a CartPole island with target 50, its training fitness shifted by 0.5 per step
    core = island(island_cfg(reward_shift=0.5, target=50.0, confirm_episodes=0))
    X = core.strategy.ask()
    gen = core._evaluate(X)
    assert np.allclose(gen.returns - gen.fitness,
                       0.5 * np.asarray(gen.result.lengths).reshape(len(X), -1).mean(1))
    elite = Elite(2, core.dim)  # keeps the best by shifted fitness, with their returns
    elite.add(gen.X, gen.fitness, gen.returns)
    best = np.argsort(-gen.fitness, kind="stable")[:2]
    assert np.array_equal(elite.r, gen.returns[best])
    # a sample whose shifted fitness is below the target but whose return reaches it is
    # offered at its return; one whose return falls short is not
    elite.x, elite.f, elite.r = X[:1], np.array([40.0]), np.array([80.0])
    assert [o.fitness for o in Reevaluation(0).offers(core, elite)] == [80.0, 80.0]
    elite.r = np.array([45.0])
    assert Reevaluation(0).offers(core, elite) == []


@pytest.mark.parametrize("argv, message", [
    (["--reward-shift", "-1"], "--reward-shift must be non-negative, got -1"),
])
def test_bad_shifts_get_one_line(argv, message):
    with pytest.raises(ConfigError, match=message):
        resolve(parse_args(argv))
