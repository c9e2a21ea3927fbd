"""Every seed of a run, derived from the run seed in one place.

Training evaluations use seeds in ``[0, 2**30)``: generation g of island i evaluates with
``train_seed(run_seed, i, g)``; its re-evaluations of candidates (``confirm_seed``) use
seeds in ``[2**31, 2**31 + 2**30)`` and the second evaluation of a ranking probe
(``probe_seed``) seeds in ``[2**31 + 2**30, 2**32)`` and the screening of immigrants
(``screen_seed``) seeds in ``[2**32, 2**32 + 2**30)``, so they meet neither the training
nor the test episodes. Tests use seeds from ``TEST_SEED_BASE`` (>= 2**30) up, so a
test episode never reuses a training episode seed. Each evaluation seed expands into
independent episode seeds inside the evaluator (``envs.common.episode_seeds``).
"""

from __future__ import annotations

import numpy as np

TEST_SEED_BASE = 2**30 + 12345
_SEED_SPAN = 2**30
_CONFIRM_SEED_BASE = 2**31
_PROBE_SEED_BASE = 2**31 + 2**30
_SCREEN_SEED_BASE = 2**32
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


def confirm_seed(run_seed: int, island: int, generation: int) -> int:
    """Seed of island ``island``'s re-evaluation of its candidates after ``generation``:
    fresh episodes, unlike the training episodes the candidates won on."""
    return _CONFIRM_SEED_BASE + train_seed(run_seed, island, generation)


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


def candidate_test_seed(n: int) -> int:
    """Evaluation seed of the run's ``n``-th candidate test."""
    return TEST_SEED_BASE + _TEST_STRIDE * int(n)
