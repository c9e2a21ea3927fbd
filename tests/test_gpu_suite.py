"""benchmarks/gpu_suite.py end to end: the quick CPU suite in subprocesses, its parts that
run on Ray (the island runs, the scaling run: joining the session's Ray, ``--address``)
apart from those that run in its process, their gpu.json / gpu.md outcomes, and the one-line
exit 2 on a bad flag. Never asserts wall-clock times."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from conftest import ROOT, joining, subprocess_env

SUITE = ROOT / "benchmarks" / "gpu_suite.py"
PARTS = ["cartpole", "snake", "pong", "noise_table", "nt_island", "archipelago_scaling",
         "mujoco", "humanoid", "pytest_gpu"]
MAY_SKIP = {"pong", "pytest_gpu"}  # CUDA only


def _suite(*args: str, timeout: float = 300, env: dict | None = None
           ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SUITE), *args], cwd=ROOT,
                          env=env or subprocess_env(), capture_output=True, text=True,
                          timeout=timeout)


# The parts that run on Ray (through the launcher) join the session's Ray (--address: one
# Ray start instead of three, each 10-20 s of the Ray worker's critical path); the others
# (torch and MuJoCo Warp in the suite's process) run beside the Ray tests.
RAY_PARTS = ["nt_island", "archipelago_scaling", "humanoid"]
TORCH_PARTS = [p for p in PARTS if p not in RAY_PARTS]


def _quick(out, parts: list[str], *extra: str, env: dict | None = None) -> dict:
    # about 1 minute (Ray parts) and 20 s (the others) on an idle 2-core machine; the cap is
    # for a hung suite only
    proc = _suite("--device", "cpu", "--quick", "--out", str(out), "--parts", ",".join(parts),
                  *extra, timeout=840, env=env)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    rec = json.loads((out / "gpu.json").read_text())
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == rec  # the last line is gpu.json
    assert list(rec["parts"]) == PARTS  # every part listed, the others as not run
    assert rec["commit"] and rec["date"] and "--quick" in rec["command"]
    for name, part in rec["parts"].items():
        if name not in parts:
            assert part["status"] == "skipped" and part["reason"] == "not in --parts"
        elif name in MAY_SKIP and not torch.cuda.is_available():
            assert part["status"] == "skipped" and part["reason"], (name, part)
        else:
            assert part["status"] == "ok", (name, part)
    md = (out / "gpu.md").read_text()
    assert md.startswith("# GPU suite") and all(f"## {name}" in md for name in PARTS)
    return rec | {"md": md}


@pytest.fixture(scope="module")
def ray_parts(tmp_path_factory, ray_session):
    join, env = joining(ray_session)
    return _quick(tmp_path_factory.mktemp("gpu-suite-ray"), RAY_PARTS, *join, env=env)


@pytest.fixture(scope="module")
def torch_parts(tmp_path_factory):
    return _quick(tmp_path_factory.mktemp("gpu-suite-torch"), TORCH_PARTS)


@pytest.mark.slow
def test_quick_suite_figures_of_its_in_process_parts(torch_parts):
    parts = torch_parts["parts"]  # (_quick checked every part's status)
    used = ("cartpole", "noise_table", "mujoco")
    assert {n: parts[n]["status"] for n in used} == dict.fromkeys(used, "ok"), parts
    cart = parts["cartpole"]
    eager = {r["N"]: r for r in cart["rows"] if r["compile"] == "eager"}
    assert set(eager) == {256, 1024} and all(r["steps_per_s"] > 0 for r in cart["rows"])
    assert cart["modes"]["default"]["status"] == "ok"  # torch.compile on the CPU too
    assert cart["modes"]["reduce-overhead"]["status"] == "skipped"  # CUDA graphs: CUDA only
    assert all(r["ratio"] > 0 for r in cart["rows"])  # against the random-policy ceiling
    assert {r["device"] for r in parts["noise_table"]["rows"]} == {"cpu"}
    assert "| compile | N envs | P x E | policy steps/s" in torch_parts["md"]
    mujoco = parts["mujoco"]["rows"]  # MuJoCo Warp on the CPU against EnvPool
    assert [(r["env"], r["N"]) for r in mujoco] == [("Hopper-v4", 16)]
    assert all(r["steps_per_s"] > 0 and r["x_envpool"] > 0 for r in mujoco), mujoco


@pytest.mark.slow
def test_quick_suite_figures_of_its_ray_parts(ray_parts):
    parts = ray_parts["parts"]
    island = parts["nt_island"]["rows"]
    assert [r["device"] for r in island] == ["cpu"] and island[0]["backend"] == "torch"
    assert "--address" in island[0]["command"]  # it joined the session's Ray
    assert island[0]["env_steps"] > 0 and island[0]["solved"] is True
    scaling = parts["archipelago_scaling"]["rows"]
    assert [r["islands"] for r in scaling] == [1, 2]
    # each row's rate is its own step count over its own span, and the 2-island row's
    # efficiency is its rate over twice the 1-island row's, recomputed here from the counts
    # (the 1-island row's efficiency is 1 by definition and says nothing)
    for r in scaling:
        assert r["steps"] > 0 and r["seconds"] > 0 and r["generations"] >= r["islands"]
        assert r["steps_per_s"] == pytest.approx(r["steps"] / r["seconds"])
    one = scaling[0]["steps"] / scaling[0]["seconds"]
    two = scaling[1]["steps"] / scaling[1]["seconds"]
    assert 0 < scaling[1]["efficiency"] == pytest.approx(two / (2 * one)), scaling
    hum = parts["humanoid"]["rows"][0]  # the launcher's smoke run: one ars-nt island
    assert hum["backends"] == ["torch"] and hum["generations"] == 2 and hum["env_steps"] > 0
    assert "--address" in parts["humanoid"]["command"]


def test_an_unknown_part_exits_2_with_one_line(tmp_path):
    proc = _suite("--parts", "cartpole,nosuch", "--out", str(tmp_path), timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "nosuch" in lines[0] and "--parts" in lines[0]
    assert not (tmp_path / "gpu.json").exists()


def test_a_part_that_raises_is_recorded_and_the_suite_goes_on(tmp_path, monkeypatch):
    """In process, no Ray: snake is made to raise after measuring one row."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_suite

    def broken(s, fig):
        fig["rows"] = [{"partial": 1}]
        raise ValueError("broken on purpose\nsecond line")

    monkeypatch.setitem(gpu_suite.PART_FNS, "snake", broken)
    rec = gpu_suite.main(["--device", "cpu", "--quick", "--out", str(tmp_path),
                          "--parts", "snake,pytest_gpu"])
    snake = rec["parts"]["snake"]
    assert snake["status"] == "failed" and snake["reason"] == "ValueError: broken on purpose"
    assert snake["rows"] == [{"partial": 1}]  # what it measured before it raised is kept
    assert rec["parts"]["pytest_gpu"]["status"] == "skipped"  # the next part still ran
    assert rec["parts"]["cartpole"] == {"status": "skipped", "reason": "not in --parts",
                                        "elapsed_s": rec["parts"]["cartpole"]["elapsed_s"]}
    assert json.loads((tmp_path / "gpu.json").read_text()) == rec
    assert "failed" in (tmp_path / "gpu.md").read_text()


def test_the_humanoid_budget_fits_the_device_time_left(tmp_path, capsys):
    """In process, no Ray: --humanoid-seconds sets the humanoid run's --time-budget."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_suite

    rec = gpu_suite.main(["--device", "cpu", "--out", str(tmp_path), "--parts", "pytest_gpu",
                          "--humanoid-seconds", "300"])
    flags = rec["sizes"]["humanoid"]
    assert flags[flags.index("--time-budget") + 1] == "300"
    with pytest.raises(SystemExit) as e:
        gpu_suite.parse_args(["--humanoid-seconds", "0"])
    assert e.value.code == 2
    assert capsys.readouterr().err.strip().endswith("--humanoid-seconds must be > 0, got 0")
