"""Checkpoints: atomic writes (local and pyarrow.fs), interrupt -> final checkpoint, resume."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT, joining, subprocess_env

from islands.persistence.storage import CHECKPOINT_FORMAT, Storage

TREE = {"format": CHECKPOINT_FORMAT, "kind": "island", "index": 0,
        "x": np.arange(5.0), "rng": {"state": 12345678901234567890, "inc": 3}}

# A child process writes checkpoint v1, then dies (os._exit) in the middle of writing v2.
CRASH = textwrap.dedent("""
    import os, sys
    import numpy as np
    from islands.persistence import plainstate
    from islands.persistence.storage import CHECKPOINT_FORMAT, Storage

    uri, mode = sys.argv[1], sys.argv[2]
    st = Storage(uri)
    st.save("island-00.npz", {"format": CHECKPOINT_FORMAT, "v": 1, "x": np.ones(1000)})

    def die_half_way(f, data):
        f.write(data[: len(data) // 2])
        f.flush()
        os._exit(1)

    if mode == "local":
        real = plainstate._write
        def _write(f, tree):
            import io
            buf = io.BytesIO()
            real(buf, tree)
            die_half_way(f, buf.getvalue())
        plainstate._write = _write
    else:
        class Dying:
            def __init__(self, s): self.s = s
            def __enter__(self): return self
            def __exit__(self, *a): self.s.close()
            def write(self, data): die_half_way(self.s, data)
        class FS:
            def __init__(self, fs): self.fs = fs
            def __getattr__(self, k): return getattr(self.fs, k)
            def open_output_stream(self, p): return Dying(self.fs.open_output_stream(p))
        st.fs = FS(st.fs)
    st.save("island-00.npz", {"format": CHECKPOINT_FORMAT, "v": 2, "x": np.zeros(1000)})
""")


@pytest.mark.parametrize("scheme", ["local", "uri"])
def test_round_trip_and_a_crash_mid_write_keeps_the_previous_checkpoint(tmp_path, scheme):
    uri = str(tmp_path / "ck") if scheme == "local" else f"file://{tmp_path}/ck"
    st = Storage(uri)
    st.save("t.npz", TREE)
    back = st.load("t.npz")
    assert back["rng"] == TREE["rng"] and np.array_equal(back["x"], TREE["x"])
    assert st.load("missing.npz") is None

    proc = subprocess.run([sys.executable, "-c", CRASH, uri, scheme], cwd=ROOT,
                          env=subprocess_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr[-2000:]
    ck = st.load("island-00.npz")  # the previous one, whole
    assert ck["v"] == 1 and np.array_equal(ck["x"], np.ones(1000))
    # The half-written temp file never replaced it (and is not taken for a checkpoint).
    leftovers = [p.name for p in (tmp_path / "ck").iterdir()]
    assert "island-00.npz" in leftovers
    if scheme == "local":  # (pyarrow's stream may not have reached the disk at all)
        assert any(n.startswith(".tmp") for n in leftovers)


def test_a_corrupt_or_foreign_file_is_refused_with_one_line(tmp_path):
    st = Storage(str(tmp_path))
    (tmp_path / "island-00.npz").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ValueError, match="corrupt") as e:
        st.load("island-00.npz")
    assert "\n" not in str(e.value)
    st.save("coordinator.npz", {"format": "something-else/1"})
    with pytest.raises(ValueError, match="not an islands checkpoint"):
        st.load("coordinator.npz")


# ---- resume continues exactly ---------------------------------------------------------


@pytest.mark.parametrize("strategy", ["cmaes", "openai-es"])
def test_an_envpool_island_resumed_from_a_checkpoint_continues_bit_identically(
        tmp_path, strategy):
    """Island A runs 4 generations (checkpoints at 2 and 4); island B runs 2, and C resumes
    B's checkpoint for 2 more: C must end where A ended, fitness for fitness -- EnvPool
    episodes included, whose generators carry over between calls unless restarted."""
    from envs import EvalSpec
    from islands.island.core import IslandCore
    from islands.persistence.checkpointing import CheckpointSpec
    from islands.planning import IslandSpec

    spec = IslandSpec(index=0, strategy=strategy, popsize=6, sigma=0.5, episodes=3)
    kw = EvalSpec(env_id="CartPole-v1", backend="envpool", policy="mlp",
                  policy_options={"hidden": (4,)})

    def core(d, load=False):
        return IslandCore(spec, kw, run_seed=5,
                          checkpoint=CheckpointSpec(str(tmp_path / d), interval=2, load=load))

    a = core("a")
    a.evolve(2)
    a.evolve(2)
    b = core("b")
    b.evolve(2)
    b.close()
    c = core("b", load=True)
    assert c.restored_generation == 2
    c.evolve(2)
    assert c.strategy.generation == a.strategy.generation == 4
    np.testing.assert_array_equal(c._last_fitness, a._last_fitness)
    assert len(set(a._last_fitness)) > 1  # real, varied returns, not all 500
    np.testing.assert_array_equal(c.strategy.center, a.strategy.center)
    assert c.counters.env_steps == a.counters.env_steps
    a.close()
    c.close()


# ---- interrupt and resume through the CLI ------------------------------------------------
RUN_ARGS = ("--islands", "2", "--env", "CartPole-v1", "--strategy", "cmaes,openai-es",
            "--popsize", "8", "--episodes", "1", "--max-episode-steps", "100",
            "--generations", "100000", "--target", "none", "--test-episodes", "5",
            "--checkpoint-interval", "2", "--seed", "5", "--quiet", "--dashboard", "off")


def test_sigint_writes_a_final_checkpoint_and_resume_continues(tmp_path, ray_session):
    from islands.persistence import plainstate

    # a cluster's driver, as a user's on a cluster (the embedded start: test_launch.py)
    join, env = joining(ray_session)
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "islands.launch", *RUN_ARGS, *join,
                             "--out", str(out)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    ck = out / "checkpoints"
    deadline = time.monotonic() + 180
    while not ((ck / "island-01.npz").exists() and (ck / "coordinator.npz").exists()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no checkpoints appeared"
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout[-1000:], stderr[-3000:])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stop_reason"] == "interrupted"
    gens = [int(plainstate.load(ck / f"island-0{i}.npz")["strategy"]["generation"])
            for i in range(2)]
    # The final checkpoint is at least as new as the last reported generation.
    assert all(g >= int(summary["generations"][str(i)]) for i, g in enumerate(gens))
    best0 = summary["best_fitness"]
    rows0 = len(pd.read_parquet(out / "metrics.parquet"))

    # The machine's day ends: what a resume needs moves to a fresh directory (no TensorBoard
    # files), and the run goes on there to an episode budget. It must end as a run that had
    # not stopped would: at the budget, past it by at most one generation per island (the
    # episodes before the stop counted, not run again).
    from islands.experiment.keep import keep

    moved = keep(out, tmp_path / "elsewhere" / "run")
    assert not (moved / "tb").exists() and (moved / "checkpoints" / "island-01.npz").is_file()
    before_move = sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*"))
    budget = int(summary["total_episodes"]) + 40
    res = subprocess.run([sys.executable, "-m", "islands.launch", "--resume", str(moved),
                          "--max-episodes", str(budget), *join], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr[-3000:]
    assert sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*")) == before_move
    s2 = json.loads((moved / "summary.json").read_text())
    df = pd.read_parquet(moved / "metrics.parquet")
    per_gen = sum(int(df[df.island == i].sort_values("generation").episodes.diff().max())
                  for i in range(2))
    assert s2["stop_reason"] == "episode budget", s2["stop_reason"]
    # where it ran: the interrupted segment, kept with the checkpoints, and the resumed one
    segs = json.loads((moved / "segments.json").read_text())
    assert [g["stop_reason"] for g in segs] == ["interrupted", "episode budget"]
    assert segs[0]["episodes"] == summary["total_episodes"] and segs == s2["segments"]
    assert s2["ran"]["segments"] == 2 and segs[1]["episodes"] == s2["total_episodes"]
    assert budget <= s2["total_episodes"] <= budget + per_gen, (s2["total_episodes"], budget)
    assert s2["best_fitness"] >= best0
    new = df.iloc[rows0:]
    assert len(new) > 0
    for i in range(2):
        g = new[new.island == i].generation
        assert g.min() == gens[i] + 1  # goes on from the checkpoint, not from 0
        assert g.is_monotonic_increasing
        # and so does its episode count: one generation past the checkpoint's
        counted = plainstate.load(ck / f"island-0{i}.npz")["counters"]["episodes"]
        assert 0 < new[new.island == i].episodes.min() - counted <= per_gen
    assert np.all(np.diff(np.maximum.accumulate(df.sort_values("wall_s").best_so_far)) >= 0)
    assert s2["total_evals"] > summary["total_evals"]

    # A resume whose config no longer fits the checkpoints (another network size) is bad
    # input: exit 2, one line, and the run directory is left as it was.
    before = sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*"))
    bad = subprocess.run([sys.executable, "-m", "islands.launch", "--resume", str(out),
                          "--hidden", "4"], cwd=ROOT, env=subprocess_env(),
                         capture_output=True, text=True, timeout=240)
    assert bad.returncode == 2, bad.stderr[-2000:]
    last = bad.stderr.strip().splitlines()[-1]
    assert "does not fit island 0" in last and "Traceback" not in bad.stderr, last
    assert sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*")) == before


def test_a_resume_whose_policy_no_longer_fits_is_refused_before_ray_starts(tmp_path):
    """check_resume compares the policy's parameter count with the islands' checkpoints
    from the env's spaces alone, so a wrong --hidden is a one-line error at once instead of
    after Ray and the island actors have started (~15 s)."""
    import dataclasses

    from island_core import island, island_cfg

    from islands.config import ConfigError, resolve
    from islands.config.resume import check_resume
    from islands.persistence.checkpointing import CheckpointSpec

    cfg = resolve(dataclasses.replace(island_cfg(hidden="8"), out=str(tmp_path / "run")))
    core = island(cfg, CheckpointSpec(cfg.checkpoint_uri, interval=1))
    core.evolve(1)
    core.close()
    check_resume(cfg)  # the run's own config fits
    other = resolve(dataclasses.replace(cfg, hidden=(4,)))
    with pytest.raises(ConfigError) as e:
        check_resume(other)
    msg = str(e.value)
    # CartPole: 4 obs -> 8 -> 2 logits is 58 parameters; 4 -> 4 -> 2 is 30
    assert "does not fit island 0" in msg and "58 parameters" in msg and "has 30" in msg, msg
    assert "\n" not in msg
