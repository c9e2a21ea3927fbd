"""More episodes per evaluation on stagnation (islands.island.resampling), without Ray: the
schedule's rule and state, and a CartPole island (Gymnasium backend, episodes from seeds
alone) that doubles its episodes, resamples before it restarts, and resumes identically."""

from __future__ import annotations

import io

import numpy as np
import pytest
from island_core import island, island_cfg, row

from islands.config import ConfigError, parse_args, resolve
from islands.island.core import IslandCore
from islands.island.resampling import (
    MIN_AGREEMENT,
    PROBE_WINDOW,
    EpisodeSchedule,
    rank_agreement,
)
from islands.messages import RunStatus
from islands.output.display import Display
from islands.persistence.checkpointing import CheckpointSpec
from islands.planning import plan_islands

PROBE_EVERY = 10  # --probe-interval in these tests
FLAT = np.zeros(4)  # a generation that beats no record once the first one set them


def test_the_schedule_doubles_after_patience_flat_generations_up_to_its_cap():
    s = EpisodeSchedule(base=1, cap=5, patience=2)
    assert s.enabled and s.update(np.arange(4.0)) is None  # the first sets the records
    assert s.update(FLAT) is None
    assert s.update(FLAT) == 2  # two flat generations in a row: doubled
    assert s.update(np.arange(4.0)) is None  # records start afresh on the new fitness
    assert [s.update(FLAT), s.update(FLAT)] == [None, 4]
    s.update(np.arange(4.0))
    assert [s.update(FLAT), s.update(FLAT)] == [None, 5]  # capped, not 8
    assert [s.update(FLAT) for _ in range(5)] == [None] * 5
    assert s.episodes == 5 and s.doublings == 3


def test_a_schedule_without_a_cap_above_its_base_never_grows():
    for cap in (None, 1, 3):
        s = EpisodeSchedule(base=3, cap=cap, patience=1)
        assert not s.enabled
        assert [s.update(FLAT) for _ in range(5)] == [None] * 5 and s.episodes == 3


def test_the_schedule_state_round_trip_continues_identically():
    a = EpisodeSchedule(base=2, cap=16, patience=3)
    rng = np.random.default_rng(0)
    for _ in range(7):
        a.update(rng.standard_normal(6))
    b = EpisodeSchedule(base=2, cap=16, patience=3)
    b.load_state_dict(a.state_dict())
    gens = [rng.standard_normal(6) * 0.1 for _ in range(20)]
    assert [a.update(g) for g in gens] == [b.update(g) for g in gens]
    assert a.state_dict() == b.state_dict()


# ---- ranking probes ----------------------------------------------------------------------
def test_rank_agreement_is_spearmans_rho_and_ranks_broken_genomes_last():
    a = np.array([3.0, 1.0, 2.0, 5.0])
    assert rank_agreement(a, a * 10 + 7) == pytest.approx(1.0)
    assert rank_agreement(a, -a) == pytest.approx(-1.0)
    assert rank_agreement(a, [30.0, 10.0, 20.0, -np.inf]) == pytest.approx(-0.2)  # 5: last
    assert np.isnan(rank_agreement(a, np.ones(4)))  # a constant evaluation ranks nothing


def _probes(rho_target: float, n: int, seed: int = 0, rise: float = 0.0):
    """``n`` probe pairs (popsize 48) whose halves share a signal of variance rho and carry
    independent noise of variance 1 - rho; the k-th pair's population mean is ``rise * k``
    (the noise's own mean removed, so the level is exact)."""
    rng = np.random.default_rng(seed)
    for k in range(n):
        signal = rng.standard_normal(48) * rho_target ** 0.5
        a, b = (signal + rng.standard_normal(48) * (1 - rho_target) ** 0.5 for _ in range(2))
        shift = rise * k - (a + b).mean() / 2
        yield a + shift, b + shift


def _feed(s: EpisodeSchedule, probes) -> list:
    return [s.update(np.mean(p, axis=0), p) for p in probes]


def test_a_noisy_ranking_that_makes_no_progress_doubles_the_episodes_after_a_window():
    s = EpisodeSchedule(base=1, cap=4, patience=10**6)  # stagnation never fires here
    assert _feed(s, _probes(0.05, PROBE_WINDOW, rise=-0.1)) == [None] * (PROBE_WINDOW - 1) + [2]
    assert s.agreements == [] and "ranking probes agree" in s.why
    quiet = EpisodeSchedule(base=1, cap=4, patience=10**6)
    assert _feed(quiet, _probes(0.9, 10)) == [None] * 10  # a ranking worth its episodes
    assert len(quiet.agreements) == PROBE_WINDOW
    assert np.mean(quiet.agreements) > MIN_AGREEMENT


