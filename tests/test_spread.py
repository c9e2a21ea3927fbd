"""``--hp-spread``: population-based training of a strategy's fixed settings across islands
(islands/island/spread.py), without Ray. The settings spread over the islands as planned,
an island that adopts a genome takes its sender's settings perturbed by 1/1.2 or 1.2 within
the spread's range, and what an island runs with survives its checkpoint and the
coordinator's mailbox."""

from __future__ import annotations

import math

import numpy as np
import pytest
from island_core import island_cfg

from islands import strategies
from islands.config import ConfigError, parse_args, resolve
from islands.coordinator import CoordinatorCore, CoordinatorSpec
from islands.island.core import IslandCore
from islands.messages import Emigrants, EvolveResult, IslandReport
from islands.persistence.checkpointing import CheckpointSpec
from islands.planning import plan_islands, spread_factors

TUNABLE = [name for name, cls in strategies.STRATEGIES.items() if cls.TUNABLE]


def test_the_strategies_with_fixed_settings_are_the_ones_that_spread():
    assert TUNABLE == ["openai-es", "openai-es-nt", "ga", "ars", "ars-nt"]
    assert strategies.STRATEGIES["cmaes"].TUNABLE == ()  # CMA-ES adapts its own sigma


@pytest.mark.parametrize("name", TUNABLE)
def test_a_strategy_runs_on_with_the_settings_it_is_given(name):
    s = strategies.make(name, 5, popsize=8, seed=1)
    doubled = {k: 2 * v for k, v in s.hyperparameters().items()}
    s.set_hyperparameters(doubled)
    assert s.hyperparameters() == doubled
    s.tell(-np.square(s.ask()).sum(axis=1))
    # ... and a copy loaded from its state runs with them too
    t = strategies.make(name, 5, popsize=8, seed=9)
    t.load_state_dict(s.state_dict())
    assert t.hyperparameters() == doubled
    if name == "openai-es":
        assert s.adam.lr == doubled["lr"]  # the step Adam ascends with, not a copy


def test_settings_are_refused_when_unknown_not_positive_or_mid_generation():
    s = strategies.make("ars", 4, popsize=8)
    with pytest.raises(ValueError, match="ars has no tunable setting 'top'"):
        s.set_hyperparameters({"top": 2.0})
    with pytest.raises(ValueError, match="lr must be positive and finite, got -1"):
        s.set_hyperparameters({"lr": -1.0})
    s.ask()
    with pytest.raises(RuntimeError, match="between generations"):
        s.set_hyperparameters({"lr": 0.1})
    with pytest.raises(ValueError, match="cmaes has no tunable setting 'sigma'"):
        strategies.make("cmaes", 4).set_hyperparameters({"sigma": 1.0})


def test_four_islands_cover_the_spread_once_per_setting_in_different_orders():
    names = ("sigma", "lr")
    f = [spread_factors(names, i, 4, 8.0, seed=0) for i in range(4)]
    points = sorted(8.0 ** u for u in np.linspace(-1, 1, 4))  # 1/8, 1/2, 2, 8
    for k in names:
        assert np.allclose(sorted(x[k] for x in f), points)
    orders = {k: [x[k] for x in f] for k in names}
    assert orders["sigma"] != orders["lr"]  # seed 0 draws different orders
    assert f == [spread_factors(names, i, 4, 8.0, seed=0) for i in range(4)]  # seeded
    assert spread_factors(names, 0, 1, 8.0, seed=0) == {}  # one island: nothing to spread
    assert spread_factors(names, 2, 4, 1.0, seed=0) == {}


def test_the_plan_spreads_the_table_settings_and_travels_only_with_adopt():
    def plan(*flags):
        return plan_islands(resolve(parse_args(["--env", "Hopper-v4", "--islands", "4",
                                                "--hp-spread", "2", *flags]),
                                    check_env=False), [4.0])

    specs = plan()
    assert all(set(s.hp_factors) == {"sigma", "lr"} for s in specs)
    assert sorted(s.hp_factors["lr"] for s in specs) == sorted(
        2.0 ** u for u in np.linspace(-1, 1, 4))
    assert not any(s.run.hp_travel for s in specs)
    assert all(s.run.hp_travel for s in plan("--migrant-rule", "adopt"))


@pytest.mark.parametrize("argv, message", [
    (["--hp-spread", "0.5"],
     "--hp-spread must be at least 1 (each setting from 1/F to F times its value), got 0.5"),
    (["--hp-spread", "2", "--strategy", "sep-cmaes"],
     "--hp-spread has nothing to spread: sep-cmaes adapts its own step size (strategies "
     "with fixed settings: openai-es, openai-es-nt, ga, ars, ars-nt)"),
])
def test_a_spread_that_cannot_apply_is_refused(argv, message):
    with pytest.raises(ConfigError) as e:
        resolve(parse_args(["--env", "CartPole-v1", "--islands", "2", *argv]),
                check_env=False)
    assert str(e.value) == message


def spread_island(tmp_path, index=1, rule="adopt", load=False):
    """Island ``index`` of two ARS CartPole islands spread 4x, checkpointing to tmp_path
    (``load``: from its checkpoint there)."""
    cfg = island_cfg(strategy="ars", islands=2, hp_spread=4, migrant_rule=rule)
    spec = plan_islands(cfg, [2.0])[index]
    ck = CheckpointSpec(str(tmp_path / "ck"), load=True) if load else CheckpointSpec(
        str(tmp_path / "ck"), interval=1)
    return spec, IslandCore(spec, cfg.eval_spec(), run_seed=cfg.seed, checkpoint=ck)


