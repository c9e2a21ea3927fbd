"""Islands, coordinator and the asynchronous driver: real envs, small sizes; the loop's
logic (migration, adoption, a slow island, mixed strategies, budgets) on a virtual clock
(runtime.virtual: the same cores and loop, an order of events no machine's load changes),
a whole run and what needs Ray itself on real Ray."""

from __future__ import annotations

import logging
import math
import os

import numpy as np
import pytest
from conftest import HANG_S, MET, last_row, stop_when
from fakes import island_result

from islands.config import from_dict, resolve
from islands.coordinator import CoordinatorCore, CoordinatorSpec
from islands.costmodel import ClusterModel, Node
from islands.island.core import IslandCore
from islands.messages import Emigrants, IslandReport
from islands.planning import (
    IslandSpec,
    ResourceError,
    check_resources,
    default_cpu_share,
    plan_islands,
    spread_factors,
)
from islands.runtime.archipelago import Archipelago
from islands.runtime.cluster import cluster_nodes
from islands.runtime.driver import run
from islands.runtime.loop import run_loop
from islands.runtime.virtual import VirtualArchipelago
from policies.obsnorm import RunningMeanStd

VIRTUAL_S_PER_STEP = 1e-4  # a virtual run's seconds per env step (this machine's: ~1.4e-5)
# Small CartPole settings shared by the Ray tests: episodes capped at 100-200 steps.
SMALL = dict(env="CartPole-v1", popsize=8, episodes=1, max_episode_steps=100, target=None,
             test_episodes=5)


def cfg_of(**kw):
    return resolve(from_dict({**SMALL, **kw}))


def run_arch(cfg, node_cpus=(2.0,), virtual=False):
    """Drive an archipelago on the session's Ray (or, ``virtual``, on a virtual clock over
    nodes of ``node_cpus``, without Ray); returns the RunResult."""
    return drive(_arch(cfg, node_cpus, virtual))


def run_until(cfg, holds, node_cpus=(2.0,), virtual=False):
    """Drive until ``holds(rows)`` is true (conftest.stop_when); the RunResult."""
    arch = _arch(cfg, node_cpus, virtual)
    return drive(arch, stop_when(arch, holds))


def _arch(cfg, node_cpus, virtual):
    plan = plan_islands(cfg, list(node_cpus))
    if not virtual:
        return Archipelago(cfg, plan)
    # the loop's logic on a virtual clock: the same island and coordinator cores, real
    # episodes, and an order of events that no machine's load can change
    nodes = tuple(Node("node", c) for c in node_cpus)
    cluster = ClusterModel(nodes=nodes, node_types={"node": len(nodes)})
    return VirtualArchipelago(cfg, plan, cluster, VIRTUAL_S_PER_STEP)


def drive(arch, on_report=None):
    """Start ``arch``, run it to its stop (``on_report`` after each report), shut it down."""
    try:
        arch.start()
        arch.wait_ready()
        return run_loop(arch, on_report=on_report)
    finally:
        arch.shutdown()


def rows_of(result, island):
    return [r for r in result.rows if r["island"] == island]


# ---- coordinator logic (no Ray) ---------------------------------------------------------
def _report(i, g, strategy="cmaes"):
    return IslandReport(island=i, strategy=strategy, generation=g)


def _result(i, g, fitness, dim=3, obs=None, stats=None):
    return island_result(i, g, fitness, dim, obs=obs, stats=stats)


def _coordinator(n, topology, **kw):
    return CoordinatorCore(CoordinatorSpec(n_islands=n, topology=topology, **kw))


def test_coordinator_migrates_best_k_every_interval_along_the_topology():
    c = _coordinator(3, "ring", migrants=2, migration_interval=3)
    assert c.report(0, _result(0, 1, [5, 9, 7])).immigrants == []  # too early
    c.report(0, _result(0, 3, [5, 9, 7]))  # emigrates its best two to island 1
    mail = c.report(1, _result(1, 1, [1])).immigrants
    assert len(mail) == 1 and mail[0].source == 0
    np.testing.assert_array_equal(mail[0].fitness, [9, 7])
    np.testing.assert_array_equal(mail[0].params[:, 0], [9, 7])
    assert c.report(1, _result(1, 2, [1])).immigrants == []  # mailbox emptied
    assert c.report(2, _result(2, 9, [1])).immigrants == []  # not a target of island 0


