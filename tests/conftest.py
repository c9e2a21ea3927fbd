"""Shared fixtures: one local Ray per test session, and one real launcher run.

``ray_session`` starts a fresh local Ray (``address="local"``, never an existing cluster)
once per session, 2 CPUs (islands take fractional shares), no dashboard, a small object
store, and shuts it down at the end. Tests that create actors give each run its own
namespace, so named actors (``island-00``, ``coordinator``) of different tests never meet.

``cli_run`` runs ``python -m islands.launch`` once in a subprocess (its own embedded Ray:
``RAY_ADDRESS`` is removed from its environment so it cannot attach to ours) and yields the
run directory; test_launch.py and test_notebook.py read it. Tests that start a Ray of their
own are marked ``own_ray`` and run first, before the session's Ray exists: never two Rays
at once. Under pytest-xdist (the default addopts) all of them run on one worker, the tests
that need no Ray on the other (``pytest_collection_modifyitems``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


RAY_GROUP = "ray"  # the xdist group of every test that starts or joins a Ray


def uses_ray(item) -> bool:
    """Whether ``item`` starts a Ray (``own_ray``) or joins the session's (``ray_session``,
    directly or through a fixture that needs it)."""
    return (item.get_closest_marker("own_ray") is not None
            or "ray_session" in getattr(item, "fixturenames", ()))


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (its own hook of this name)
def pytest_collection_modifyitems(config, items):
    """Tests that start a Ray of their own (``own_ray``: an embedded launcher run, a
    multi-node ``Cluster``, a ``ray start`` head) run first, one after another, before the
    session's Ray starts: two Rays starting at once on a loaded 2-core machine is how a GCS
    misses its start-up deadline.

    Under pytest-xdist (``-n 2 --dist loadgroup``, the default addopts) every test that
    uses a Ray is in one group, so one worker runs them all, in this order, with its one
    session Ray, while the other worker runs the tests that need no Ray (strategies,
    policies, envs, reports): still one Ray at a time on the machine."""
    items.sort(key=lambda item: item.get_closest_marker("own_ray") is None)
    for item in items:
        if uses_ray(item):
            item.add_marker(pytest.mark.xdist_group(RAY_GROUP))


_SESSION_RAY: list[bool] = []  # set once the session's Ray is up


@pytest.fixture(autouse=True)
def _one_ray_at_a_time(request, tmp_path_factory):
    if request.node.get_closest_marker("own_ray") is not None:
        assert not _SESSION_RAY, "an own_ray test ran after the session's Ray started"
        assert "ray_session" not in request.fixturenames, "own_ray tests use no session Ray"
    if uses_ray(request.node):
        _claim_the_ray_worker(tmp_path_factory.getbasetemp())
    yield


def _claim_the_ray_worker(basetemp: Path) -> None:
    """Under xdist, fail loudly if Ray tests run on two workers (two Rays at once): a worker
    that runs one leaves a file in the workers' shared temp directory; none may find another's.
    (This is how pytest 9.2's ids, which xdist 3.8's groups cannot mark, would show.)"""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:  # -n 0: one process, one Ray at a time already
        return
    (basetemp.parent / f"ray-worker-{worker}").touch()
    others = sorted(p.name for p in basetemp.parent.glob("ray-worker-*")
                    if p.name != f"ray-worker-{worker}")
    assert not others, f"Ray tests on {worker} and {others}: the xdist group failed (conftest)"


@pytest.fixture(scope="session")
def ray_session():
    import ray

    if ray.is_initialized():  # a test file started its own; leave it alone
        yield ray
        return
    _SESSION_RAY.append(True)
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=200 * 1024**2,
        namespace="islands-tests",
        log_to_driver=False,
    )
    try:
        yield ray
    finally:
        ray.shutdown()


def subprocess_env() -> dict[str, str]:
    """The test process's environment minus anything that points at a Ray cluster."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONWARNINGS"] = "ignore"
    return env


def joining(ray) -> tuple[list[str], dict[str, str]]:
    """Launcher flags and environment with which a subprocess joins the session's Ray (no
    Ray start of its own): its GCS address, and the token an explicit address needs
    (ray-notes)."""
    return (["--address", ray.get_runtime_context().gcs_address],
            {**subprocess_env(), "RAY_AUTH_MODE": "token"})


def run_cluster_script(name: str, timeout: float = 600) -> dict:
    """Run ``tests/<name>`` (a script with a Ray cluster of its own) and return its JSON
    line: the last one that starts with ``{"stop_reason"`` (Ray may print its own lines,
    a removed node "marked dead", after it)."""
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / name)], cwd=ROOT,
                          env=subprocess_env(), capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-4000:])
    return json.loads(next(line for line in proc.stdout.splitlines()[::-1]
                           if line.startswith('{"stop_reason"')))


def virtual_options(tmp_path: Path, env: str, s_per_step: float = 1e-4) -> dict:
    """Launcher options for a run on the virtual clock over this 2-core machine's cluster
    file, at ``s_per_step`` seconds per env step (a calibration written, not measured): the
    loop's logic with real episodes, in an order of events no machine's load changes."""
    cal = tmp_path / f"calibration-{env.replace(':', '-')}-{s_per_step:g}.json"
    cal.write_text(json.dumps({"env": env, "s_per_step": s_per_step}))
    return {"runtime": "virtual", "cluster": str(ROOT / "cluster" / "laptop.yaml"),
            "calibration": str(cal)}


HANG_S = 180.0  # time budget of a run that stops on a condition: only a guard against a hang
MET = "condition met"  # the stop reason of such a run


def stop_when(arch, holds):
    """An ``on_report`` for ``arch.run`` that ends the run as a budget would (stop reason
    ``MET``) once ``holds(rows)`` is true for the rows so far: a test's outcome then rests
    on what the islands did, not on how many generations a clock allowed on a loaded
    machine (the config's time budget, ``HANG_S``, only guards against a hang)."""
    rows: list[dict] = []

    def on_report(row, status):
        rows.append(row)
        if holds(rows):
            arch.request_stop(MET)

    return on_report


def last_row(rows: list[dict], island: int) -> dict | None:
    """The latest row of ``island`` among ``rows``; None before its first report."""
    return next((r for r in reversed(rows) if r["island"] == island), None)


def run_module(module: str, *args: str, timeout: float = 300,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=ROOT, env=env or subprocess_env(),
        capture_output=True, text=True, timeout=timeout,
    )


# A small but complete CartPole run: 2 islands, solved in a few seconds of evolution.
CLI_ARGS = (
    "--islands", "2", "--env", "CartPole-v1", "--strategy", "cmaes,ga", "--popsize", "12",
    "--episodes", "1", "--max-episode-steps", "200", "--generations", "20",
    "--migration-interval", "2", "--target", "none", "--test-episodes", "10",
    "--seed", "3", "--log-interval", "1",
    # restarts end to end: a window of 2 generations fires within the 20 (CartPole's
    # returns flatten at the 200-step limit), so the outputs carry strategy restarts
    "--restart", "hof", "--restart-patience", "2",
    # immigrants screened by the receiver on 2 fresh episodes beside its center
    "--migrant-episodes", "2",
)


@pytest.fixture(scope="session")
def cli_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "run"
    proc = run_module("islands.launch", *CLI_ARGS, "--out", str(out), timeout=400)
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    return out, proc
