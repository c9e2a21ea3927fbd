"""Autoscaling end to end with Ray's fake multi-node provider and ``cluster/local-fake.yaml``:
the head has no CPUs, so every island needs a node the autoscaler must add. A GPU island
(``num_gpus``) must land on the fake ``gpu_worker``, a CPU island that asks for ``cpu_node``
on a ``cpu_worker`` the autoscaler adds for it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT
from rayhead import free_ports, ray_cli, ray_env, ray_head

pytestmark = [pytest.mark.own_ray, pytest.mark.slow]


@pytest.fixture()
def fake_cluster(tmp_path):
    gcs = free_ports(1)[0]
    config = yaml.safe_load((ROOT / "cluster" / "local-fake.yaml").read_text())
    config["provider"]["gcs_address"] = f"127.0.0.1:{gcs}"  # the head's port below
    path = tmp_path / "fake.yaml"
    path.write_text(yaml.safe_dump(config))
    with ray_head("--resources={\"head_node\": 1}", f"--autoscaling-config={path}",
                  num_cpus=0, gcs_port=gcs, env={"RAY_FAKE_CLUSTER": "1"}) as head:
        yield head


def test_the_autoscaler_adds_the_nodes_the_islands_ask_for(fake_cluster, tmp_path):
    specs = tmp_path / "islands.yaml"
    specs.write_text(yaml.safe_dump({"island_specs": [
        {"strategy": "cmaes", "num_gpus": 0.5},
        {"strategy": "ga", "resources": {"cpu_node": 0.001}}]}))
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "islands.launch", "--address", fake_cluster["gcs"],
         "--config", str(specs), "--env", "CartPole-v1", "--popsize", "8", "--episodes", "1",
         "--max-episode-steps", "100", "--generations", "5", "--target", "none",
         "--test-episodes", "5", "--wait-for-nodes", "240", "--out", str(out)],
        cwd=ROOT, env=ray_env(), capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "waiting up to 240 s for the autoscaler" in proc.stdout, proc.stdout[-2000:]
    assert json.loads((out / "summary.json").read_text())["generations"] == {"0": 5, "1": 5}

    nodes = json.loads(ray_cli("list", "nodes", "--address", fake_cluster["dashboard"],
                               "--format", "json", "--detail").stdout)
    kind = {}
    for n in nodes:
        res = n.get("resources_total") or {}
        kind[n["node_id"]] = ("gpu" if "gpu_node" in res else
                              "cpu" if "cpu_node" in res else "head")
    assert {"gpu", "cpu"} <= set(kind.values()), nodes  # both added by the autoscaler
    actors = json.loads(ray_cli("list", "actors", "--address", fake_cluster["dashboard"],
                                "--format", "json", "--detail", "--limit", "1000").stdout)
    where = {a["name"]: kind.get(a.get("node_id") or a.get("address", {}).get("node_id"))
             for a in actors if a.get("name")}
    assert where.get("island-00") == "gpu" and where.get("island-01") == "cpu", where