def test_a_noisy_ranking_that_still_makes_progress_keeps_its_episodes():
    s = EpisodeSchedule(base=1, cap=4, patience=10**6)
    assert _feed(s, _probes(0.05, 10, rise=1.0)) == [None] * 10
    assert np.mean(s.agreements) < MIN_AGREEMENT and s.levels[-1] > s.levels[0]
    assert s.episodes == 1


def test_probes_are_due_every_probe_every_generations_until_the_cap():
    s = EpisodeSchedule(base=1, cap=2, patience=10**6, probe_every=PROBE_EVERY)
    assert [g for g in range(3 * PROBE_EVERY) if s.probe_due(g)] == [
        PROBE_EVERY - 1, 2 * PROBE_EVERY - 1, 3 * PROBE_EVERY - 1]
    assert not any(EpisodeSchedule(1, None, 5, PROBE_EVERY).probe_due(g) for g in range(40))
    assert not any(EpisodeSchedule(1, 4, 5).probe_due(g) for g in range(40))  # 0: off
    _feed(s, _probes(0.0, PROBE_WINDOW, rise=-0.1))
    assert s.episodes == 2 and not any(s.probe_due(g) for g in range(3 * PROBE_EVERY))


def test_the_agreements_survive_a_state_round_trip():
    a = EpisodeSchedule(base=1, cap=8, patience=10**6)
    probes = list(_probes(0.3, 2 * PROBE_WINDOW, seed=3))
    _feed(a, probes[:2])
    b = EpisodeSchedule(base=1, cap=8, patience=10**6)
    b.load_state_dict(a.state_dict())
    assert (b.agreements, b.levels) == (a.agreements, a.levels) and len(b.levels) == 2
    assert _feed(a, probes[2:]) == _feed(b, probes[2:])


# ---- an island ---------------------------------------------------------------------------
def test_a_probe_generation_is_evaluated_twice_and_feeds_the_schedule():
    cfg = island_cfg(episodes_cap=2, restart_patience=10**6, probe_interval=PROBE_EVERY)
    a = island(cfg)
    try:
        rows = [row(a) for _ in range(PROBE_EVERY + 1)]
        per_gen = np.diff([0] + [r["episodes"] for r in rows])
        # popsize 8 x 1 episode, and twice that in the probe generation
        assert list(per_gen) == [8] * (PROBE_EVERY - 1) + [16, 8], per_gen
        assert len(a.schedule.agreements) == 1 and -1 <= a.schedule.agreements[0] <= 1
        # the report rows carry it from the probe on (metrics.parquet's rank_agreement)
        assert rows[PROBE_EVERY - 2]["rank_agreement"] is None
        assert rows[PROBE_EVERY - 1]["rank_agreement"] == a.schedule.agreements[0]
        assert rows[-1]["evals"] == 8 * (PROBE_EVERY + 1)  # a probe is one evaluation each
    finally:
        a.close()


# ---- an island: stagnation -----------------------------------------------------------------
def test_a_stagnant_island_doubles_its_episodes_then_restarts_and_resumes_identically(
        tmp_path):
    cfg = island_cfg(episodes_cap=4, restart="hof", restart_patience=1)
    ck = str(tmp_path / "ck")
    a = island(cfg, CheckpointSpec(ck, interval=1))
    try:
        rows = [row(a)]
        while rows[-1]["restarts"] == 0 and len(rows) < 60:
            rows.append(row(a))
        per_eval = [r["episodes_per_eval"] for r in rows]
        # resampling first (1 -> 2 -> 4), and only at the cap a restart
        assert per_eval[0] == 1 and per_eval[-1] == 4 and sorted(per_eval) == per_eval
        assert set(per_eval) == {1, 2, 4}, per_eval
        assert rows[-1]["restarts"] == 1 and a.restarter.restarts == 1
        first4 = per_eval.index(4)
        assert all(r["restarts"] == 0 for r in rows[:first4 + 1])
        # the episodes counted are the evaluations' (popsize 8 x 4 episodes per generation)
        rows.append(row(a))
        assert rows[-1]["episodes"] - rows[-2]["episodes"] == 8 * 4
        assert rows[-1]["episodes_per_eval"] == 4  # a restart keeps the resampling
        b = island(cfg, CheckpointSpec(ck, load=True))
        try:
            assert b.schedule.episodes == 4 and b.evaluator.episodes == 4
            for _ in range(3):
                assert row(a) == row(b)
        finally:
            b.close()
    finally:
        a.close()