def test_coordinator_mailbox_keeps_the_newest_batch_per_source():
    c = _coordinator(2, "ring", migrants=1, migration_interval=1)
    c.report(0, _result(0, 1, [3]))
    c.report(0, _result(0, 2, [4]))  # the receiver has not collected the first batch
    mail = c.report(1, _result(1, 1, [0])).immigrants
    assert [b.fitness.tolist() for b in mail] == [[4.0]]


def test_coordinator_hall_of_fame_is_the_global_best_with_its_origin():
    c = _coordinator(2, "full", migrants=0)
    c.report(0, _result(0, 4, [3, 8]))
    reply = c.report(1, _result(1, 2, [6]))
    assert vars(reply.hof) == {"fitness": 8.0, "island": 0, "generation": 4}
    assert c.hall_of_fame().params[0] == 8  # island 1 did not improve it
    reply = c.report(1, _result(1, 3, [11]))
    assert reply.hof.island == 1 and c.hall_of_fame().params[0] == 11


def test_coordinator_merges_observation_deltas_exactly():
    rng = np.random.default_rng(0)
    a, b = rng.normal(1, 2, (500, 4)), rng.normal(-1, 1, (300, 4))
    c = _coordinator(2, "ring", migrants=0, obs_sync_interval=1)

    def delta(x):
        r = RunningMeanStd((4,))
        r.update(x)
        return {"count": r.count, "mean": r.mean, "m2": r.m2}

    c.report(0, _result(0, 1, [0], obs=delta(a)))
    reply = c.report(1, _result(1, 1, [0], obs=delta(b)))
    pooled = np.concatenate([a, b])
    st = reply.obs_stats
    assert st["count"] == 800
    np.testing.assert_allclose(st["mean"], pooled.mean(0))
    np.testing.assert_allclose(st["m2"] / st["count"], pooled.var(0))
    # The next push waits obs_sync_interval generations of that island.
    assert c.report(1, _result(1, 1, [0])).obs_stats is None


def test_default_cpu_share_and_resource_check():
    assert default_cpu_share(2, [2.0]) == 1.0
    assert default_cpu_share(16, [2.0]) == 0.125
    assert default_cpu_share(3, [2.0]) == 0.6666
    assert default_cpu_share(5, [2.0, 2.0]) == 0.6666  # 3 + 3 fit; 0.8 would not pack
    plan = [IslandSpec(index=i, strategy="cmaes", num_cpus=0.6666) for i in range(5)]
    check_resources(plan, [{"CPU": 2.0}, {"CPU": 2.0}])
    with pytest.raises(ResourceError, match="GPU"):
        check_resources([plan[0].replace(num_gpus=1.0)], [{"CPU": 2.0}])
    with pytest.raises(ResourceError, match="gpu_node"):
        check_resources([plan[0].replace(resources={"gpu_node": 1})], [{"CPU": 2.0}])
    with pytest.raises(ResourceError, match="CPU"):
        check_resources([plan[0].replace(num_cpus=1.5)] * 2 + [plan[0]],
                        [{"CPU": 2.0}, {"CPU": 2.0}])


# ---- one island without Ray -------------------------------------------------------------
def _core(cfg, i=0):
    plan = plan_islands(cfg, [2.0])
    return IslandCore(plan[i], cfg.eval_spec(), run_seed=cfg.seed)


def test_island_rejects_wrong_dimension_immigrants_and_carries_on(caplog):
    cfg = cfg_of(islands=1, strategy="cmaes")
    core = _core(cfg)
    try:
        good = Emigrants(np.zeros((1, core.dim)), np.array([1.0]), source=5)
        bad = Emigrants(np.zeros((2, core.dim + 3)), np.ones(2), source=7)
        with caplog.at_level(logging.WARNING, logger="islands.island"):
            out = core.evolve(2, immigrants=[bad, good])
        rep = out.report
        assert rep.generation == 2 and rep.immigrants == 1 and rep.rejected == 2
        assert "rejected 2 migrant(s) from island 7" in caplog.text
        assert out.emigrants.params.shape == (cfg.migrants, core.dim)
    finally:
        core.close()


