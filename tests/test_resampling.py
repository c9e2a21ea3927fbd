"""More episodes per evaluation on stagnation (islands.resampling), without Ray: the
schedule's rule and state, and a CartPole island (Gymnasium backend, episodes from seeds
alone) that doubles its episodes, resamples before it restarts, and resumes identically."""

from __future__ import annotations

import io

import numpy as np
import pytest
from island_core import island, island_cfg, row

from islands.checkpointing import CheckpointSpec
from islands.config import ConfigError, parse_args, resolve
from islands.display import Display
from islands.planning import plan_islands
from islands.resampling import EpisodeSchedule

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


# ---- an island ---------------------------------------------------------------------------
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
    assert {s.episodes_cap for s in plan_islands(cfg, [3.0])} == {8}
    assert resolve(parse_args([]), check_env=False).episodes_cap is None


def test_the_progress_lines_show_each_islands_episodes_per_evaluation():
    cfg = island_cfg(islands=2, episodes=2, episodes_cap=8)
    out = io.StringIO()
    d = Display(plan_islands(cfg, [2.0]), cfg.env, stream=out, log_interval=0)
    d.update({"island": 1, "generation": 3, "best_so_far": 1.0, "fitness_mean": 0.5,
              "evals_per_s": 2.0, "immigrants": 0, "restarts": 0, "episodes_per_eval": 4},
             {"elapsed": 1.0})
    lines = out.getvalue().splitlines()
    assert lines[1].endswith("restarts 0 ep/eval 2")  # island 0: the base, nothing reported
    assert lines[2].endswith("restarts 0 ep/eval 4")
