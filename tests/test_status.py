"""islands.status against a real coordinator actor in the shared test Ray."""

from __future__ import annotations

from fakes import island_result

from islands.coordinator import CoordinatorSpec
from islands.runtime.actors import CoordinatorActor
from islands.status import format_status, main


def _result(i, gen, fit, strategy):
    return island_result(i, gen, fit, params=i, strategy=strategy, evals=8 * gen,
                         env_steps=100 * gen, frames=100 * gen, fitness_max=fit,
                         fitness_mean=fit / 2, best_so_far=fit, immigrants=gen // 2,
                         immigrants_new=0, rejected=0, call_s=0.1, evals_per_s=123.4,
                         steps_per_s=1000.0, island_wall_s=1.0, obs_count=0.0,
                         restarts=gen // 3)


def test_status_table_from_a_coordinator(ray_session):
    ray = ray_session
    ns = "status-test"
    spec = CoordinatorSpec(n_islands=2, topology="ring", migrants=1, migration_interval=1,
                           obs_sync_interval=5, env="CartPole-v1")
    coord = CoordinatorActor.options(name="coordinator", namespace=ns).remote(
        spec, None, False)
    try:
        ray.get(coord.report.remote(0, _result(0, 3, 20.0, "cmaes")))
        ray.get(coord.report.remote(1, _result(1, 2, 35.5, "ga")))
        ray.get(coord.report.remote(0, _result(0, 4, 25.0, "cmaes")))
        st = ray.get(coord.status.remote())
        assert [r["generation"] for r in st["islands"]] == [4, 2]  # latest report per island
        assert st["hof"] == {"fitness": 35.5, "island": 1, "generation": 2}
        lines = format_status(st).splitlines()
        assert lines[0] == "env CartPole-v1: 2 island(s) reporting"
        assert lines[2].split() == ["00", "cmaes", "4", "32", "400", "25.0", "25.0", "12.5",
                                    "123", "2", "1"]
        assert lines[3].split()[:3] == ["01", "ga", "2"]
        assert lines[4] == "hall of fame: 35.50 from island 01 at generation 2"
        assert lines[5] == "progress: 0 training episodes"  # no budget: no ETA
        assert lines[6].startswith("migration: 3 reports")
        assert main(["--namespace", ns]) == 0  # the CLI path, on the connected Ray
    finally:
        ray.kill(coord, no_restart=True)


def test_status_of_a_cost_shows_costs_and_the_eta_to_the_budget(ray_session):
    """A user's cost (``--minimize``): the table shows the cost, not minus the cost; with a
    budget, the progress line says when it will be spent at the rate so far."""
    ray = ray_session
    spec = CoordinatorSpec(n_islands=1, migrants=0, env="problem:m:cost", sign=-1.0,
                           word="cost", budgets={"max_evals": 1e9})
    coord = CoordinatorActor.options(name="coordinator", namespace="status-cost").remote(
        spec, None, False)
    try:
        for gen in (1, 2, 3):
            ray.get(coord.report.remote(0, _result(0, gen, -4.0 / gen, "cmaes")))
        lines = format_status(ray.get(coord.status.remote())).splitlines()
        assert lines[0] == "env problem:m:cost: 1 island(s) reporting; values are the cost"
        assert lines[2].split()[5:8] == ["1.3", "1.3", "0.7"]  # best, last max, last mean
        assert lines[3] == "hall of fame: 1.33 from island 00 at generation 3"
        assert lines[4].startswith("progress: 0 training episodes; ETA ")
        assert lines[4].endswith("(max evals)")
    finally:
        ray.kill(coord, no_restart=True)


def test_status_of_an_elastic_run_counts_its_live_islands(ray_session):
    ray = ray_session
    spec = CoordinatorSpec(n_islands=2, migrants=1, migration_interval=1, env="rastrigin:3",
                           elastic=True)
    coord = CoordinatorActor.options(name="coordinator", namespace="status-elastic").remote(
        spec, None, False)
    try:
        ray.get(coord.join.remote([2]))
        for i in range(3):
            ray.get(coord.report.remote(i, _result(i, 1, float(i), "cmaes")))
        assert ray.get(coord.retire.remote([1])) == 2
        lines = format_status(ray.get(coord.status.remote())).splitlines()
        assert lines[0] == "env rastrigin:3: 3 island(s) reporting, 2 live (--elastic)"
    finally:
        ray.kill(coord, no_restart=True)


def test_status_without_a_run_exits_2(ray_session, capsys):
    assert main(["--namespace", "no-run-here"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no actor 'coordinator' in Ray namespace 'no-run-here'" in err[0]


def test_status_without_a_cluster_exits_2(capsys):
    import subprocess
    import sys

    from conftest import ROOT, subprocess_env

    proc = subprocess.run([sys.executable, "-m", "islands.status", "--address", "127.0.0.1:9"],
                          cwd=ROOT, env=subprocess_env(), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("islands.status: error: no Ray cluster at '127.0.0.1:9': "
                                   "nothing listens there")