def test_an_island_starts_spread_and_takes_an_adopted_genomes_settings_perturbed(tmp_path):
    spec, a = spread_island(tmp_path)
    plain = strategies.make("ars", a.dim).hyperparameters()
    assert a.strategy.hyperparameters() == pytest.approx(
        {k: v * spec.hp_factors[k] for k, v in plain.items()})
    a.evolve(1)
    own = a.strategy.hyperparameters()
    carried = {"sigma": 0.1, "lr": 0.05, "l2": 1.0}  # l2: not an ARS setting, left out
    worse = Emigrants(np.full((1, a.dim), 0.3), np.array([a.adoption.reference - 1]), 0,
                      hyperparameters=carried)
    a.accept([worse])
    assert a.strategy.hyperparameters() == own  # not adopted: its own settings stay
    better = Emigrants(np.full((1, a.dim), 0.3), np.array([a.adoption.reference + 1]), 0,
                       hyperparameters=carried)
    a.accept([better])
    now = a.strategy.hyperparameters()
    assert a.counters.adopted == 1 and set(now) == {"sigma", "lr"}
    for k, v in carried.items():  # perturbed either way, within [1/4, 4]x the table's
        if k in now:
            lo, hi = a.hp_limits[k]
            assert now[k] in (pytest.approx(v / 1.2), pytest.approx(min(v * 1.2, hi)))
            assert lo <= now[k] <= hi
    row = a.evolve(1).report
    assert (row.sigma, row.lr) == (now["sigma"], now["lr"])
    a.checkpoint()
    a.close()
    # a resumed island runs with the settings it had, not the ones it was planned with
    _, b = spread_island(tmp_path, load=True)
    assert b.restored_generation == 2 and b.strategy.hyperparameters() == now
    b.close()


def test_adopted_settings_walk_without_drift_and_never_leave_the_spreads_range(tmp_path):
    spec, a = spread_island(tmp_path)
    table = strategies.make("ars", a.dim).hyperparameters()
    assert a.hp_limits == {k: pytest.approx((v / 4, v * 4)) for k, v in table.items()}
    a.evolve(1)
    # a sender far outside the range: the island takes its settings clipped into it
    a.accept([Emigrants(np.full((1, a.dim), 0.3), np.array([a.adoption.reference + 1]), 0,
                        hyperparameters={k: 100 * v for k, v in table.items()})])
    assert a.strategy.hyperparameters() == pytest.approx({k: 4 * v for k, v in table.items()})
    # many adoptions, each of the island's own settings: a walk that stays in the range,
    # stepping by 1.2 either way (no drift: PBT's 0.8 / 1.2 shrank them by 2% each)
    steps = []
    for _ in range(200):
        before = a.strategy.hyperparameters()
        a.accept([Emigrants(np.full((1, a.dim), 0.3), np.array([a.adoption.reference + 1]),
                            0, hyperparameters=before)])
        after = a.strategy.hyperparameters()
        for k, (lo, hi) in a.hp_limits.items():
            assert lo * (1 - 1e-12) <= after[k] <= hi * (1 + 1e-12)
            if lo * 1.2 < before[k] < hi / 1.2:
                steps.append(math.log(after[k] / before[k]))
    assert set(np.round(np.abs(steps), 9)) == {round(math.log(1.2), 9)}
    assert abs(np.mean(steps)) < 0.05  # ~0 on average (PBT's perturbation: -0.02)
    a.checkpoint()
    a.close()
    # the range is the plan's, not the state's: a resumed island walks in the same one
    _, b = spread_island(tmp_path, load=True)
    assert b.hp_limits == a.hp_limits and b.strategy.hyperparameters() == after
    b.close()


def test_without_adopt_an_island_keeps_its_own_settings(tmp_path):
    _, a = spread_island(tmp_path, rule="inject")
    a.evolve(1)
    own = a.strategy.hyperparameters()
    a.accept([Emigrants(np.full((1, a.dim), 0.3), np.array([1e9]), 0,
                        hyperparameters={"sigma": 0.1, "lr": 0.05})])
    assert a.counters.immigrants == 1 and a.strategy.hyperparameters() == own
    a.close()


def test_the_settings_leave_with_the_emigrants_and_survive_the_coordinators_state(tmp_path):
    _, a = spread_island(tmp_path, index=0)
    result = a.evolve(1)
    a.close()
    assert result.emigrants.hyperparameters == a.strategy.hyperparameters()
    c = CoordinatorCore(CoordinatorSpec(n_islands=2, migrants=1, migration_interval=1,
                                        topology="ring"))
    c.report(0, result)
    restored = CoordinatorCore(CoordinatorSpec(n_islands=2, migrants=1, migration_interval=1,
                                               topology="ring"))
    restored.set_state(c.get_state())
    reply = restored.report(1, EvolveResult(report=IslandReport(1, "ars", 1),
                                            emigrants=Emigrants(np.zeros((0, a.dim)),
                                                                np.zeros(0), 1)))
    (batch,) = reply.immigrants
    assert batch.source == 0 and batch.hyperparameters == a.strategy.hyperparameters()
    assert all(math.isfinite(v) for v in batch.hyperparameters.values())


def test_fitness_png_shows_the_settings_panel_only_where_they_differ(tmp_path):
    from PIL import Image

    from islands.output.rundir import plot_fitness

    def rows(lr1):
        return [{"island": i, "strategy": "ars", "wall_s": float(t), "fitness_mean": t,
                 "sigma": 0.02, "lr": lr}
                for t in range(3) for i, lr in ((0, 0.01), (1, lr1))]

    plot_fitness(rows(0.02), str(tmp_path / "spread.png"))
    plot_fitness(rows(0.01), str(tmp_path / "same.png"))
    assert Image.open(tmp_path / "spread.png").size == (800, 750)  # fitness over settings
    assert Image.open(tmp_path / "same.png").size == (800, 450)  # fitness alone
