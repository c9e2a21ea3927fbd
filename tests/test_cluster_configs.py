"""Every cluster YAML under cluster/ passes Ray's own validator, the way `ray up` checks it."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import pytest
import yaml
from ray.autoscaler._private.util import (
    fill_node_type_min_max_workers,
    merge_setup_commands,
    prepare_config,
    validate_config,
)

CLUSTER_DIR = Path(__file__).resolve().parents[1] / "cluster"
YAMLS = sorted(p for p in CLUSTER_DIR.rglob("*.yaml"))  # cluster/virtual/ too


def _validate(raw: dict) -> dict:
    """Validate like `ray up` does.

    The fake multi-node provider's defaults file (example.yaml) is missing from the pip wheel,
    so `prepare_config` cannot fill it out; our fake config is complete on its own and gets the
    same schema check after the steps of `prepare_config` that need no defaults file.
    """
    cfg = copy.deepcopy(raw)
    if cfg.get("provider", {}).get("type") == "fake_multinode":
        merge_setup_commands(cfg)
        fill_node_type_min_max_workers(cfg)
    else:
        cfg = prepare_config(cfg)
    validate_config(cfg)
    return cfg


def test_cluster_dir_has_the_documented_configs():
    names = {p.name for p in YAMLS}
    assert {"gpu.yaml", "cpu.yaml", "local-fake.yaml"} <= names


def test_the_virtual_study_clusters_are_their_generators_output(tmp_path):
    from islands.costmodel import load_cluster
    from islands.experiment import clusters

    made = clusters.write_all(tmp_path)
    for p in made:  # committed as generated: nobody edited one by hand
        assert (CLUSTER_DIR / "virtual" / p.name).read_text() == p.read_text(), p.name
    for cores in clusters.CORES:
        plain = load_cluster(CLUSTER_DIR / "virtual" / clusters.name(cores, False))
        mixed = load_cluster(CLUSTER_DIR / "virtual" / clusters.name(cores, True))
        workers = [n for n in mixed.nodes if n.cpus > 0]
        assert plain.cpus == mixed.cpus == cores and plain.straggler_p == 0
        assert sorted({n.speed for n in workers}) == [0.5, 1.0]
        assert sum(n.speed < 1 for n in workers) == len(workers) // 2
        # one node lost per virtual hour across the cluster
        assert mixed.failures_per_hour * len(workers) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="multiple of 8"):
        clusters.cluster_doc(20, False)


@pytest.mark.parametrize("path", YAMLS, ids=lambda p: p.name)
def test_config_is_valid(path):
    cfg = _validate(yaml.safe_load(path.read_text()))
    assert cfg["head_node_type"] in cfg["available_node_types"]


@pytest.mark.parametrize("path", YAMLS, ids=lambda p: p.name)
def test_broken_copy_fails(path):
    raw = yaml.safe_load(path.read_text())
    broken = copy.deepcopy(raw)
    # A typo'd key inside a node type: the schema forbids unknown fields there.
    node_type = next(iter(broken["available_node_types"].values()))
    node_type["min_wrokers"] = 1
    with pytest.raises(jsonschema.ValidationError):
        _validate(broken)
    # A resource count must be a non-negative integer.
    broken = copy.deepcopy(raw)
    next(iter(broken["available_node_types"].values()))["resources"]["CPU"] = -1
    with pytest.raises(jsonschema.ValidationError):
        _validate(broken)


@pytest.mark.parametrize("name", ["gpu.yaml", "cpu.yaml"])
def test_aws_security_and_token(name):
    """Dashboard/GCS/metrics ports are never opened; the token reaches every node."""
    raw = yaml.safe_load((CLUSTER_DIR / name).read_text())
    perms = raw["provider"]["security_group"]["IpPermissions"]
    for rule in perms:
        assert (rule["FromPort"], rule["ToPort"]) == (22, 22), rule
        for r in rule["IpRanges"]:
            assert r["CidrIp"] != "0.0.0.0/0", "SSH must not be open to the internet"
    assert raw["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"
    starts = " ".join(raw["head_start_ray_commands"] + raw["worker_start_ray_commands"])
    assert starts.count("RAY_AUTH_MODE=token") == 2
    assert "--dashboard-host=127.0.0.1" in starts


def test_gpu_config_has_node_types_for_placement():
    raw = yaml.safe_load((CLUSTER_DIR / "gpu.yaml").read_text())
    types = raw["available_node_types"]
    assert types["gpu_worker"]["resources"]["gpu_node"] == 1
    assert types["gpu_worker"]["resources"]["GPU"] >= 1
    assert types["cpu_worker"]["resources"]["cpu_node"] == 1
    assert types[raw["head_node_type"]]["resources"]["CPU"] == 0  # islands stay off the head