def test_island_offers_its_best_sample_and_center_once_a_sample_reaches_the_threshold():
    cfg = cfg_of(islands=1, strategy="cmaes", confirm_episodes=0, candidates="center,sample")
    core = _core(cfg)
    try:
        core.candidate_threshold = math.inf  # no sample reaches it
        assert core.evolve(1).offers == []
        core.candidate_threshold = -math.inf  # every sample does
        out = core.evolve(1)
        sample, center = out.offers
        assert (sample.kind, center.kind) == ("sample", "center")
        np.testing.assert_array_equal(center.params, core.strategy.center)
        np.testing.assert_array_equal(sample.params, out.emigrants.params[0])
        assert sample.fitness == out.emigrants.fitness[0] and sample.reeval is None
    finally:
        core.close()


def test_a_center_only_island_offers_and_re_evaluates_its_center_alone():
    core = _core(cfg_of(islands=1, strategy="cmaes", confirm_episodes=2, candidates="center"))
    try:
        core.candidate_threshold = -math.inf
        (only,) = core.evolve(1).offers
        assert only.kind == "center" and only.reeval_episodes == 2
        assert core.counters.reevaluations == 1  # the sample was not re-evaluated
    finally:
        core.close()


def test_offers_are_re_evaluated_on_fresh_episodes_without_touching_training():
    # Same seed, with and without re-evaluation: the training (strategy state, fitness) is
    # identical -- the re-evaluation has its own evaluator and seeds --, and the
    # re-evaluation's episodes are counted.
    plain, confirming = (_core(cfg_of(islands=1, strategy="cmaes", confirm_episodes=n,
                                      max_episode_steps=200, candidates="center,sample"))
                         for n in (0, 4))
    try:
        for core in (plain, confirming):
            core.candidate_threshold = -math.inf
        a, b = plain.evolve(2), confirming.evolve(2)
        np.testing.assert_array_equal(plain.strategy.center, confirming.strategy.center)
        assert a.report.fitness_max == b.report.fitness_max and a.report.evals == b.report.evals
        assert [o.reeval_episodes for o in b.offers] == [4, 4]
        assert all(np.isfinite(o.reeval) and o.reeval_se >= 0 for o in b.offers)
        assert b.report.reevaluations == 2 and a.report.reevaluations == 0
        assert b.report.episodes == a.report.episodes + 2 * 4
        assert b.report.env_steps > a.report.env_steps
        # the run has no room for an offer: no re-evaluation, no episodes spent on one
        d = confirming.evolve(1, want_offers=False)
        assert d.offers == [] and d.report.reevaluations == 2
        assert d.report.episodes == b.report.episodes + confirming.strategy.popsize
        # fresh episodes: a CartPole policy's returns differ from episode to episode, so the
        # sample's re-evaluation is not its training fitness
        c = confirming.evolve(1).offers
        assert c[0].reeval != c[0].fitness or c[1].reeval != c[0].fitness
    finally:
        plain.close()
        confirming.close()


def test_island_state_round_trip_continues_identically():
    # Gymnasium backend: its episodes depend on the call's seed only (EnvPool's also on the
    # pool's generator history, which is not part of the island state).
    cfg = cfg_of(islands=1, strategy="cmaes", obs_norm=True, backend="gymnasium")
    a, b = _core(cfg), _core(cfg)
    try:
        a.evolve(2)
        b.set_state(a.get_state())
        ra, rb = a.evolve(1).report.row(), b.evolve(1).report.row()
        for k in ("generation", "evals", "env_steps", "fitness_max", "fitness_mean",
                  "best_so_far", "obs_count"):
            assert ra[k] == rb[k], k
    finally:
        a.close()
        b.close()


