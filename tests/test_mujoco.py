"""The MuJoCo locomotion rows (islands.envdefaults.MUJOCO): each builds from ``--env ID``
alone and steps through EnvPool's builds; Gymnasium's MuJoCo envs (``gymnasium[mujoco]``)
step through the Gymnasium backend. Short episodes (20 steps): building and stepping, not
learning, is what is checked here."""

from __future__ import annotations

import os

import numpy as np
import pytest

from islands.config import parse_args, resolve
from islands.envdefaults import MUJOCO, env_defaults

ROWS = [f"{task}-v4" for task in MUJOCO]
# observations and actions of the v4 tasks (Gymnasium's documentation of each task)
SHAPES = {"Swimmer-v4": (8, 2), "Hopper-v4": (11, 3), "HalfCheetah-v4": (17, 6),
          "Walker2d-v4": (17, 6), "Ant-v4": (27, 8), "Humanoid-v4": (376, 17)}


def evaluate(env_id: str, *flags: str):
    cfg = resolve(parse_args(["--env", env_id, "--max-episode-steps", "20", *flags]))
    ev = cfg.eval_spec().build(num_threads=1, device="cpu")
    try:
        rng = np.random.default_rng(0)
        X = 0.1 * rng.standard_normal((3, ev.num_params))
        return cfg, ev, ev.evaluate(X, seed=1)
    finally:
        ev.close()


@pytest.mark.parametrize("env_id", ROWS)
def test_each_mujoco_row_builds_from_its_id_alone_and_steps(env_id):
    cfg, ev, res = evaluate(env_id)
    row, dim = env_defaults(env_id), ev.num_params
    assert ev.backend == "envpool"
    assert cfg.target == row["target"] and cfg.policy == "mlp" and cfg.hidden == []
    assert cfg.obs_norm and cfg.test_max_episode_steps == 1000
    obs, act = SHAPES[env_id]
    assert dim == obs * act + act  # a linear policy: weights and biases
    assert res.returns.shape == (3, 1) and np.isfinite(res.fitness).all()
    assert (res.lengths <= 20).all() and res.env_steps > 0


def test_the_ars_thresholds_are_the_targets():
    assert {t: row["target"] for t, row in MUJOCO.items()} == {
        "Swimmer": 325, "Hopper": 3120, "HalfCheetah": 3430, "Walker2d": 4390, "Ant": 3580,
        "Humanoid": 6000}


def test_gymnasiums_mujoco_envs_run_through_the_gymnasium_backend():
    _, ev, res = evaluate("Hopper-v4", "--backend", "gymnasium")
    assert ev.backend == "gymnasium" and ev.num_params == 11 * 3 + 3
    assert np.isfinite(res.fitness).all()
    assert (res.lengths <= 20).all()


def test_the_ars_rows_build_arss_own_strategy_settings():
    """Hopper's row (ARS V2-t with the paper's Hopper settings: popsize 2N, sigma nu, lr
    alpha, top b, its survival-bonus shift) reaches the island's strategy as written in the
    env table, the one place those figures live; every ars row builds an ars that takes
    them (top within its directions: the strategy would refuse it otherwise)."""
    from islands.island.core import IslandCore
    from islands.planning import plan_islands
    from islands.strategies import make

    row = MUJOCO["Hopper"]
    cfg = resolve(parse_args(["--env", "Hopper-v4"]))
    assert cfg.reward_shift == row["reward_shift"] > 0
    spec = plan_islands(cfg, [2.0])[0]
    core = IslandCore(spec, cfg.eval_spec(), run_seed=0)
    try:
        s = core.strategy
        assert (s.name, s.popsize, s.sigma, s.hp) == (
            "ars", row["popsize"], row["sigma"], row["strategy_options"])
    finally:
        core.close()
    for task, row in MUJOCO.items():
        if row["strategy"] == "ars":
            s = make("ars", 4, popsize=row["popsize"], sigma=row["sigma"],
                              **row["strategy_options"])
            assert (s.popsize, s.sigma, s.hp) == (
                row["popsize"], row["sigma"], row["strategy_options"]), task


def test_hoppers_row_runs_one_island_unless_told_and_other_rows_one_per_cpu():
    """The env table's ``islands`` (the shape measured best for the row: Hopper's one
    island, docs/results/env-table.md#mujoco-v4) fills ``--islands`` only when unset; a row
    without one keeps one island per CPU, and the planned island gets every core."""
    from islands.planning import plan_islands

    hopper = resolve(parse_args(["--env", "Hopper-v4"]), check_env=False)
    assert hopper.islands == MUJOCO["Hopper"]["islands"] == 1
    (spec,) = plan_islands(hopper, [2.0])
    assert spec.num_cpus == 2.0
    assert resolve(parse_args(["--env", "Hopper-v4", "--islands", "3"]),
                   check_env=False).islands == 3
    cheetah = resolve(parse_args(["--env", "HalfCheetah-v4"]), check_env=False)
    assert "islands" not in MUJOCO["HalfCheetah"]
    assert cheetah.islands == max(1, os.cpu_count() or 1)
