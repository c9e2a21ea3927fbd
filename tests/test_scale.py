"""Many islands: synthetic islands through the launcher, and the coordinator benchmark."""

from __future__ import annotations

import json

import pytest
from conftest import run_cluster_script, run_module


@pytest.mark.own_ray
def test_sixty_four_synthetic_islands_through_the_launcher(tmp_path):
    out = tmp_path / "run"
    proc = run_module(
        "islands.launch", "--env", "rastrigin:10", "--env-kwargs", '{"wait_ms": 200}',
        "--islands", "64", "--strategy", "openai-es", "--popsize", "8", "--episodes", "1",
        "--migration-interval", "1", "--time-budget", "8", "--target", "none",
        "--dashboard", "off", "--tensorboard", "off", "--quiet", "on", "--out", str(out),
        timeout=300)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    s = json.loads((out / "summary.json").read_text())
    assert s["backends"] == ["synthetic"] * 64 and s["num_params"] == 10
    assert s["stop_reason"] == "time budget" and s["total_evals"] > 64 * 8
    lat = s["migration"]["latency_s"]
    assert lat["n"] > 64 and 0 <= lat["p50"] <= lat["p99"] <= lat["max"]
    # two Ray worker processes for 64 islands on 2 CPUs, their calls served side by side:
    # every island reported (a process serving one call at a time would starve most)
    assert s["migration"]["reports"] >= 64 * 2


@pytest.mark.own_ray
def test_the_coordinator_benchmark_prints_its_rows(tmp_path):
    proc = run_module("benchmarks.coordinator_scale", "--islands", "16,32", "--seconds", "5",
                      "--warmup", "1", "--cpus", "2", timeout=300)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    rows = json.loads(proc.stdout.strip().splitlines()[-1])["rows"]
    assert [r["islands"] for r in rows] == [16, 32]
    keys = {"islands", "reports_per_s", "coordinator_cpu", "driver_cpu", "latency_p50_s",
            "latency_p99_s", "startup_s", "rss_mb"}
    for r in rows:
        assert keys <= set(r) and r["reports_per_s"] > 0 and r["migrations"] > 0
        assert 0 < r["coordinator_cpu"] and 0 < r["driver_cpu"] and r["rss_mb"] > 100
        assert r["latency_p50_s"] <= r["latency_p99_s"] and r["startup_s"] > 0
    assert "islands | reports/s" in proc.stdout


@pytest.mark.own_ray
@pytest.mark.slow
def test_sixteen_nodes_of_two_kinds_lose_a_quarter_and_the_run_completes():
    out = run_cluster_script("scale_cluster_run.py")
    assert out["stop_reason"] == "time budget" and not out["errors"]
    on_lost = [i for i, n in enumerate(out["island_nodes"]) if n in out["lost_nodes"]]
    assert on_lost, out["island_nodes"]  # the removal hit islands
    assert all(out["calls_lost"][i] > 0 for i in on_lost), out["calls_lost"]
    # every island, those of the lost nodes restarted elsewhere from their checkpoints,
    # reported after the loss
    assert out["reported_after"] == list(range(16))
    # the hall of fame holds the best genome any island reported, and it is that genome
    assert out["hof_fitness"] == out["best_reported"] == out["best_fitness"]
    assert out["best_refit"] == out["best_fitness"]
