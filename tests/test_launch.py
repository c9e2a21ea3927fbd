"""The launcher as users run it: flags, YAML, run directory, evaluate, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import joining, run_module
from PIL import Image

from islands import launch
from islands.config import FIELDS, build_parser, parse_args, resolve
from islands.envdefaults import env_defaults
from islands.messages import RunStatus
from islands.output.rundir import METRIC_COLUMNS, SUMMARY_KEYS
from islands.persistence.solution import load_solution


def test_help_documents_every_flag():
    text = build_parser().format_help()
    for name in FIELDS:
        assert "--" + name.replace("_", "-") in text, name
    # Every field has its own one-line doc.
    assert all(f.metadata["help"] for f in FIELDS.values())


def test_cli_overrides_yaml_and_yaml_overrides_defaults(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("islands: 3\nenv: LunarLander-v3\nhidden: [8, 8]\ntopology: full\n")
    cfg = resolve(parse_args(["--config", str(path), "--islands", "2"]))
    assert (cfg.islands, cfg.env, cfg.hidden, cfg.topology) == (2, "LunarLander-v3", [8, 8],
                                                                "full")
    row = env_defaults("LunarLander-v3")
    assert (cfg.popsize, cfg.target) == (row["popsize"], row["target"])  # from the env table


@pytest.mark.own_ray
def test_cli_run_writes_every_file_with_documented_columns(cli_run):
    out, proc = cli_run
    for name in ("config.yaml", "metrics.parquet", "summary.json", "solution.npz",
                 "solution.json", "fitness.png"):
        assert (out / name).is_file(), name
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert last["run_dir"] == str(out)
    assert "island  0 cmaes" in proc.stdout  # plain progress lines (stdout is not a TTY)
    # the default run starts the dashboard and says where it is, first
    first = proc.stdout.splitlines()[0]
    assert first.startswith("Ray dashboard: http://127.0.0.1:"), first
    assert "Traceback" not in proc.stderr and "WARNING" not in proc.stderr, proc.stderr[-2000:]

    df = pd.read_parquet(out / "metrics.parquet")
    assert set(METRIC_COLUMNS) <= set(df.columns)
    assert set(df.island) == {0, 1} and set(df.strategy) == {"cmaes", "ga"}
    for _, g in df.groupby("island"):
        assert g.generation.max() == 20
        assert g.evals.is_monotonic_increasing and g.immigrants.is_monotonic_increasing
        assert g.center_norm.iloc[0] > 0  # the center has left the zero start
    # the step size per row: CMA-ES adapts its own, the GA keeps its mutation strength
    assert (df.sigma > 0).all()
    assert df[df.strategy == "cmaes"].sigma.nunique() > 1
    assert df[df.strategy == "ga"].sigma.nunique() == 1
    summary = json.loads((out / "summary.json").read_text())
    assert set(SUMMARY_KEYS) <= set(summary)
    assert summary["islands"] == 2 and summary["env"] == "CartPole-v1"
    assert summary["test_episodes"] == 10 and summary["solved"] is False  # --target none
    assert summary["total_evals"] == int(df.groupby("island").evals.max().sum())
    assert summary["stop_reason"] == "generations"
    assert summary["island_restarts"] == [0, 0]  # no process died
    # screened migrants: some in, and every one counted either way, in both files
    last = df.groupby("island").last()
    assert summary["immigrants"] == int(last.immigrants.sum()) > 0
    assert summary["immigrants_screened_out"] == int(last.screened_out.sum())
    restarts = [int(df[df.island == i].restarts.iloc[-1]) for i in (0, 1)]
    assert summary["strategy_restarts"] == restarts and sum(restarts) >= 1, restarts

    sol = load_solution(str(out))
    assert sol["params"].shape == (summary["num_params"],) and sol["params"].dtype == np.float64
    assert sol["policy"]["kind"] == "mlp" and sol["env"]["env_id"] == "CartPole-v1"
    with Image.open(out / "fitness.png") as im:
        assert im.format == "PNG" and im.size[0] > 300


@pytest.mark.own_ray
def test_cli_run_leaves_tensorboard_scalars_per_island_and_for_the_archipelago(cli_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out, _ = cli_run
    df = pd.read_parquet(out / "metrics.parquet")
    for i in (0, 1):
        ev = EventAccumulator(str(out / "tb" / f"island-{i:02d}")).Reload()
        best = ev.Scalars("fitness/best_so_far")
        mine = df[df.island == i]
        assert len(best) == len(mine)  # one point per report, at the archipelago's steps
        assert [e.step for e in best] == mine.total_env_steps.tolist()
        assert np.allclose([e.value for e in best], mine.best_so_far, rtol=1e-6)
        assert {"fitness/max", "fitness/mean", "search/sigma"} <= set(ev.Tags()["scalars"])
    arch = EventAccumulator(str(out / "tb" / "archipelago")).Reload()
    hof = [e.value for e in arch.Scalars("fitness/best")]  # from the coordinator's 1st reply
    assert 0 < len(hof) <= len(df) and hof == sorted(hof)  # the hall of fame never falls back
    summary = json.loads((out / "summary.json").read_text())
    assert hof[-1] == pytest.approx(summary["best_fitness"], rel=1e-6)
    final = arch.Scalars("test/final_mean")  # the solution's test, at the last step
    assert [e.value for e in final] == [pytest.approx(summary["test_mean"], rel=1e-6)]
    assert final[0].step == df.total_env_steps.max()


def test_wandb_is_a_one_line_error_without_the_package_else_an_offline_run(tmp_path, capsys,
                                                                           monkeypatch):
    from islands.config.checks import wandb_missing
    from islands.output.scalars import ScalarLog

    if wandb_missing():
        out = tmp_path / "run"
        assert launch.main(["--wandb", "islands-test", "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert err == ("islands.launch: error: --wandb: the wandb package is not installed "
                       "(pip install -e '.[wandb]')")
        assert not out.exists()
        return
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    log = ScalarLog(tmp_path, 1, tensorboard=False, wandb_project="islands-test",
                    config={"env": "CartPole-v1"})
    log.log({"island": 0, "total_env_steps": 100, "fitness_max": 9.0},
            RunStatus(hof={"fitness": 9.0}))
    log.close()
    runs = list((tmp_path / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(runs) == 1 and runs[0].stat().st_size > 0


@pytest.mark.own_ray
def test_config_yaml_reruns_to_the_same_resolved_config(cli_run):
    out, _ = cli_run
    written = yaml.safe_load((out / "config.yaml").read_text())
    again = resolve(parse_args(["--config", str(out / "config.yaml")]))
    assert again.to_yaml_dict() == written
    assert written["strategy"] == "cmaes,ga" and written["max_episode_steps"] == 200


@pytest.mark.own_ray
def test_evaluate_reports_json_and_renders_a_gif(cli_run, tmp_path):
    out, _ = cli_run
    gif = tmp_path / "policy.gif"
    proc = run_module("islands.evaluate", str(out), "--episodes", "5", "--gif", str(gif))
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["episodes"] == 5 and np.isfinite(res["mean"]) and res["std"] >= 0
    summary = json.loads((out / "summary.json").read_text())
    assert res["mean"] > 0.5 * summary["test_mean"]  # the same genome, other episodes
    with Image.open(gif) as im:
        # (Pillow merges identical consecutive frames, so n_frames <= gif_frames.)
        assert im.format == "GIF" and 5 < im.n_frames <= res["gif_frames"]


# ---- bad input: exit code 2, one line, nothing created ------------------------------------
@pytest.mark.parametrize(
    "args, expect",
    [
        (["--env", "CartPole-v9"], "did you mean"),
        (["--strategy", "cmaes,cma-es"], "unknown strategy 'cma-es'"),
        (["--islands", "0"], "--islands must be positive"),
        (["--episodes", "0"], "--episodes must be positive"),
        (["--policy", "cnn"], "--policy cnn needs image observations"),
        (["--topology", "star"], "--topology"),
        (["--hidden", "64,x"], "--hidden"),
        (["--policy", "rnn"], "--policy: unknown value 'rnn'"),
        (["--popsize", "0"], "--popsize must be positive"),
        (["--popsize", "-3"], "--popsize must be positive"),
        (["--max-restarts", "-2"], "--max-restarts"),
        (["--debug-exit-island", "1"], "go together"),
        (["--resume", "/nonexistent/run"], "is not a directory"),
        (["--policy-options", '{"hiden": [8]}'], "unknown key 'hiden' for policy 'mlp'"),
    ],
)
def test_bad_flags_exit_2_with_one_line(args, expect, tmp_path, capsys):
    out = tmp_path / "run"
    code = launch.main([*args, "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and expect in err, err
    assert not out.exists()


def test_a_non_empty_out_directory_exits_2_and_keeps_its_files(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("someone's work")
    assert launch.main(["--out", str(out), "--generations", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "already exists and is not empty" in err, err
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_bad_yaml_exits_2_in_a_subprocess_without_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("islands: 2\nenv: [CartPole-v1\n")
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("islands: 2\nmigration_intervall: 3\n")
    for path, expect in ((bad, "malformed YAML"), (unknown, "did you mean 'migration_interval'")):
        proc = run_module("islands.launch", "--config", str(path), "--out",
                          str(tmp_path / "run"))
        err = proc.stderr.strip()
        assert proc.returncode == 2
        assert len(err.splitlines()) == 1 and expect in err and "Traceback" not in err, err
    assert not Path(tmp_path / "run").exists()


def test_resume_of_a_non_run_or_a_corrupt_or_mismatched_checkpoint_exits_2(tmp_path, capsys):
    from islands.persistence.storage import CHECKPOINT_FORMAT, Storage

    def fails(run_dir, expect):
        before = sorted((p.name, p.stat().st_mtime_ns) for p in run_dir.rglob("*"))
        code = launch.main(["--resume", str(run_dir)])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1 and expect in err, err
        # Nothing in the run directory was touched.
        assert sorted((p.name, p.stat().st_mtime_ns) for p in run_dir.rglob("*")) == before

    not_a_run = tmp_path / "notes"
    not_a_run.mkdir()
    (not_a_run / "readme.txt").write_text("hello")
    fails(not_a_run, "is not a run directory")

    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    cfg = resolve(parse_args(["--islands", "2", "--popsize", "8"]))
    (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg.to_yaml_dict()))
    fails(run_dir, "no checkpoints")
    (run_dir / "checkpoints" / "island-00.npz").write_bytes(b"PK\x03\x04garbage")
    fails(run_dir, "is corrupt")
    (run_dir / "checkpoints" / "island-00.npz").unlink()
    Storage(str(run_dir / "checkpoints")).save(
        "coordinator.npz", {"format": CHECKPOINT_FORMAT, "kind": "coordinator", "n": 5})
    fails(run_dir, "is for 5 islands, the config has 2")


def test_more_resources_than_the_cluster_has_exits_2_naming_the_resource(tmp_path,
                                                                          ray_session):
    # a driver joining a cluster (the session's Ray), as on a cluster users start
    join, env = joining(ray_session)
    out = tmp_path / "run"
    proc = run_module("islands.launch", "--islands", "2", "--popsize", "8",
                      "--resources-per-island", "big_node=1", "--dashboard", "off",
                      "--out", str(out), *join, env=env)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-2000:]
    last = err[-1]
    assert "big_node" in last and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert not out.exists()


def test_every_registry_strategy_runs_from_the_launcher_openai_es_nt_included(
        ray_session, tmp_path, capsys):
    # In-process on the session's Ray (main() uses an initialized Ray as it is): the same
    # path as `python -m islands.launch`, without starting a second Ray.
    out = tmp_path / "nt"
    code = launch.main(["--islands", "2", "--env", "CartPole-v1", "--strategy",
                        "openai-es-nt,cmaes", "--popsize", "8", "--episodes", "1",
                        "--max-episode-steps", "100", "--generations", "6", "--target", "none",
                        "--test-episodes", "5", "--namespace", "t-nt", "--quiet",
                        "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    df = pd.read_parquet(out / "metrics.parquet")
    assert set(df.strategy) == {"openai-es-nt", "cmaes"}
    assert df[df.strategy == "openai-es-nt"].generation.max() == 6
    summary = json.loads((out / "summary.json").read_text())
    assert summary["strategies"] == ["openai-es-nt", "cmaes"]
    assert summary["stop_reason"] == "generations"