# ---- archipelagos on Ray ----------------------------------------------------------------
def test_two_cartpole_islands_solve_it(ray_session, tmp_path):
    cfg = resolve(from_dict(dict(env="CartPole-v1", islands=2, seed=0, generations=150,
                                 time_budget=240, namespace="t-solve")))
    summary = run(cfg, out=str(tmp_path / "run"), display=False)
    assert summary["solved"], summary
    assert summary["test_mean"] >= 475 and summary["test_episodes"] == 100
    assert summary["stop_reason"] == "target"
    # candidates (centers: --candidates' default, candidates.Candidate), each re-evaluated by its
    # island on 10 fresh episodes before it was offered, and only tested when that held up
    assert {t["kind"] for t in summary["tests"]} <= {"center", "sample"}
    assert all(t["reeval"] + 2 * t["reeval_se"] >= 475
               for t in summary["tests"] if not t["final"])
    for f in ("config.yaml", "metrics.parquet", "summary.json", "solution.npz", "fitness.png"):
        assert (tmp_path / "run" / f).exists(), f
    # the moment the solution was found, in the plan's terms
    assert 0 < summary["evals_to_solve"] <= summary["total_evals"]
    assert 0 < summary["episodes_to_solve"] <= summary["total_episodes"]
    assert 0 < summary["env_steps_to_solve"] <= summary["total_env_steps"]
    assert 0 < summary["wall_to_solve"] <= summary["wall_s"]
    # CartPole: 2 episodes per evaluation, plus 10 per re-evaluated candidate
    reevaluations = summary["tester"]["reevaluations"]
    # the center of each offer (--candidates center, the default); each test took one
    assert {t["kind"] for t in summary["tests"] if not t["final"]} == {"center"}
    assert reevaluations >= sum(not t["final"] and t["role"] == "selecting"
                                for t in summary["tests"])
    # solved means confirmed: the passing genome was re-tested on fresh episodes
    conf = summary["confirmation"]
    assert summary["confirmed"] and conf["episodes"] == 100 and conf["mean"] >= 475
    assert conf["ci95"][0] <= conf["mean"] <= conf["ci95"][1]
    assert summary["tests"][-1]["role"] == "confirmation"
    assert summary["total_episodes"] == 2 * summary["total_evals"] + 10 * reevaluations
    assert summary["tester"]["tests"] == len(summary["tests"])
    assert summary["tester"]["env_steps"] >= 100 * 475  # the passing test alone


def test_migration_moves_the_elite_into_an_island_that_cannot_improve():
    # Island 1 is a GA whose mutations (sigma 1e-50) vanish in the policy's float32
    # weights: every individual it breeds is the zero network, which always pushes left, so
    # on its own its fitness never changes. Only migrants (edge 0>1) can lift it. The run
    # stops once an immigrant has lifted it, not on generations: the fast GA must not
    # finish before migrants arrive.
    cfg = cfg_of(islands=2, namespace="t-migrate", topology="edges", edges="0>1",
                 migrants=2, migration_interval=2, generations=100_000, time_budget=HANG_S,
                 max_episode_steps=200,
                 episodes=2, island_specs=[{"strategy": "cmaes", "popsize": 12},
                                           {"strategy": "ga", "sigma": 1e-50}])

    def lifted(rows):
        r1 = [r for r in rows if r["island"] == 1]
        if not r1:
            return False
        best0 = max((r["best_so_far"] for r in rows if r["island"] == 0), default=0)
        # and at most island 0's best: a migrant can score above its sender's best so far
        # on island 1's episodes for a while (episode noise), never for good
        return (r1[-1]["immigrants"] >= 2 and 100 <= r1[-1]["best_so_far"] <= best0
                and max(r["fitness_max"] for r in r1 if r["immigrants"] > 0) >= 60)

    res = run_until(cfg, lifted, virtual=True)
    assert res.stop_reason == MET
    r0, r1 = rows_of(res, 0), rows_of(res, 1)
    alone = [r for r in r1 if r["immigrants"] == 0]
    assert alone and max(r["fitness_max"] for r in alone) < 20  # stuck: falls in ~10 steps
    assert r0[-1]["immigrants"] == 0  # nothing flows back along 0>1
    assert r1[-1]["immigrants"] >= 2
    sent_best = max(r["best_so_far"] for r in r0)
    assert r1[-1]["best_so_far"] >= 100
    assert r1[-1]["best_so_far"] <= sent_best  # all it has came from island 0
    # The migrant is now island 1's elite and scores on island 1's own episodes.
    assert max(r["fitness_max"] for r in r1 if r["immigrants"] > 0) >= 60


