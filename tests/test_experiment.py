"""An experiment end to end through Ray Tune on the test session's Ray: a CartPole grid of
two strategies, interrupted after the first trial (Ctrl-C, as at the end of a
machine's day), kept (``keep``: what a resume needs, no TensorBoard files) in a fresh
directory, and that copy resumed with ``Tuner.restore`` without re-running a finished trial;
then the results, the report and the notebook. Bad input: exit 2, one line, nothing
written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import joining

from islands.experiment import cli
from islands.experiment.names import CURVES, EXPERIMENT_JSON, REPORT_MD, RESULTS, RUNS_DIR
from islands.output.segments import STOPPED

ROOT = Path(__file__).resolve().parents[1]

SMOKE = {
    "name": "smoke-test",
    "question": "Does the experiment engine run a grid through Tune?",
    # checkpoints every generation, and islands slow on purpose (0.4 s per generation), so
    # the interruption finds a trial mid-run with checkpoints to continue from
    "base": {"env": "CartPole-v1", "islands": 1, "episodes": 1, "max_episode_steps": 100,
             "target": "none", "test_episodes": 3, "migration_interval": 2,
             "checkpoint_interval": 1, "island_specs": [{"slowdown_s": 0.4}], "popsize": 6},
    # two trials (one finished and one mid-run at the interruption, the fewest that show
    # both): each costs ~20 s of Tune and actor start-up for 3 s of evolution, on the
    # suite's critical path (docs/results/suite-time.md)
    "grid": {"strategy": ["cmaes", "ga"]},
    "seeds": [0],
    "budget": {"generations": 6},
}


def _summaries(exp_dir: Path) -> dict[str, float]:
    return {p.parent.name: p.stat().st_mtime_ns
            for p in (exp_dir / RUNS_DIR).glob("*/summary.json")}


def _mid_run(exp_dir: Path) -> list[str]:
    """Trials with an island checkpoint but no summary yet: interrupted mid-run."""
    return [p.name for p in (exp_dir / RUNS_DIR).glob("t*")
            if (p / "checkpoints" / "island-00.npz").exists()
            and not (p / "summary.json").exists()]


def _driver(*args: str) -> subprocess.Popen:
    """``python -m islands.experiment ...`` as a user runs it, joining the test session's
    Ray (no second Ray): Tune's driver in its own process, so it can be interrupted."""
    import ray

    join, env = joining(ray)
    return subprocess.Popen(
        [sys.executable, "-m", "islands.experiment", *args, *join], cwd=ROOT, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


@pytest.fixture(scope="module")
def experiment(tmp_path_factory, ray_session):
    tmp = tmp_path_factory.mktemp("experiment")
    f = tmp / "smoke.yaml"
    f.write_text(yaml.safe_dump(SMOKE))
    exp_dir = tmp / "exp"
    # no --max-concurrent: on the session's 2 CPUs each trial needs 2 cores to itself (its
    # island's and one for coordinator, tester and driver), so the runner runs one at a time
    first = _driver("run", str(f), "--out", str(exp_dir), "--dashboard", "off")
    deadline = time.monotonic() + 300
    while not (len(_summaries(exp_dir)) >= 1 and _mid_run(exp_dir)):
        assert time.monotonic() < deadline and first.poll() is None, \
            "no finished trial and one mid-run in 300 s"
        time.sleep(0.2)
    first.send_signal(signal.SIGINT)  # Ctrl-C
    out1, _ = first.communicate(timeout=180)
    before, mid = _summaries(exp_dir), _mid_run(exp_dir)
    # the day ends: what a resume needs moves to a fresh directory, and goes on there
    kept = tmp / "elsewhere" / "kept"
    assert cli.main(["keep", str(exp_dir), "--out", str(kept)]) == 0
    kept_files = sorted(str(p.relative_to(kept)) for p in kept.rglob("*") if p.is_file())
    second = _driver("resume", str(kept))
    out2, _ = second.communicate(timeout=600)
    return (kept, (first.returncode, out1), before, (second.returncode, out2), mid, exp_dir,
            kept_files)


def test_an_interrupted_experiment_resumes_without_rerunning_finished_trials(experiment):
    exp_dir, (code1, out1), before, (code2, out2), mid, first_dir, kept = experiment
    # the kept copy: checkpoints and records, no TensorBoard files
    assert not [f for f in kept if "events.out" in f or "/tb/" in f], kept
    assert {f"runs/{t}/checkpoints/island-00.npz" for t in mid} <= set(kept)
    # finished trials are never run again: their checkpoints stay behind
    assert not [f for f in kept if f.startswith("runs/") and f.split("/")[1] in before
                and "/checkpoints/" in f], kept
    assert all(str(exp_dir) in str(p) for p in (exp_dir / RUNS_DIR).glob("*"))
    assert len(before) == 1, out1[-3000:]  # stopped early, with a run left to do
    assert code2 == 0, out2[-3000:]
    after = _summaries(exp_dir)
    assert sorted(after) == [f"t{i:03d}" for i in range(2)]  # every trial ran, once
    assert {k: after[k] for k in before} == before  # finished ones untouched
    assert "2 runs; report:" in out2
    # the trial interrupted mid-run continued from its islands' checkpoints, to the end
    assert mid
    for t in mid:
        assert json.loads((exp_dir / RUNS_DIR / t / "trial.json").read_text())["resumed"]
        s = json.loads((exp_dir / RUNS_DIR / t / "summary.json").read_text())
        assert s["generations"]["0"] == 6 and s["stop_reason"] == "generations"
        # its record of where it ran: stopped with the driver, then resumed to the end
        # (an interrupt is a stop, closed as its last flush left it: not "raised")
        segs = [g["stop_reason"] for g in s["segments"]]
        assert segs == [STOPPED, "generations"], segs
    fresh = [t for t in after if t not in mid]
    assert not any(json.loads((exp_dir / RUNS_DIR / t / "trial.json").read_text())["resumed"]
                   for t in fresh)
    # the finished trial ran once, in one segment (the resume never touched it)
    assert fresh == sorted(before) and all(
        len(json.loads((exp_dir / RUNS_DIR / t / "summary.json").read_text())["segments"])
        == 1 for t in fresh)


def test_results_hold_one_row_per_run_with_the_grid_and_the_outcome(experiment):
    import pandas as pd

    exp_dir = experiment[0]
    res = pd.read_parquet(exp_dir / RESULTS)
    assert len(res) == 2 and sorted(res.trial) == [f"t{i:03d}" for i in range(2)]
    assert sorted(zip(res.strategy, res.seed, strict=True)) == sorted(
        (s, 0) for s in ("cmaes", "ga"))
    assert (res.popsize == 6).all()
    assert (res.total_evals > 0).all() and res.best_fitness.notna().all()
    assert (res.stop_reason == "generations").all()
    # target "none": nothing reached a test, yet every summary says whether it confirmed
    assert res.confirmed.notna().all() and not res.confirmed.astype(bool).any()
    assert not res.solved.any() and not res.solved_at_total.any()
    curves = pd.read_parquet(exp_dir / CURVES)
    # (a trial killed before its first metrics flush and resumed at its generation limit
    # has no report rows: no curve)
    mid = experiment[4]
    assert set(res.trial) - set(mid) <= set(curves.trial) <= set(res.trial)
    # each trial's islands ran in their own namespace, on the whole PG: 6 generations
    gens = {t: json.loads((exp_dir / RUNS_DIR / t / "summary.json").read_text())
            ["generations"]["0"] for t in res.trial}
    assert set(gens.values()) == {6}


def test_trials_ran_one_at_a_time_on_two_cores(experiment):
    import pandas as pd

    exp_dir = experiment[0]
    res = pd.read_parquet(exp_dir / RESULTS).sort_values("started_at")
    assert (res["concurrency"] == 1).all()  # each trial had the machine to itself
    assert (res["started_at"].iloc[1:].to_numpy() >= res["ended_at"].iloc[:-1].to_numpy()).all()
    assert (res["cpus_per_island"] == 2.0).all() and not res["shared_cpus"].any()  # 1 island
    md = (exp_dir / REPORT_MD).read_text()
    assert "trials at once" in md and "## Provenance" in md and "commit `" in md


def test_tune_and_every_run_leave_tensorboard_scalars(experiment):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    exp_dir, first_dir = experiment[0], experiment[5]
    runs = sorted((exp_dir / RUNS_DIR).glob("t*"))
    assert len(runs) == 2
    for run in runs:  # the launcher's own scalars, per island (the first directory's for
        # a trial that finished before the experiment was kept elsewhere)
        tb = run / "tb" if (run / "tb").is_dir() else first_dir / RUNS_DIR / run.name / "tb"
        ev = EventAccumulator(str(tb / "island-00")).Reload()
        assert ev.Scalars("fitness/best_so_far"), run.name
    # Tune's TensorBoard logger: one event file per trial with the reported results
    # (before the keep in the first directory, after it in the kept one)
    logged = {d.name for root in (first_dir, exp_dir) for d in (root / "tune").glob("run_*")
              if d.is_dir() and "ray/tune/best_fitness"
              in EventAccumulator(str(d)).Reload().Tags()["scalars"]}
    assert len(logged) == 2, logged


def test_the_report_has_the_table_and_its_figures(experiment):
    exp_dir = experiment[0]
    md = (exp_dir / REPORT_MD).read_text()
    assert "Does the experiment engine run a grid through Tune?" in md
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    # one row per configuration
    assert [sum(f"| {s} |" in r for r in rows) for s in ("cmaes", "ga")] == [1] * 2
    figures = [line.split("](")[1].rstrip(")") for line in md.splitlines() if "![" in line]
    assert figures and all((exp_dir / f).is_file() for f in figures)


def test_the_analysis_notebook_runs_on_the_experiment(experiment):
    import nbclient
    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / "experiment_analysis.ipynb", as_version=4)
    os.environ["EXPERIMENT_DIR"] = str(experiment[0])
    try:
        nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    finally:
        del os.environ["EXPERIMENT_DIR"]
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert images


