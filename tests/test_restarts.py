"""Restarts against stagnation (islands.island.restarts) without Ray: IPOP / BIPOP on a multimodal
function, the stagnation rule, restart plans, state round trips, and an island that restarts
(CartPole through the Gymnasium backend, whose episodes depend only on seeds)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from island_core import island, island_cfg, row

from islands.config import ConfigError, parse_args, resolve
from islands.island.restarts import (
    RESTART_POLICIES,
    Restarter,
    RestartSettings,
    Stagnation,
    WindowStagnation,
    restart_seed,
)
from islands.messages import Emigrants
from islands.persistence import plainstate
from islands.persistence.checkpointing import CheckpointSpec
from islands.planning import plan_islands
from islands.strategies import STRATEGIES, make

DIM = 10
BOX = 5.12  # Rastrigin's usual search box [-5.12, 5.12]^n
SIGMA0 = 2.0  # about a fifth of the box width, as Hansen recommends for x0 spread in a box
# The lowest local minima of Rastrigin other than the global one (value 0 at 0) lie at one
# coordinate ~ +-0.995, value ~ 0.995. Every point of a basin of attraction is at least as
# high as that basin's minimum, so a point below 0.9 lies in the global basin.
GLOBAL_BASIN = 0.9
BUDGET = 100_000  # evaluations per seed
SEEDS = range(8)
PATIENCE = 10  # a run stuck in a local Rastrigin basin stops improving within ~10 generations


def rastrigin(X) -> np.ndarray:
    X = np.asarray(X)
    return 10 * X.shape[-1] + np.sum(X**2 - 10 * np.cos(2 * np.pi * X), axis=-1)


def draw_in_box(rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(-BOX, BOX, DIM)


def rastrigin_run(policy: str, seed: int) -> tuple[float, int]:
    """CMA-ES under ``policy`` on 10-D Rastrigin (fitness = -rastrigin, maximized) until the
    global basin is reached or BUDGET evaluations are spent; (best value, evaluations)."""
    s = make("cmaes", DIM, sigma=SIGMA0, seed=seed, x0=draw_in_box(np.random.default_rng(seed)))
    r = Restarter(RestartSettings(policy, patience=PATIENCE), base_popsize=s.popsize,
                  sigma0=SIGMA0, seed=seed)
    evals, best = 0, math.inf
    while evals < BUDGET and best >= GLOBAL_BASIN:
        X = s.ask()
        v = rastrigin(X)
        s.tell(-v)
        evals, best = evals + len(v), min(best, float(v.min()))
        if policy == "none" and s.stop_reason():
            break  # converged without restarts: it stays in its basin (saves test time)
        reason = r.check(-v, s)
        if reason:
            p = r.plan(reason, s.best[0], draw_in_box)
            s = make("cmaes", DIM, popsize=p.popsize, sigma=p.sigma, seed=p.seed, x0=p.x0)
    return best, evals


def test_ipop_and_bipop_reach_rastrigins_global_basin_where_no_restarts_does_not():
    found = {p: [b for b, _ in (rastrigin_run(p, seed) for seed in SEEDS)]
             for p in ("none", "ipop", "bipop")}
    hits = {p: sum(b < GLOBAL_BASIN for b in v) for p, v in found.items()}
    # measured (8 seeds, 100K evaluations): ipop 8, bipop 7, none 0 (it ends at 10-23)
    assert hits["ipop"] >= 6 and hits["bipop"] >= 6, (hits, found)
    assert hits["none"] <= 1, (hits, found)


# ---- when to restart ---------------------------------------------------------------------
def test_stagnation_fires_after_exactly_patience_flat_generations():
    g = 4
    st = Stagnation(g)
    assert not st.update([1.0, 2.0, 3.0])  # the first generation improves on -inf
    assert [st.update([1.0, 2.0, 3.0]) for _ in range(g)] == [False] * (g - 1) + [True]
    st.reset()
    st.update([0.0, 5.0, 9.0])
    for flat in ([0.0, 5.0, 9.0], [0.0, 6.0, 9.0], [0.0, 6.0, 9.5]):  # flat, median, best
        st.update(flat)
    assert st.flat == 0  # a better median or a better best restarts the count
    assert [st.update([9.0, 0.0, 0.0]) for _ in range(g)] == [False] * (g - 1) + [True]


def noisy_generations(slope: float, gens: int, seed: int = 0) -> list[np.ndarray]:
    """Generations of 48 noisy fitness values around a mean that moves by ``slope`` per
    generation (noise SD 50: LunarLander's 3-episode returns are about that noisy)."""
    rng = np.random.default_rng(seed)
    return [slope * t + rng.normal(0.0, 50.0, 48) for t in range(gens)]


def first_alarm(test, generations) -> int | None:
    return next((t for t, f in enumerate(generations, 1) if test.update(f)), None)


def test_window_stagnation_lets_a_noisy_climber_go_on_where_records_call_it_stuck():
    seeds, g = range(20), 20
    climbing = [noisy_generations(slope=0.5, gens=6 * g, seed=s) for s in seeds]
    # measured: the record test fires in 9 of these 20 climbing runs (a lucky generation's
    # record stays unbeaten for 20 generations), the window test in none
    assert sum(first_alarm(Stagnation(g), c) is not None for c in climbing) >= 5
    assert all(first_alarm(WindowStagnation(g), c) is None for c in climbing)
    # a flat (stuck) island is stagnant soon after its two windows are full (40-70 here)
    stuck = [first_alarm(WindowStagnation(g), noisy_generations(0.0, 6 * g, s)) for s in seeds]
    assert all(a is not None and 2 * g <= a <= 5 * g for a in stuck), stuck


def test_window_stagnation_needs_two_full_windows_and_starts_afresh_on_reset():
    w = WindowStagnation(3)
    assert [w.update(np.ones(4)) for _ in range(6)] == [False] * 5 + [True]
    w.reset()
    assert not any(w.update(np.ones(4)) for _ in range(5))
    assert w.state_dict() == {"medians": [1.0] * 5, "bests": [1.0] * 5}
    w.load_state_dict({"best": 3.0, "median": 2.0, "flat": 1})  # a record-test checkpoint
    assert w.state_dict() == {"medians": [], "bests": []}


@pytest.mark.parametrize("name", ["openai-es", "ga"])  # fixed step sizes: no stop reason
def test_restarter_says_stagnation_after_two_flat_windows(name):
    s = make(name, 3, popsize=4, seed=0)
    r = Restarter(RestartSettings("ipop", patience=3), base_popsize=4, sigma0=0.02, seed=0)
    says = []
    for _ in range(7):
        s.ask()
        s.tell(np.ones(4))  # flat fitness: each window of 3 is no better than the one before
        says.append(r.check(np.ones(4), s))
    why = "no improvement in 3 generations over the 3 before"
    assert says == [None] * 5 + [why, why]
    assert Restarter(RestartSettings("none", 1), base_popsize=4, sigma0=1,
                     seed=0).check(np.ones(4), s) is None


def test_cmaes_stop_reason_is_pycmas_convergence_not_its_budgets():
    for name in STRATEGIES:  # nothing told yet (a small noise table for openai-es-nt)
        opts = {"table_size": 1000} if name == "openai-es-nt" else {}
        assert make(name, 3, popsize=4, seed=0, **opts).stop_reason() is None
    s = make("cmaes", 3, sigma=1.0, seed=0, maxiter=5)  # a budget pycma would stop on
    reasons = []
    for _ in range(400):
        X = s.ask()
        s.tell(-np.sum(X**2, axis=1))
        reasons.append(s.stop_reason())
        if reasons[-1]:
            break
    assert s.generation > 5 and reasons[:5] == [None] * 5  # maxiter left out
    assert reasons[-1].startswith("pycma ") and "tol" in reasons[-1], reasons[-1]
    assert s.sigma < 1e-3  # it stopped because it converged


# ---- how to restart ----------------------------------------------------------------------
def _restarter(policy: str, base: int = 10, **kw) -> Restarter:
    return Restarter(RestartSettings(policy, patience=5, **kw), base_popsize=base, sigma0=2.0,
                     seed=123)


def test_ipop_doubles_the_popsize_from_fresh_seeded_starts_up_to_its_cap():
    r = _restarter("ipop", max_popsize_factor=8)
    plans = [r.plan("test", None, draw_in_box) for _ in range(5)]
    assert [p.popsize for p in plans] == [20, 40, 80, 80, 80]
    assert {p.sigma for p in plans} == {2.0} and {p.regime for p in plans} == {"large"}
    assert [p.seed for p in plans] == [restart_seed(123, k) for k in range(1, 6)]
    assert len({p.seed for p in plans}) == 5 and r.restarts == 5
    # the start is drawn from the restart's seed, like an island's first start
    np.testing.assert_array_equal(plans[0].x0,
                                  draw_in_box(np.random.default_rng(plans[0].seed)))
    assert not np.array_equal(plans[0].x0, plans[1].x0)


def test_bipop_alternates_regimes_by_the_evaluations_each_used():
    r = _restarter("bipop", base=12)
    r.check(np.arange(12.0), make("ga", 2, popsize=12))  # 12 evaluations of the first run
    first = r.plan("test", None, draw_in_box)
    assert (first.regime, first.popsize, first.sigma) == ("large", 24, 2.0)
    assert r.budget == {"small": 12, "large": 0}
    r.budget["large"] = 10_000  # as if the large run had used that many
    for _ in range(20):
        p = r.plan("test", None, draw_in_box)
        assert p.regime == "small" and p.popsize % 2 == 0  # an even base stays even
        assert p.popsize == 12 and 2.0 / 100 <= p.sigma <= 2.0  # large / 2 = 12 = base
    r.budget["small"] = 20_000
    p = r.plan("test", None, draw_in_box)
    assert (p.regime, p.popsize) == ("large", 48)
    r.budget["large"] = 10**6
    sizes = {r.plan("test", None, draw_in_box).popsize for _ in range(40)}
    assert min(sizes) >= 12 and max(sizes) <= 24 and len(sizes) > 3  # up to 48/2


def test_a_bipop_small_run_ends_at_half_the_large_budget():
    s = make("ga", 2, popsize=4)
    r = _restarter("bipop", base=4)
    r.regime, r.budget = "small", {"small": 0, "large": 20}
    says = []
    for k in range(3):
        says.append(r.check(np.array([1.0, 2.0, 3.0, 4.0 + k]), s))  # always improving
    assert says == [None, None, "small-population budget spent"]  # 12 >= 20 / 2


def test_hof_restarts_around_the_best_genome_with_a_fresh_step_size():
    r = _restarter("hof")
    best = np.full(DIM, 0.5)
    p = r.plan("test", best, draw_in_box)
    assert (p.regime, p.popsize, p.sigma) == ("hof", 10, 2.0)
    np.testing.assert_array_equal(p.x0, best)
    assert r.plan("test", None, draw_in_box).x0.shape == (DIM,)  # none known: a fresh start


def test_settings_refuse_unknown_policies():
    assert RESTART_POLICIES == ("none", "ipop", "bipop", "hof")
    with pytest.raises(ValueError, match="unknown restart policy 'ipopp'"):
        RestartSettings("ipopp")
    with pytest.raises(ValueError, match="positive"):
        RestartSettings("ipop", patience=0)
    with pytest.raises(RuntimeError):
        _restarter("none").plan("test", None, draw_in_box)


def test_restarter_state_round_trip_continues_identically():
    def drive(s, r, gens, log):
        for _ in range(gens):
            X = s.ask()
            log.append(X)
            f = -rastrigin(X)
            s.tell(f)
            reason = r.check(f, s)
            if reason:
                p = r.plan(reason, s.best[0], draw_in_box)
                s = make("cmaes", DIM, popsize=p.popsize, sigma=p.sigma, seed=p.seed, x0=p.x0)
        return s

    s = make("cmaes", DIM, sigma=SIGMA0, seed=5, x0=draw_in_box(np.random.default_rng(5)))
    r = Restarter(RestartSettings("bipop", patience=3), base_popsize=s.popsize,
                  sigma0=SIGMA0, seed=5)
    s = drive(s, r, 60, [])
    assert r.restarts >= 1
    saved = plainstate.from_bytes(plainstate.to_bytes(
        {"restarter": r.state_dict(), "strategy": s.state_dict(),
         "build": {"popsize": s.popsize, "sigma": s.sigma0, "seed": s.seed}}))
    r2 = Restarter(RestartSettings("bipop", patience=3), base_popsize=10, sigma0=SIGMA0, seed=5)
    r2.load_state_dict(saved["restarter"])
    s2 = make("cmaes", DIM, **saved["build"])  # the restarted run's popsize, sigma, seed
    s2.load_state_dict(saved["strategy"])
    log_a, log_b = [], []
    drive(s, r, 120, log_a)
    drive(s2, r2, 120, log_b)
    assert r2.state_dict() == r.state_dict() and r.restarts >= 3
    assert all(np.array_equal(a, b) for a, b in zip(log_a, log_b, strict=True))


# ---- an island that restarts -------------------------------------------------------------
def test_an_island_restart_keeps_its_generation_and_best_and_resumes_identically(tmp_path):
    cfg = island_cfg(restart="ipop", restart_patience=1)
    ck = str(tmp_path / "ck")
    a = island(cfg, CheckpointSpec(ck, interval=1))
    try:
        rows = [row(a)]
        while rows[-1]["restarts"] == 0 and len(rows) < 30:
            rows.append(row(a))
        assert rows[-1]["restarts"] == 1, rows[-1]
        assert a.strategy.popsize == 16 and a.strategy.generation == 0  # IPOP: doubled
        rows += [row(a), row(a)]
        assert rows[-2]["evals"] - rows[-3]["evals"] == 16
        gens = [r["generation"] for r in rows]
        assert gens == list(range(1, len(rows) + 1))  # one island count across the restart
        best = [r["best_so_far"] for r in rows]
        assert best == sorted(best)  # never decreases
        # resume from the checkpoint written after the last call
        b = island(cfg, CheckpointSpec(ck, load=True))
        try:
            assert b.restored_generation == a.generation
            assert b.strategy.popsize == a.strategy.popsize >= 16
            assert b.restarter.restarts == a.restarter.restarts >= 1
            for _ in range(3):
                assert row(a) == row(b)
            np.testing.assert_array_equal(a.strategy.center, b.strategy.center)
        finally:
            b.close()
    finally:
        a.close()


def test_a_hof_restart_centers_the_island_on_its_best_genome():
    a = island(island_cfg(restart="hof", restart_patience=1))
    try:
        for _ in range(30):
            if a.restarter.restarts:
                break
            best_x, best_f = a.best
            a.evolve(1)
        assert a.restarter.restarts == 1 and a.strategy.popsize == 8
        x, f = a.best
        np.testing.assert_array_equal(a.strategy.center, x)  # CMA-ES's mean is its x0
        assert f >= best_f
    finally:
        a.close()


def test_a_fresh_ipop_start_keeps_migrants_out_for_patience_generations():
    a = island(island_cfg(restart="ipop", restart_patience=2))
    try:
        migrant = Emigrants(np.full((1, a.dim), 0.3), np.array([1e6]), source=1)
        assert a.evolve(1, [migrant]).report.immigrants_new == 1  # the first run takes them
        while not a.restarter.restarts:
            a.evolve(1)
        held = a.counters.held_off
        # the fresh run's first two generations: kept out, and the run is its own
        for _ in range(2):
            if a.strategy.generation >= 2:
                break
            assert a.evolve(1, [migrant]).report.immigrants_new == 0
        assert a.counters.held_off > held
        while a.strategy.generation < 2:
            a.evolve(1)
        assert a.evolve(1, [migrant]).report.immigrants_new == 1  # then it competes
    finally:
        a.close()


def test_isolation_is_for_fresh_ipop_and_bipop_starts_only():
    for policy, isolated in (("ipop", True), ("bipop", True), ("hof", False)):
        r = _restarter(policy)
        assert not r.isolated(0)  # the first run is not a restart
        r.plan("test", np.zeros(3), lambda rng: rng.standard_normal(3))
        assert r.isolated(0) is isolated and not r.isolated(5)  # patience 5


# ---- configuration -------------------------------------------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["--restart", "ipopp"], "--restart: unknown value 'ipopp'; choose one of none, ipop, "
     "bipop, hof"),
    (["--restart-patience", "0"], "--restart-patience must be positive, got 0"),
    (["--restart-patience", "x"], "--restart-patience: expected an integer, got 'x'"),
    (["--island-specs", '[{"restart": "bi-pop"}]'], "island_specs[0].restart must be one of "
     "none, ipop, bipop, hof, got 'bi-pop'"),
])
def test_bad_restart_values_give_one_line(argv, message):
    with pytest.raises(ConfigError) as e:
        resolve(parse_args(argv), check_env=False)
    assert str(e.value) == message


def test_the_plan_carries_restart_settings_with_per_island_overrides():
    cfg = resolve(parse_args(["--restart", "bipop", "--restart-patience", "7", "--island-specs",
                              '[{"restart": "hof"}, {}, {"restart": "none"}]']),
                  check_env=False)
    plan = plan_islands(cfg, [3.0])
    assert [s.restart for s in plan] == ["hof", "bipop", "none"]
    assert {s.run.restart_patience for s in plan} == {7}
    assert resolve(parse_args([]), check_env=False).restart == "none"