def test_an_adopting_island_moves_to_a_better_islands_genome():
    # Island 1 is CMA-ES with a step size too small to move its weights: alone, every
    # sample is its random start. Injected, a migrant would be shrunk to that step size
    # (pycma's inject); with --migrant-rule adopt it becomes island 1's center, and island
    # 1's samples score as the genome island 0 sent.
    cfg = cfg_of(islands=2, namespace="t-adopt", topology="edges", edges="0>1",
                 migrants=1, migration_interval=2, generations=100_000, time_budget=HANG_S,
                 max_episode_steps=200, episodes=2, migrant_rule="adopt",
                 island_specs=[{"strategy": "cmaes", "popsize": 12},
                               {"strategy": "cmaes", "popsize": 6, "sigma": 1e-12}])

    def moved_up(rows):
        r1 = [r for r in rows if r["island"] == 1]
        alone = [r["fitness_max"] for r in r1 if r["adopted"] == 0]
        moved = [r["fitness_max"] for r in r1 if r["adopted"] > 0]
        # island 0's own best at least island 1's: what island 1 scores (on its own
        # episodes) can exceed the sender's best so far for a while, by episode noise
        best0 = max((r["best_so_far"] for r in rows if r["island"] == 0), default=0)
        return (bool(alone and moved) and max(moved) > max(alone) + 50
                and r1[-1]["best_so_far"] <= best0)

    res = run_until(cfg, moved_up, virtual=True)
    assert res.stop_reason == MET
    r0, r1 = rows_of(res, 0), rows_of(res, 1)
    assert r0[-1]["adopted"] == 0 and r1[-1]["adopted"] >= 1
    alone = [r["fitness_max"] for r in r1 if r["adopted"] == 0]
    moved = [r["fitness_max"] for r in r1 if r["adopted"] > 0]
    assert alone and moved and max(moved) > max(alone) + 50
    assert max(moved) <= 200 and r1[-1]["best_so_far"] <= max(r["best_so_far"] for r in r0)


def test_an_adopting_island_takes_the_better_islands_settings_under_hp_spread():
    # --hp-spread with adopt: island 1 is ARS with a noise too small to tell directions
    # apart, so alone it never moves; when it adopts island 0's genome it takes island 0's
    # settings, each times 1/1.2 or 1.2 (PBT's explore), within [1/2, 2] times the values
    # it was planned from (its tiny sigma keeps it from learning on its own throughout).
    cfg = cfg_of(islands=2, namespace="t-spread", topology="edges", edges="0>1",
                 strategy="ars", hp_spread=2.0, migrant_rule="adopt", migrants=1,
                 migration_interval=2, generations=100_000, time_budget=HANG_S,
                 max_episode_steps=200, episodes=2,
                 island_specs=[{"popsize": 8}, {"popsize": 8, "sigma": 1e-12}])
    # three reports of island 1 after its adoption: the settings it took, and kept
    res = run_until(cfg, lambda rows: sum(r["island"] == 1 and r["adopted"] > 0
                                          for r in rows) >= 3, virtual=True)
    assert res.stop_reason == MET
    r0, r1 = rows_of(res, 0), rows_of(res, 1)
    assert r0[-1]["adopted"] == 0 and r1[-1]["adopted"] >= 1
    sender = {(r["sigma"], r["lr"]) for r in r0}
    assert len(sender) == 1  # island 0 never adopts: its own spread settings throughout
    sent = dict(zip(("sigma", "lr"), sender.pop(), strict=True))
    assert r1[0]["sigma"] < 1e-11  # island 1's start, spread too
    factors = spread_factors(("sigma", "lr"), 1, 2, 2.0, cfg.seed)
    for r in (r for r in r1 if r["adopted"] > 0):
        for k, v in sent.items():
            base = r1[0][k] / factors[k]
            took = {float(np.clip(v * p, base / 2, base * 2)) for p in (1 / 1.2, 1.2)}
            assert any(math.isclose(r[k], t, rel_tol=1e-9) for t in took), (k, r[k], took)
    assert r1[-1]["sigma"] < 1e-11  # clipped to its own range: no sender's noise taken


def test_a_slow_island_does_not_hold_back_a_fast_one():
    cfg = cfg_of(islands=2, namespace="t-async", strategy="cmaes", migration_interval=1,
                 migrants=1, generations=100000, time_budget=HANG_S,
                 island_specs=[{}, {"slowdown_s": 1.0}])

    def both_traded(rows):  # the slow island's third report, both having received migrants
        r0, r1 = last_row(rows, 0), last_row(rows, 1)
        return (r0 is not None and r1 is not None and r1["generation"] >= 3
                and r0["immigrants"] > 0 and r1["immigrants"] > 0)

    res = run_until(cfg, both_traded, virtual=True)
    g0, g1 = rows_of(res, 0)[-1]["generation"], rows_of(res, 1)[-1]["generation"]
    assert g1 >= 2
    assert g0 >= 3 * g1, (g0, g1)
    # Both still exchange migrants: the slow one just does it less often.
    assert rows_of(res, 0)[-1]["immigrants"] > 0 and rows_of(res, 1)[-1]["immigrants"] > 0
    assert res.stop_reason == MET