# ---- bad input: exit 2, one line, nothing written -------------------------------------------
@pytest.mark.parametrize("text, argv, message", [
    ("name: x\nbase: {env: CartPole-v1}\ngrid: {hiden: [[8]]}\nseeds: [0]\n", [],
     "unknown field 'hiden' in grid (did you mean 'hidden'?)"),
    ("name: x\nbase: {env: CartPole-v1\n", [], "line"),
    ("name: x\nbase: {env: CartPole-v1}\nseeds: [0]\n", ["--scale", "huge"],
     "unknown scale 'huge'"),
    ("name: x\nbase: {env: CartPole-v1, popsize: 1}\nseeds: [0]\n", [],
     "--popsize must be at least 2, got 1"),
])
def test_bad_experiment_input_exits_2_with_one_line(tmp_path, capsys, text, argv, message):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    out = tmp_path / "exp"
    code = cli.main(["run", str(f), "--out", str(out), *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err
    assert err.startswith("islands.experiment: error: ")
    assert not out.exists()


def test_resume_or_report_of_a_directory_that_is_not_an_experiment(tmp_path, capsys):
    (tmp_path / "stuff").mkdir()
    for command in ("resume", "report"):
        assert cli.main([command, str(tmp_path / "stuff")]) == 2
        err = capsys.readouterr().err.strip()
        assert "is not an experiment directory (no experiment.json" in err
    assert list((tmp_path / "stuff").iterdir()) == []
    assert cli.main(["keep", str(tmp_path / "stuff"), "--out", str(tmp_path / "kept")]) == 2
    err = capsys.readouterr().err.strip()
    assert "neither an experiment directory" in err and "nor a run directory" in err, err
    assert "\n" not in err and not (tmp_path / "kept").exists()


def test_run_refuses_a_used_directory(tmp_path, capsys):
    f = tmp_path / "ok.yaml"
    f.write_text(yaml.safe_dump(SMOKE))
    out = tmp_path / "exp"
    out.mkdir()
    (out / EXPERIMENT_JSON).write_text("{}")
    assert cli.main(["run", str(f), "--out", str(out)]) == 2
    assert "already exists and is not empty" in capsys.readouterr().err
