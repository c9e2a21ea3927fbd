"""Ray metrics of a run (islands.runtime.metrics), scraped from Ray's metrics endpoint while a small
archipelago runs, plus the coordinator's live status (islands.status) in the same run.

The run is a subprocess (tests/metrics_run.py): ``RAY_metrics_report_interval_ms`` must be
set before Ray starts, and the metrics port must be known, so it needs its own Ray (an
``own_ray`` test: it runs before the session's Ray starts). A real Prometheus (Debian's
``prometheus``, which ``.ci/run`` installs) scrapes that run through the config Ray wrote."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT, subprocess_env

from islands.runtime.metrics import GENERATION_SECONDS_BOUNDARIES

pytestmark = pytest.mark.own_ray


@pytest.fixture(scope="module")
def scraped():
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "metrics_run.py")], cwd=ROOT,
                          env=subprocess_env(), capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-4000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_island_metrics_are_exported_with_tags(scraped):
    assert scraped["scrapes"] > 0, "no ray_islands_ metric in any scrape"
    assert scraped["stop_reason"] == "scraped"  # ended on the outcome, not a clock
    samples = scraped["samples"]
    by_name: dict[str, list[dict]] = {}
    for s in samples:
        by_name.setdefault(s["name"], []).append(s)
    expected = {"ray_islands_best_fitness", "ray_islands_generation",
                "ray_islands_evals_per_second", "ray_islands_global_best",
                "ray_islands_env_steps_total", "ray_islands_immigrants_total",
                "ray_islands_generation_seconds_bucket", "ray_islands_generation_seconds_count",
                "ray_islands_generation_seconds_sum", "ray_islands_live"}
    assert expected <= set(by_name), sorted(set(by_name))
    islands = {("island-00", "cmaes"), ("island-01", "ga")}
    for name in expected - {"ray_islands_global_best", "ray_islands_live"}:
        tags = {(s["labels"]["island"], s["labels"]["strategy"]) for s in by_name[name]}
        assert tags == islands, (name, tags)
    for s in samples:
        assert s["labels"]["env"] == "CartPole-v1"
        assert s["labels"]["SessionName"].startswith("session_")  # the dashboard filters on it
    for s in by_name["ray_islands_generation"] + by_name["ray_islands_env_steps_total"]:
        assert s["value"] > 0, s
    for s in by_name["ray_islands_best_fitness"]:
        assert 1 <= s["value"] <= 50, s  # CartPole reward per step, 50-step episodes
    # Both islands took in migrants (ring of two); the counter is the sum of accepted ones.
    assert all(s["value"] > 0 for s in by_name["ray_islands_immigrants_total"])
    (live,) = by_name["ray_islands_live"]
    assert live["value"] == 2  # the coordinator's count of islands in the topology
    (best,) = by_name["ray_islands_global_best"]
    assert best["value"] == max(s["value"] for s in by_name["ray_islands_best_fitness"])
    assert best["labels"]["island"] in {"island-00", "island-01"}
    buckets = {float(s["labels"]["le"]) for s in by_name["ray_islands_generation_seconds_bucket"]
               if s["labels"]["le"] != "+Inf"}
    assert buckets == set(GENERATION_SECONDS_BOUNDARIES)


def test_status_of_the_live_coordinator(scraped):
    st = scraped["status"]
    assert st is not None and st["env"] == "CartPole-v1"
    assert [r["island"] for r in st["islands"]] == [0, 1]
    assert [r["strategy"] for r in st["islands"]] == ["cmaes", "ga"]
    assert st["hof"]["island"] in (0, 1) and st["hof"]["fitness"] > 0
    lines = scraped["table"].splitlines()
    assert lines[0] == "env CartPole-v1: 2 island(s) reporting"
    assert lines[1].split()[:3] == ["island", "strategy", "gen"]
    assert lines[2].split()[:2] == ["00", "cmaes"] and lines[3].split()[:2] == ["01", "ga"]
    assert lines[4].startswith("hall of fame: ")


def test_prometheus_and_grafana_files_that_the_readme_uses(scraped):
    files = set(scraped["files"])
    for f in ("metrics/prometheus/prometheus.yml",
              "metrics/grafana/grafana.ini",
              "metrics/grafana/provisioning/dashboards/default.yml",
              "metrics/grafana/provisioning/datasources/default.yml"):
        assert f in files, sorted(files)


def test_a_real_prometheus_scrapes_every_island(scraped):
    import shutil

    prom = scraped["prometheus"]
    if prom.get("missing"):
        if shutil.which("apt-get"):
            pytest.fail("prometheus is not installed: `apt-get install prometheus` "
                        "(.ci/run does it)")
        pytest.skip("no prometheus binary and no apt-get to install it on this machine")
    assert prom["exited"] is None, prom  # still running when queried
    # PromQL over its HTTP API: a best-fitness series for every island
    assert prom["best_fitness_islands"] == ["island-00", "island-01"], prom
    # every series the Grafana dashboard queries is one Prometheus actually has
    import re

    text = (ROOT / "cluster" / "grafana-islands.json").read_text()
    exprs = [t["expr"] for p in json.loads(text)["panels"] for t in p.get("targets", [])]
    used = {m for e in exprs for m in re.findall(r"ray_islands_\w+", e)}
    assert used and used <= set(prom["names"]), used - set(prom["names"])


def test_dashboard_json_uses_exported_names(scraped):
    import re

    text = (ROOT / "cluster" / "grafana-islands.json").read_text()
    exprs = [p["expr"] for p in json.loads(text)["panels"] for p in p.get("targets", [])]
    exported = {s["name"] for s in scraped["samples"]}
    used = {m for e in exprs for m in re.findall(r"ray_islands_\w+", e)}
    assert used and used <= exported, used - exported
    labels = set().union(*(s["labels"] for s in scraped["samples"]))
    for e in exprs:
        for lab in re.findall(r"by \(([^)]*)\)", e):
            assert {x.strip() for x in lab.split(",")} <= labels, e
        for lab in re.findall(r"(\w+)=~", e):
            assert lab in labels, e
