"""Every seed of a run, derived from the run seed in one place.

Training evaluations use seeds in ``[0, 2**30)``: generation g of island i evaluates with
``train_seed(run_seed, i, g)``; its re-evaluations of candidates (``reeval_seed``) use
seeds in ``[2**31, 2**31 + 2**30)`` and the second evaluation of a ranking probe
(``probe_seed``) seeds in ``[2**31 + 2**30, 2**32)`` and the screening of immigrants
(``screen_seed``) seeds in ``[2**32, 2**32 + 2**30)``, so they meet neither the training
nor the test episodes. A run's candidate tests use seeds in ``[2**30, 2**31)``
(``candidate_test_seed``) and its confirmation tests -- the re-test of a genome that passed,
on episodes nothing else meets -- seeds in ``[2**32 + 2**30, 2**32 + 2**31)``
(``retest_seed``); both start at an offset drawn from the run seed, so two runs test on
different episodes (before, every run tested its n-th candidate on the same 100 episodes, the
runs that tuned the defaults included). Each evaluation seed expands into independent episode
seeds inside the evaluator (``envs.common.episode_seeds``).
"""

from __future__ import annotations

import numpy as np

TEST_SEED_BASE = 2**30 + 12345
_SEED_SPAN = 2**30
_REEVAL_SEED_BASE = 2**31
_PROBE_SEED_BASE = 2**31 + 2**30
_SCREEN_SEED_BASE = 2**32
_RETEST_SEED_BASE = 2**32 + 2**30
# islands.evaluate's default: above every range a run uses, so a re-test of a saved solution
# meets none of its own episodes (it used to be the run's first test seed)
AUDIT_SEED = 2**33 + 12345
# A run's tests start at an offset below 2**28 drawn from its seed: n-th test at
# offset + n * _TEST_STRIDE stays inside its 2**30 span for n below ~100,000.
_TEST_OFFSET_SPAN = 2**28
# Steps of 9973 (prime) keep consecutive generations' seeds far apart, so evaluators that
# use seed, seed+1, ... for their episodes never overlap between generations.
_GENERATION_STRIDE = 9973
# Tests of successive candidates: far enough apart that their episodes never overlap.
_TEST_STRIDE = 7919


def train_seed(run_seed: int, island: int, generation: int) -> int:
    """Evaluation seed of ``generation`` on ``island``: different per island and generation
    (islands never share episodes), reproducible from the run seed, below 2**30."""
    base = int(np.random.SeedSequence([int(run_seed), int(island)]).generate_state(1)[0])
    return (base + _GENERATION_STRIDE * int(generation)) % _SEED_SPAN


def reeval_seed(run_seed: int, island: int, generation: int) -> int:
    """Seed of island ``island``'s re-evaluation of its candidates after ``generation``:
    fresh episodes, unlike the training episodes the candidates won on."""
    return _REEVAL_SEED_BASE + train_seed(run_seed, island, generation)


def probe_seed(run_seed: int, island: int, generation: int) -> int:
    """Seed of the second evaluation of a probe generation (islands.island.resampling): episodes
    neither training, nor re-evaluations of candidates, nor tests meet."""
    return _PROBE_SEED_BASE + train_seed(run_seed, island, generation)


def screen_seed(run_seed: int, island: int, generation: int) -> int:
    """Seed of island ``island``'s screening of the immigrants it receives at ``generation``
    (islands.island.screen): episodes no other evaluation meets."""
    return _SCREEN_SEED_BASE + train_seed(run_seed, island, generation)


def strategy_seed(run_seed: int, island: int) -> int:
    """Seed of island ``island``'s strategy (and its initial parameters)."""
    return int(np.random.SeedSequence([int(run_seed), int(island), 1]).generate_state(1)[0])


def _test_offset(run_seed: int, kind: int) -> int:
    state = np.random.SeedSequence([int(run_seed), 2, int(kind)]).generate_state(1)[0]
    return int(state) % _TEST_OFFSET_SPAN


def candidate_test_seed(run_seed: int, n: int) -> int:
    """Evaluation seed of run ``run_seed``'s ``n``-th candidate test (the test that selects
    a genome): per run, so the runs that chose a default never tested on another run's
    episodes."""
    return TEST_SEED_BASE + _test_offset(run_seed, 0) + _TEST_STRIDE * int(n)


def retest_seed(run_seed: int, n: int) -> int:
    """Evaluation seed of run ``run_seed``'s ``n``-th confirmation test: episodes used by no
    training, re-evaluation, screening, candidate test or other confirmation of any run
    seeded differently (their seed ranges are disjoint)."""
    return _RETEST_SEED_BASE + _test_offset(run_seed, 1) + _TEST_STRIDE * int(n)
