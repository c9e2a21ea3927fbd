"""islands from Python (``islands.run``, ``islands.Result``) and the ``islands`` command."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
import yaml
from conftest import ROOT, subprocess_env

import islands
from islands.api import prepare
from islands.config import ConfigError

QUICK = dict(env="CartPole-v1", islands=2, popsize=8, episodes=1, max_episode_steps=100,
             generations=4, target="none", test_episodes=5, quiet=True)


def test_a_run_from_python_returns_its_genome_policy_and_metrics(ray_session, tmp_path):
    res = islands.run(**QUICK, seed=1, out=str(tmp_path / "run"), namespace="t-api")
    assert isinstance(res, islands.Result) and res.run_dir == str(tmp_path / "run")
    assert res.stop_reason == "generations" and not res.solved
    assert res.summary["generations"] == {"0": 4, "1": 4}
    assert res.best.shape == (res.summary["num_params"],) and res.best.dtype == np.float64
    assert res.best_fitness == res.summary["best_fitness"]
    m = res.metrics  # one row per island report
    assert sorted(set(m.island)) == [0, 1] and m.generation.max() == 4
    # the policy drives a Gymnasium env as the run's test did
    env = gymnasium.make("CartPole-v1", max_episode_steps=100)
    ctrl = res.policy()
    obs, _ = env.reset(seed=0)
    ctrl.reset()
    action = ctrl(obs)
    assert env.action_space.contains(action)
    again = res.evaluate(episodes=3, seed=7)
    assert again["episodes"] == 3 and np.isfinite(again["mean"])

    # a second run in the same process, from the first one's Config with options on top,
    # on the cluster it joins (the session's: 2 CPUs), as many 1-CPU islands as it holds
    cfg = prepare(str(tmp_path / "run" / "config.yaml"))
    gcs = ray_session.get_runtime_context().gcs_address
    res2 = islands.run(dataclasses.replace(cfg, out=str(tmp_path / "run2"), islands="fill",
                                           cpus_per_island=1.0),
                       seed=2, namespace="t-api-2", address=gcs)
    assert res2.summary["generations"] == {"0": 4, "1": 4}
    rerun = yaml.safe_load((tmp_path / "run2" / "config.yaml").read_text())
    assert rerun["seed"] == 2 and rerun["islands"] == 2  # the count, not "fill": reruns alike
    assert not np.array_equal(res2.best, res.best)


def test_gymnasium_env_classes_run_from_python_by_name_or_by_value(ray_session, tmp_path):
    from envs.testing import LineWorld

    class ShortLineWorld(LineWorld):  # defined here: no importable name, sent by value
        def step(self, action):
            obs, reward, term, trunc, info = super().step(action)
            return obs, reward, term, trunc or self.t >= 5, info

    cls_options = dict(islands=1, popsize=8, generations=2, target="none", test_episodes=2,
                       quiet=True)
    res = islands.run(env=LineWorld, **cls_options, out=str(tmp_path / "run"),
                      namespace="t-api-env")
    assert res.summary["env"] == "envs.testing:LineWorld"
    assert res.summary["generations"] == {"0": 2} and res.best.ndim == 1
    res = islands.run(env=ShortLineWorld, **cls_options, out=str(tmp_path / "local"),
                      namespace="t-api-env-2")
    name = "islands_user:test_gymnasium_env_classes_run_from_python_by_name_or_by_" \
        "value__locals__ShortLineWorld"
    assert res.summary["env"] == name and res.summary["generations"] == {"0": 2}
    assert res.evaluate(episodes=2, seed=0)["mean_length"] <= 5  # its own step ran


@pytest.mark.parametrize("options, message", [
    ({"popsiz": 8}, "unknown config key 'popsiz'; did you mean 'popsize'?"),
    ({"popsize": 1}, "--popsize must be at least 2, got 1"),
    ({"env": "CartPole-v9"}, "CartPole-v9"),
])
def test_bad_options_raise_one_line_before_anything_starts(tmp_path, options, message):
    with pytest.raises(ConfigError) as e:
        islands.run(**{**QUICK, **options}, out=str(tmp_path / "run"))
    assert message in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "run").exists()


def _islands(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("islands", path=str(ROOT / ".venv" / "bin")) or shutil.which("islands")
    cmd = [exe] if exe else [sys.executable, "-m", "islands.console"]
    return subprocess.run([*cmd, *args], cwd=ROOT, env=subprocess_env(), capture_output=True,
                          text=True, timeout=120)


def test_the_islands_command_is_installed_and_names_its_subcommands():
    assert shutil.which("islands") or (ROOT / ".venv" / "bin" / "islands").exists(), \
        "no islands console script: pip install -e . installs it (pyproject [project.scripts])"
    v = _islands("--version")
    assert v.returncode == 0 and v.stdout.strip() == f"islands {islands.__version__}"
    h = _islands("launch", "--help")
    assert h.returncode == 0 and "--migration-interval" in h.stdout
    top = _islands()
    assert top.returncode == 2 and all(c in top.stdout for c in ("launch", "status",
                                                                  "evaluate", "experiment"))
    bad = _islands("lunch")
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "islands: error: unknown command 'lunch' (choose from launch, status, evaluate, "
        "experiment)")
    missing = _islands("evaluate", "no-such-run")
    assert missing.returncode == 2 and "no solution file" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_a_tune_sweep_of_islands_options_reports_the_archipelagos_best(ray_session, tmp_path):
    from ray import tune

    tuner = tune.Tuner(
        islands.trainable(**{**QUICK, "islands": 1, "generations": 2}),
        param_space={"seed": tune.grid_search([0, 1])},
        tune_config=tune.TuneConfig(metric="best_fitness", mode="max"),
        run_config=tune.RunConfig(storage_path=str(tmp_path), name="sweep", verbose=0))
    grid = tuner.fit()
    assert len(grid) == 2 and not grid.errors, grid.errors
    finals = [r.metrics for r in grid]
    assert all(m["final"] and np.isfinite(m["best_fitness"]) for m in finals), finals
    assert sorted(r.config["seed"] for r in grid) == [0, 1]
    best = grid.get_best_result()
    assert best.metrics["best_fitness"] == max(m["best_fitness"] for m in finals)
    assert best.metrics["total_evals"] >= 2 * 8  # two generations of 8 (and re-evaluations)


def test_a_trainable_with_an_unknown_option_is_refused_at_once():
    with pytest.raises(ConfigError, match="unknown config key 'popsiz'"):
        islands.trainable(env="CartPole-v1", popsiz=8)


def test_the_from_python_notebook_runs_a_function_and_an_env_of_its_own(ray_session,
                                                                         monkeypatch):
    """notebooks/from_python.ipynb, run as a user would (its kernel connected to this
    session's Ray instead of starting a second one): the function and the env class of its
    cells reach the islands, its pictures draw, nothing errs."""
    import nbclient
    import nbformat

    path = ROOT / "notebooks" / "from_python.ipynb"
    nb = nbformat.read(path, as_version=4)
    # a bare `import envpool` (tests do it; islands goes through envs.spaces.import_envpool)
    # sets MPLBACKEND=Agg here, which the kernel would inherit instead of its inline backend
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.setenv("ISLANDS_ADDRESS", ray_session.get_runtime_context().gcs_address)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(str(o.get("text", "")) for o in outputs)
    assert "problem:islands_user:rastrigin" in text and "stopped by target" in text
    assert "solved in" in text
    assert "islands_user:Reach" in text and "final distance to the goal" in text
    # progress: one table per run, redrawn in place (its last state is what stays)
    tables = [o["data"]["text/plain"] for o in outputs if o.output_type == "display_data"
              and "global best" in o["data"].get("text/plain", "")]
    assert len(tables) == 2 and all("island  1" in t for t in tables), tables
    assert "global best cost" in tables[0]  # the function's own scale: its cost
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 2
