"""Solved means confirmed: a genome's passing test is re-tested on fresh episodes, and test
episodes follow the run seed (islands.candidates.Validation, islands.seeds)."""

from __future__ import annotations

import numpy as np
from conftest import virtual_options

from envs.spec import EvalSpec
from islands import seeds
from islands.candidates import Candidate, Validation
from islands.config import from_dict, resolve
from islands.evaluate import sequential_test

# A genome whose true mean (-f(x) = -1) is below the target 5, under noise 10 per episode:
# a 1-episode test passes by luck about a third of the time, 100 fresh episodes never do.
NOISY = EvalSpec(env_id="sphere:2", backend="synthetic", policy="genome", episodes=1,
                 env_kwargs={"noise": 10.0})
X = np.array([1.0, 0.0])
TARGET = 5.0


def test_test_seeds_follow_the_run_seed_in_ranges_nothing_else_uses():
    for n in (0, 1, 50):
        a, b = seeds.candidate_test_seed(0, n), seeds.candidate_test_seed(1, n)
        assert a != b and 2**30 <= min(a, b) and max(a, b) + 10 < 2**31
        r = seeds.retest_seed(0, n)
        assert 2**32 + 2**30 <= r < 2**32 + 2**31 and r != seeds.retest_seed(1, n)
    assert seeds.candidate_test_seed(0, 1) - seeds.candidate_test_seed(0, 0) > 100
    trains = [seeds.train_seed(s, i, g) for s in range(3) for i in range(2) for g in range(9)]
    assert max(trains) < 2**30 and seeds.AUDIT_SEED > 2**32 + 2**31


def test_a_genome_lucky_on_its_test_fails_its_confirmation_and_the_run_is_unsolved():
    lucky = []
    for run_seed in range(40):
        test = sequential_test(NOISY, X, None, seeds.candidate_test_seed(run_seed, 0), TARGET)
        if test["mean"] < TARGET:
            continue
        v = Validation(TARGET, retest_episodes=100)
        cand = Candidate(X, test["mean"], 0, 1, None)
        v.record("test", cand, test)
        assert v.next(None) == ("retest", cand)
        retest = sequential_test(NOISY.replace(episodes=100), X, None,
                               seeds.retest_seed(run_seed, 0), TARGET)
        v.record("retest", cand, retest)
        lucky.append(run_seed)
        assert not v.solved and v.solution().retest is retest
        assert retest["mean"] < TARGET and retest["ci95"][1] < TARGET + 10
    assert len(lucky) >= 3  # the noise made some selecting tests pass


def test_a_run_whose_tests_pass_by_luck_stays_unsolved(tmp_path):
    from islands.runtime.virtual_driver import run_virtual

    tests, passed = [], []
    for seed in (1, 2):  # two runs: their tests meet different episodes
        # on the virtual clock: the tester sees the candidates in an order no machine's
        # load changes (on Ray a loaded machine let the islands outrun it)
        cfg = resolve(from_dict(dict(
            env="sphere:2", env_kwargs={"noise": 30.0}, islands=1, popsize=8,
            seed=seed, generations=200, target=TARGET, test_episodes=1, retest_episodes=2000,
            confirm_episodes=0, **virtual_options(tmp_path, "sphere:2"))))
        s = run_virtual(cfg, out=str(tmp_path / f"run{seed}"), display=False)
        ok = [t for t in s["tests"] if t["role"] == "selecting" and t["passed"]]
        retests = [t for t in s["tests"] if t["role"] == "confirmation"]
        assert not s["solved"] and not s["confirmed"], s
        # a 2,000-episode confirmation of a genome whose true mean is <= 0 lies within ~1
        assert all(t["mean"] < TARGET and t["episodes"] <= 2000 for t in retests)
        assert len(retests) >= len(ok)  # every passing test was confirmed (and failed)
        assert s["confirmation"]["mean"] < TARGET and s["selecting_test"] is not None
        tests.append({t["seed"] for t in s["tests"]})
        passed += ok
    # a 1-episode test under noise 30 passes about 4 times in 10: some did
    assert passed
    assert not tests[0] & tests[1]


def test_the_confirmation_is_as_long_as_the_test_unless_set():
    assert resolve(from_dict(dict(env="CartPole-v1", test_episodes=10))).retest_episodes == 10
    cfg = resolve(from_dict(dict(env="CartPole-v1", test_episodes=10, retest_episodes=0)))
    assert cfg.retest_episodes == 0 and Validation(1.0, cfg.retest_episodes).retest_episodes == 0
    assert resolve(from_dict(dict(env="CartPole-v1", retest_episodes=300))).retest_spec(
    ).episodes == 300
