"""How runs reach a cluster, end to end: a real ``ray start --head`` (its own ports and temp
dir), ``ray job submit --working-dir . -- python -m islands.launch --address auto``,
``python -m islands.status`` against it while the job runs and ``--stop`` to end it, and a
user's module objective through ``--working-dir``. The head is stopped by ending the ``ray
start --block`` process (never ``ray stop``: it kills every Ray on the machine)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest
from conftest import ROOT
from rayhead import ray_cli, ray_env, ray_head

pytestmark = [pytest.mark.own_ray, pytest.mark.slow]


@pytest.fixture()
def head():
    """A one-node Ray cluster of 2 CPUs started with ``ray start --head --block``."""
    with ray_head() as h:
        yield h


def test_a_run_submitted_as_a_ray_job_succeeds_and_is_watchable(head, tmp_path):
    out = tmp_path / "run"
    args = ("job", "submit", "--address", head["dashboard"], "--working-dir", ".", "--no-wait",
            "--", "python", "-m", "islands.launch", "--address", "auto", "--islands", "2",
            "--env", "CartPole-v1", "--popsize", "12", "--episodes", "1",
            "--max-episode-steps", "200", "--time-budget", "600", "--target", "none",
            "--generations", "100000",  # `islands.status --stop` ends it; 600 s: a hang
            "--test-episodes", "10", "--out", str(out))
    submit = ray_cli(*args)
    deadline = time.monotonic() + 120
    # The job server answers before the head's agent has registered; Ray then asks to
    # "try again later" (seen on a loaded machine).
    while "try again later" in submit.stderr and time.monotonic() < deadline:
        time.sleep(3)
        submit = ray_cli(*args)
    assert submit.returncode == 0, submit.stdout[-2000:] + submit.stderr[-2000:]
    job_id = re.search(r"raysubmit_[A-Za-z0-9]+", submit.stdout).group(0)

    # While it runs, the status command reads the live coordinator through the GCS address.
    table = ""
    # the job's runtime env (the working directory uploaded and unpacked) took ~4 minutes
    # to set up on a loaded 2-core machine
    deadline = time.monotonic() + 420
    while "2 island(s) reporting" not in table and time.monotonic() < deadline:
        st = subprocess.run([sys.executable, "-m", "islands.status", "--address", head["gcs"]],
                            cwd=ROOT, env=ray_env(), capture_output=True, text=True,
                            timeout=120)
        table = st.stdout
        time.sleep(1)
    if "2 island(s) reporting" not in table:  # say what the job did instead
        job = ray_cli("job", "logs", "--address", head["dashboard"], job_id)
        pytest.fail(f"islands.status never showed the running job: {st.stdout}{st.stderr}"
                    f"\njob log: {(job.stdout + job.stderr)[-3000:]}")

    # ... and ends it as a budget would
    stop = subprocess.run([sys.executable, "-m", "islands.status", "--address", head["gcs"],
                           "--stop"], cwd=ROOT, env=ray_env(), capture_output=True, text=True,
                          timeout=120)
    assert stop.returncode == 0 and "2 island(s) reporting" in stop.stdout, stop.stderr
    status = ""
    deadline = time.monotonic() + 180  # its last test, the job's end
    while time.monotonic() < deadline:
        st = ray_cli("job", "status", "--address", head["dashboard"], job_id)
        status = (st.stdout + st.stderr).lower()
        if any(s in status for s in ("succeeded", "failed", "stopped")):
            break
        time.sleep(2)
    got = ray_cli("job", "logs", "--address", head["dashboard"], job_id)
    logs = got.stdout + got.stderr
    assert "succeeded" in status, (status, logs[-3000:])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stop_reason"] == "stopped", summary
    assert len(summary["generations"]) == 2 and min(summary["generations"].values()) > 0
    # The job's first line says where the cluster's dashboard is and how to reach it.
    first = next(ln for ln in logs.splitlines() if ln.startswith("Ray dashboard:"))
    assert head["dashboard"] in first and "ray dashboard cluster/gpu.yaml" in first, first
    # The run's actors show under their names in the dashboard's state API.
    listed = ray_cli("list", "actors", "--address", head["dashboard"], "--format", "json",
                     "--limit", "1000")
    names = {a.get("name") for a in json.loads(listed.stdout)}
    assert {"coordinator", "tester", "island-00", "island-01"} <= names, names

    # A user's objective in a module of their own reaches the cluster's workers through
    # --working-dir (Ray's runtime_env): the head's workers have neither the module's
    # directory on their path nor the driver's PYTHONPATH.
    code = tmp_path / "code"
    code.mkdir()
    (code / "my_objective.py").write_text(
        "def cost(X):\n    return ((X - 2.0) ** 2).sum(axis=1)\n")
    env = ray_env(PYTHONPATH=f"{ROOT}:{code}")  # the driver imports it to check it
    run = subprocess.run(
        [sys.executable, "-m", "islands.launch", "--address", head["gcs"], "--working-dir",
         str(code), "--problem", "my_objective:cost", "--dim", "3", "--minimize",
         "--islands", "2", "--generations", "3", "--quiet", "--out", str(tmp_path / "p")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    summary = json.loads((tmp_path / "p" / "summary.json").read_text())
    assert summary["env"] == "problem:my_objective:cost"
    assert summary["generations"] == {"0": 3, "1": 3}