def test_mixed_strategies_all_evolve_and_receive_immigrants():
    cfg = cfg_of(islands=4, namespace="t-mixed", strategy="cmaes,sep-cmaes,openai-es,ga",
                 topology="full", migrants=1, migration_interval=1, obs_sync_interval=1,
                 generations=10_000, time_budget=HANG_S, obs_norm=True)
    # Stop once every island has received immigrants and merged statistics, not on a
    # generation count: with a generation limit a fast island can finish before any other
    # island's emigrants reach it (seen on a loaded machine).

    def all_traded(rows):
        lasts = [last_row(rows, i) for i in range(4)]
        return all(r is not None and r["generation"] >= 2 and r["immigrants"] > 0
                   and r["obs_count"] > r["env_steps"] + r["evals"] for r in lasts)

    res = run_until(cfg, all_traded, virtual=True)
    assert res.stop_reason == MET
    assert [i.strategy for i in res.islands] == ["cmaes", "sep-cmaes", "openai-es", "ga"]
    for i in range(4):
        rows = rows_of(res, i)
        assert rows[-1]["generation"] >= 2
        assert rows[-1]["immigrants"] > 0, i
        # Merged statistics: the island normalizes with more observations than it saw
        # itself (at most one per step plus one per episode start).
        assert max(r["obs_count"] - (r["env_steps"] + r["evals"]) for r in rows) > 0, i
    assert res.coordinator_stats["rounds"] >= 4 * 2


@pytest.mark.parametrize("budget,key,name", [
    ({"max_evals": 200}, "evals", "evaluation budget"),
    ({"max_episodes": 300}, "episodes", "episode budget"),
    ({"max_env_steps": 4000}, "env_steps", "env-step budget"),
])
def test_a_budget_over_all_islands_stops_the_run_within_a_generation_per_island(
        budget, key, name):
    cfg = cfg_of(islands=2, namespace=f"t-{key}", strategy="cmaes", generations=100_000,
                 episodes=2, **budget)
    res = run_arch(cfg, virtual=True)
    assert res.stop_reason == name
    limit = next(iter(budget.values()))
    assert limit <= res.totals[key]
    # the last reports crossed it: at most one generation per island beyond
    per_generation = {"evals": 8, "episodes": 16, "env_steps": 16 * 100}[key]
    assert res.totals[key] < limit + per_generation * cfg.islands
    last = {r["island"]: r for r in res.rows}
    assert res.totals[key] == sum(r[key] for r in last.values())
    assert res.rows[-1][f"total_{key}"] == res.totals[key]


def test_unplaceable_request_fails_fast_and_creates_nothing(ray_session, tmp_path):
    out = tmp_path / "never"
    cfg = cfg_of(islands=2, namespace="t-gpu", gpus_per_island=1)
    with pytest.raises(ResourceError, match="GPU"):
        run(cfg, out=str(out), display=False)
    cfg = cfg_of(islands=2, namespace="t-res", resources_per_island={"gpu_node": 1})
    with pytest.raises(ResourceError, match="gpu_node"):
        run(cfg, out=str(out), display=False)
    assert not os.path.exists(out)
    assert cluster_nodes()  # Ray is still fine


def test_sequential_test_stops_a_hopeless_candidate_and_runs_a_good_one_in_full():
    from islands.evaluate import sequential_test, test_genome

    cfg = cfg_of(islands=1, max_episode_steps=500)
    spec = cfg.eval_spec().replace(episodes=100)
    zero = np.zeros(_core(cfg).dim)  # always pushes left: falls within ~10 steps
    res = sequential_test(spec, zero, None, seed=2**30, target=475.0)
    assert res["stopped_early"] and res["episodes"] == 20 and res["mean"] < 20
    res = sequential_test(spec, zero, None, seed=2**30, target=5.0)  # never clearly below
    assert not res.get("stopped_early") and res["episodes"] == 100
    # the full test is its five chunks of 20 episodes, chunk k on seed 2**30 + k
    chunks = [test_genome(spec.replace(episodes=20), zero, None, 2**30 + k) for k in range(5)]
    assert res["mean"] == pytest.approx(np.mean([c["mean"] for c in chunks]))
    assert res["env_steps"] == sum(c["env_steps"] for c in chunks)
    # no target: one plain test, as the final test of the hall of fame runs
    assert sequential_test(spec, zero, None, seed=2**30, target=None)["episodes"] == 100