def test_without_a_cap_episodes_stay_fixed_and_restarts_come_at_patience():
    a = island(island_cfg(restart="hof", restart_patience=1))
    try:
        rows = [row(a)]
        while rows[-1]["restarts"] == 0 and len(rows) < 30:
            rows.append(row(a))
        assert rows[-1]["restarts"] == 1
        assert {r["episodes_per_eval"] for r in rows} == {1}
        assert a.evaluator.episodes == 1
    finally:
        a.close()


@pytest.mark.parametrize("argv, message", [
    (["--episodes-cap", "0"], "--episodes-cap must be positive, got 0"),
    (["--episodes", "4", "--episodes-cap", "2"],
     "--episodes-cap (2) must be at least --episodes (4)"),
])
def test_bad_episode_caps_give_one_line(argv, message):
    with pytest.raises(ConfigError) as e:
        resolve(parse_args(argv), check_env=False)
    assert str(e.value) == message


def test_the_plan_carries_the_cap_to_every_island():
    cfg = resolve(parse_args(["--islands", "3", "--episodes-cap", "8"]), check_env=False)
    assert {s.run.episodes_cap for s in plan_islands(cfg, [3.0])} == {8}
    assert resolve(parse_args([]), check_env=False).episodes_cap is None


def test_the_progress_lines_show_each_islands_episodes_per_evaluation():
    cfg = island_cfg(islands=2, episodes=2, episodes_cap=8)
    out = io.StringIO()
    d = Display(plan_islands(cfg, [2.0]), cfg.env, stream=out, log_interval=0)
    d.update({"island": 1, "generation": 3, "best_so_far": 1.0, "fitness_mean": 0.5,
              "evals_per_s": 2.0, "immigrants": 0, "restarts": 0, "episodes_per_eval": 4},
             RunStatus(elapsed=1.0))
    lines = out.getvalue().splitlines()
    assert lines[1].endswith("restarts 0 ep/eval 2")  # island 0: the base, nothing reported
    assert lines[2].endswith("restarts 0 ep/eval 4")


def test_bipedalwalkers_row_resamples_by_default_and_the_run_can_say_otherwise():
    def of(*argv):
        c = resolve(parse_args(["--env", "BipedalWalker-v3", *argv]), check_env=False)
        return c.episodes_cap, c.restart_patience

    assert of() == (4, 20)
    assert of("--episodes", "8") == (8, 20)  # the table's cap never undercuts --episodes
    assert of("--episodes-cap", "1", "--restart-patience", "50") == (1, 50)  # off
    lunar = resolve(parse_args(["--env", "LunarLander-v3"]), check_env=False)
    assert (lunar.episodes_cap, lunar.restart_patience) == (None, 50)


def test_on_a_noisy_problem_the_ranking_probes_raise_the_episodes_per_evaluation():
    # islands/NoisyBandit-v0: a smooth optimum under noise (std 2) as large as the reward's
    # differences within the population, and not common to its genomes: the probes find
    # the ranking mostly luck and the population mean flat, and the episodes double
    cfg = resolve(parse_args([
        "--env", "islands/NoisyBandit-v0", "--env-module", "envs.testing", "--islands", "1",
        "--strategy", "cmaes", "--popsize", "8", "--episodes", "1", "--episodes-cap", "4",
        "--probe-interval", "2", "--restart-patience", "1000000", "--target", "none",
        "--backend", "gymnasium", "--policy", "mlp", "--hidden", "", "--obs-norm", "off"]))
    core = IslandCore(plan_islands(cfg, [2.0])[0], cfg.eval_spec(), run_seed=0)
    rows = [core.evolve(1).report for _ in range(150)]
    assert rows[0].episodes_per_eval == 1 and rows[-1].episodes_per_eval >= 2
    grew = next(r.generation for r in rows if r.episodes_per_eval > 1)
    assert grew > 2 * PROBE_WINDOW  # after a window of probes, not at once
    assert core.schedule.doublings >= 1 and "ranking probes agree" in core.schedule.why
    core.close()
