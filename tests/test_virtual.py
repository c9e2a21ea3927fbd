"""The virtual-time runtime (``--runtime virtual``): the real loop, island and coordinator
cores and tester on a virtual clock, in this process, without Ray. Replays are exact; an
island slow on purpose delays only its own reports; the calibration is measured, stored
and used; bad cluster files are one-line errors."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import yaml

from islands import launch
from islands.api import execute, prepare
from islands.config import ConfigError
from islands.persistence.solution import load_solution
from islands.runtime import virtual

CLUSTER = {  # two node types, one at half speed, and some stragglers
    "cluster_name": "t", "provider": {"type": "aws"}, "max_workers": 3,
    "head_node_type": "head",
    "available_node_types": {
        "head": {"resources": {"CPU": 0}, "node_config": {}},
        "fast": {"resources": {"CPU": 1}, "node_config": {}, "max_workers": 2},
        "slow": {"resources": {"CPU": 1}, "node_config": {}, "max_workers": 1}},
    "metadata": {"islands_virtual": {"speed": {"slow": 0.5},
                                     "straggler": {"p": 0.2, "factor": 3}}},
}
# columns that come from this machine's clock, not the virtual one
REAL = {"evals_per_s", "steps_per_s", "peak_rss_mb", "island_wall_s"}


def _cluster(tmp_path, doc=CLUSTER, name="cluster.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _run(out, cluster, **kw):
    opts = dict(env="CartPole-v1", islands=3, popsize=8, episodes=1, max_episode_steps=200,
                max_episodes=480, target="none", test_episodes=5, migration_interval=1,
                runtime="virtual", cluster=cluster, out=str(out), tensorboard=False,
                quiet=True, seed=11) | kw
    summary = execute(prepare(**opts), display=False)
    metrics = pd.read_parquet(out / "metrics.parquet")
    return summary, metrics


def test_a_replay_from_the_seed_cluster_and_calibration_is_identical(tmp_path, monkeypatch):
    cluster = _cluster(tmp_path)
    s1, m1 = _run(tmp_path / "a", cluster)  # calibrates on this machine
    cal = tmp_path / "a" / "calibration.json"
    rec = json.loads(cal.read_text())
    assert rec["env"] == "CartPole-v1" and rec["s_per_step"] > 0 and rec["env_steps"] > 0
    assert s1["runtime"] == "virtual" and s1["calibration"] == rec
    assert s1["cluster"]["digest"] and s1["cluster"]["cpus"] == 3
    # ... and on another number of evaluator threads here (one, against this machine's
    # cores): the replay is the seed's, cluster file's and calibration's, not this machine's
    monkeypatch.setattr(virtual, "THREADS", 1 if virtual.THREADS > 1 else 2)
    s2, m2 = _run(tmp_path / "b", cluster, calibration=str(cal))
    # the same events on the same clock: every report, its virtual time and its numbers
    cols = [c for c in m1.columns if c not in REAL]
    pd.testing.assert_frame_equal(m1[cols], m2[cols])
    for k in ("total_episodes", "total_evals", "best_fitness", "wall_s", "virtual_events",
              "hall_of_fame", "stop_reason"):
        assert s1[k] == s2[k], k
    a, b = (load_solution(str(tmp_path / d)) for d in "ab")
    assert np.array_equal(a["params"], b["params"])
    # immigrants moved, and the virtual clock is not this machine's
    assert m1.immigrants.sum() > 0 and s1["wall_s"] != pytest.approx(s1["real_s"], rel=0.5)


def test_an_island_slow_on_purpose_delays_only_its_own_reports(tmp_path):
    """On a task whose every generation takes the same steps (sphere: one step per genome),
    with no latency and a free coordinator, the other islands report at exactly the same
    virtual times whether island 0 sleeps 0.05 s per generation or not."""
    doc = dict(CLUSTER, metadata={"islands_virtual": {"latency_s": 0, "coordinator_s": 0}})
    doc["available_node_types"] = {**CLUSTER["available_node_types"],
                                   "slow": {"resources": {"CPU": 1}, "node_config": {},
                                            "max_workers": 1}}
    cluster = _cluster(tmp_path, doc)
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"env": "sphere:10", "s_per_step": 1e-3}))
    kw = dict(env="sphere:10", generations=12, max_episodes=None, calibration=str(cal),
              test_episodes=1, confirm_episodes=0)
    _, even = _run(tmp_path / "even", cluster, **kw)
    _, slow = _run(tmp_path / "slow", cluster, island_specs=[{"slowdown_s": 0.05}, {}, {}],
                   **kw)
    for i in (1, 2):
        a, b = (m[m.island == i].sort_values("generation") for m in (even, slow))
        assert list(a.wall_s) == list(b.wall_s), i
    a, b = (m[m.island == 0].sort_values("generation") for m in (even, slow))
    assert (np.diff(b.wall_s) >= np.diff(a.wall_s) + 0.05 - 1e-9).all()


def test_a_synchronous_population_waits_for_its_slowest_worker(tmp_path, capsys):
    """--eval-workers 4 (OpenAI ES's shape): 8 genomes of one step each over 4 one-CPU
    workers, 2 steps a worker; with one worker's node at half speed every generation takes
    twice as long, and the episodes are the same."""
    def doc(slow):
        return {"cluster_name": "t", "provider": {"type": "aws"}, "head_node_type": "head",
                "available_node_types": {
                    "head": {"resources": {"CPU": 0}},
                    "fast": {"resources": {"CPU": 1}, "max_workers": 3},
                    "slow": {"resources": {"CPU": 1}, "max_workers": 1}},
                "metadata": {"islands_virtual": {"latency_s": 0, "coordinator_s": 0,
                                                 "speed": {"slow": slow}}}}
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"env": "sphere:10", "s_per_step": 1e-3}))
    kw = dict(env="sphere:10", islands=1, popsize=8, generations=12, max_episodes=None,
              calibration=str(cal), test_episodes=1, confirm_episodes=0, eval_workers=4)
    _, even = _run(tmp_path / "even", _cluster(tmp_path, doc(1.0), "even.yaml"), **kw)
    _, slow = _run(tmp_path / "slow", _cluster(tmp_path, doc(0.5), "slow.yaml"), **kw)
    assert even.wall_s.max() == pytest.approx(12 * 2e-3)
    assert slow.wall_s.max() == pytest.approx(12 * 4e-3)
    assert list(even.fitness_max) == list(slow.fitness_max)  # the same generations
    code = launch.main(["--env", "sphere:10", "--runtime", "virtual", "--eval-workers", "8",
                        "--cluster", _cluster(tmp_path, doc(1.0), "even.yaml"), "--islands",
                        "1", "--out", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--eval-workers 8 x 1 island(s) needs 8 CPUs; the virtual cluster " \
        "has 4" in err and "\n" not in err, err


def test_a_failed_nodes_islands_come_back_from_their_checkpoints(tmp_path):
    """Worker nodes fail often (a Poisson rate of one per ~0.1 virtual s): each failure
    loses its process's call, its islands reload their checkpoints (every 2 generations)
    after restart_s, the loop resubmits, and every island still runs all its generations;
    the replay fails the same nodes at the same times."""
    doc = dict(CLUSTER, metadata={"islands_virtual": {"failures_per_hour": 36000,
                                                      "restart_s": 0.05}})
    cluster = _cluster(tmp_path, doc)
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"env": "sphere:10", "s_per_step": 1e-3}))
    kw = dict(env="sphere:10", generations=12, max_episodes=None, calibration=str(cal),
              test_episodes=1, confirm_episodes=0, checkpoint_interval=2)
    s, m = _run(tmp_path / "a", cluster, **kw)
    failed = s["node_failures"]
    assert failed and sum(s["island_restarts"]) == sum(len(f["islands"]) for f in failed)
    assert all(s["generations"][str(i)] == 12 for i in range(3)), s["generations"]
    went_back = []
    for f in failed:  # a lost call: the island's next report goes on from its checkpoint,
        i = f["islands"][0]  # at most the lost call's generation (written as it ended)
        before = m[(m.island == i) & (m.wall_s <= f["at"])].generation
        after = m[(m.island == i) & (m.wall_s > f["at"])].generation
        if len(before) and len(after):
            assert after.iloc[0] <= before.max() + 2, (before.max(), after.iloc[0])
            went_back.append(after.iloc[0] <= before.max())  # behind its last report
    assert any(went_back), went_back  # (a kept state would never repeat a generation)
    s2, _ = _run(tmp_path / "b", cluster, **kw)
    assert s2["node_failures"] == failed and s2["best_fitness"] == s["best_fitness"]


@pytest.mark.parametrize("doc,expect", [
    ("a: [1, 2\n", "is not valid YAML"),
    ({"cluster_name": "x"}, "is not a Ray cluster file (no available_node_types)"),
    ({"available_node_types": {"w": {"resources": {"CPU": 4}, "max_workers": -1}}},
     "node type 'w''s worker count must be >= 0, got -1"),
    ({"available_node_types": {"w": {"resources": {"CPU": 4}, "max_workers": 2}},
      "metadata": {"islands_virtual": {"speed": {"w": 0}}}},
     "islands_virtual.speed of 'w' must be > 0, got 0"),
    ({"available_node_types": {"w": {"resources": {"CPU": 4}, "max_workers": 2}},
      "metadata": {"islands_virtual": {"speed": {"gpu": 2}}}},
     "speed names node type 'gpu', which the file does not have"),
    ({"available_node_types": {"w": {"resources": {"CPU": 0}, "max_workers": 2}}},
     "the file's nodes have no CPUs for islands"),
    ({"head_node_type": "h", "available_node_types": {"h": {"resources": {"CPU": 2}}},
      "metadata": {"islands_virtual": {"head_reserved_cpus": 2}}},
     "head_reserved_cpus (2) must be below the head's CPUs (2)"),
    ({"head_node_type": "h", "available_node_types": {"h": {"resources": {"CPU": 2}}},
      "metadata": {"islands_virtual": {"head_reserved_cpus": -0.5}}},
     "islands_virtual.head_reserved_cpus must be >= 0, got -0.5"),
    ({"available_node_types": {"w": {"resources": {"CPU": 4}, "max_workers": 2}},
      "metadata": {"islands_virtual": {"jitter": -0.1}}},
     "islands_virtual.jitter must be >= 0, got -0.1"),
])
def test_a_bad_cluster_file_is_one_line_and_exit_2(tmp_path, capsys, doc, expect):
    path = tmp_path / "c.yaml"
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    code = launch.main(["--env", "CartPole-v1", "--runtime", "virtual", "--cluster", str(path),
                        "--out", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("islands.launch: error: --cluster: "), err
    assert expect in err and "\n" not in err, err
    assert not (tmp_path / "run").exists()


def test_jitter_moves_the_calls_clock_not_their_work_and_replays(tmp_path):
    """``jitter``: every island call's modelled seconds times mean-1 lognormal noise. On
    sphere (the same steps every generation) without latency, the calls' durations vary
    where without jitter they are all equal, the noise averages to 1, the same seed
    replays it exactly, and with no migrants (so no coupling through the schedule) every
    island's fitness is the same as without jitter."""
    from islands.costmodel import load_cluster

    doc = dict(CLUSTER, metadata={"islands_virtual": {"latency_s": 0, "coordinator_s": 0}})
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"env": "sphere:10", "s_per_step": 1e-3}))
    kw = dict(env="sphere:10", generations=200, max_episodes=None, calibration=str(cal),
              test_episodes=1, confirm_episodes=0, migrants=0)
    _, plain = _run(tmp_path / "plain", _cluster(tmp_path, doc), **kw)
    doc["metadata"]["islands_virtual"]["jitter"] = 0.3
    noisy_file = _cluster(tmp_path, doc, "noisy.yaml")
    assert load_cluster(noisy_file).jitter == 0.3
    _, noisy = _run(tmp_path / "noisy", noisy_file, **kw)
    _, again = _run(tmp_path / "again", noisy_file, **kw)
    fast = [i for i in range(3) if i != 2]  # island 2 is on the half-speed node
    steps = [m[m.island.isin(fast)].sort_values(["island", "generation"]) for m in (plain,
                                                                                     noisy)]
    assert steps[0].call_s.nunique() == 1 and steps[1].call_s.nunique() > 100
    assert steps[1].call_s.mean() == pytest.approx(steps[0].call_s.iloc[0], rel=0.1)
    cols = [c for c in noisy.columns if c not in REAL]
    pd.testing.assert_frame_equal(noisy[cols], again[cols])
    key = ["island", "generation"]
    a, b = (m.sort_values(key).reset_index(drop=True) for m in (plain, noisy))
    assert list(a.fitness_max) == list(b.fitness_max) and list(a.wall_s) != list(b.wall_s)


def test_islands_on_the_head_lose_its_reserved_cpus(tmp_path):
    """The driver, coordinator, tester and Ray run on the head: its islands get the rest."""
    from islands.costmodel import DEFAULT_HEAD_RESERVED_CPUS, load_cluster

    head = {"head_node_type": "h", "available_node_types": {
        "h": {"resources": {"CPU": 4}}, "w": {"resources": {"CPU": 4}, "max_workers": 1}}}
    c = load_cluster(_cluster(tmp_path, head))
    assert [n.speed for n in c.nodes] == [(4 - DEFAULT_HEAD_RESERVED_CPUS) / 4, 1.0]
    head["metadata"] = {"islands_virtual": {"head_reserved_cpus": 1, "speed": {"h": 2}}}
    c = load_cluster(_cluster(tmp_path, head))
    assert [n.speed for n in c.nodes] == [1.5, 1.0] and c.head_reserved_cpus == 1
    assert load_cluster("cluster/cpu.yaml").nodes[0].cpus == 0  # no islands on that head


@pytest.mark.parametrize("args,expect", [
    (["--runtime", "virtual"], "--runtime virtual needs --cluster FILE"),
    (["--cluster", "cluster/cpu.yaml"], "--cluster is for --runtime virtual"),
    (["--eval-workers", "4"], "--eval-workers is modelled by --runtime virtual only"),
    (["--runtime", "virtual", "--cluster", "cluster/cpu.yaml", "--calibration",
      "/nonexistent.json"], "--calibration: /nonexistent.json is not a calibration file"),
])
def test_runtime_flags_that_do_not_go_together(tmp_path, capsys, args, expect):
    code = launch.main(["--env", "CartPole-v1", "--out", str(tmp_path / "run"), "--quiet",
                        *args])
    err = capsys.readouterr().err.strip()
    assert code == 2 and expect in err and "\n" not in err, err


def spec_of(env: str):
    from islands.config import parse_args, resolve
    from islands.planning import plan_islands

    return plan_islands(resolve(parse_args(["--env", env])), [2.0])[0]


def test_a_calibration_measured_once_serves_every_virtual_run(tmp_path, capsys):
    from islands.runtime import calibration

    out = tmp_path / "cal.json"
    assert calibration.main(["CartPole-v1", str(out), "--seconds", "0.3"]) == 0
    rec = json.loads(out.read_text())
    assert rec["env"] == "CartPole-v1" and rec["s_per_step"] > 0 and rec["env_steps"] > 0
    assert 0.0 <= rec["serial_fraction"] <= calibration.MAX_SERIAL
    assert rec["machine"]["cpus"] >= 1
    # per step and per round, from two shapes per thread count: the wider one puts more
    # env steps in each of EnvPool's rounds
    assert rec["s_per_round"] >= 0
    assert 0.0 <= rec["round_serial_fraction"] <= calibration.MAX_SERIAL
    shapes = [(m["threads"], m["episodes"]) for m in rec["measurements"]]
    e = shapes[0][1]  # the row's episodes per evaluation
    assert shapes[:2] == [(1, e), (1, e * calibration.SPREAD)] and len(shapes) in (2, 4)
    narrow, wide = rec["measurements"][:2]
    plan = [dataclasses.replace(spec_of("CartPole-v1"), popsize=p, episodes=e)
            for p, e in ((64, 2), (16, 1))]  # too many to hold 4x at once; one episode
    assert [calibration.shapes(s) for s in plan] == [(2, 1), (1, calibration.SPREAD)]
    assert narrow["rounds"] > 0 and (wide["env_steps"] / wide["rounds"]
                                     > narrow["env_steps"] / narrow["rounds"])
    capsys.readouterr()
    assert calibration.main(["Nope-v0", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown env id 'Nope-v0'" in err and "\n" not in err
    s, _ = _run(tmp_path / "run", _cluster(tmp_path), calibration=str(out))
    assert s["calibration"] == rec  # used as measured, not measured again
    assert json.loads((tmp_path / "run" / "calibration.json").read_text()) == rec
    # a directory of calibrations: each run takes its env's (one study, many tasks)
    study = tmp_path / "calibrations"
    study.mkdir()
    (study / "calibration-CartPole-v1.json").write_text(out.read_text())
    assert calibration.load(study, "CartPole-v1") == rec
    with pytest.raises(ConfigError, match=r"calibration-Hopper-v4\.json is not a calibration "
                                          r"file \(FileNotFoundError\)"):
        calibration.load(study, "Hopper-v4")


def test_a_late_population_from_a_solved_run_gives_a_cost_per_episode(tmp_path, capsys):
    """``--late RUN_DIR``: the row's shape measured again on an island started at a solved
    run's solution, whose episodes are longer than the early ones'; the fit gains a cost per
    episode and the record names the run and its genome. A directory without a solution, or
    another task's, is refused with one line."""
    from islands.runtime import calibration

    run = tmp_path / "solved"
    _run(run, _cluster(tmp_path), islands=1, max_episodes=960)
    out = tmp_path / "cal.json"
    # --seconds 0: two generations per shape, so that their episodes are the seeds' alone
    assert calibration.main(["CartPole-v1", str(out), "--seconds", "0", "--late", str(run),
                             "--max-episode-steps", "200"]) == 0
    rec = json.loads(out.read_text())
    pops = [(m["threads"], m["population"]) for m in rec["measurements"]]
    assert pops[:4] == [(1, "early"), (1, "early"), (1, "late"), (1, "late")]
    assert len(pops) in (4, 8)
    early, late = rec["measurements"][0], rec["measurements"][2]
    assert late["mean_episode_steps"] > 2 * early["mean_episode_steps"]
    assert rec["s_per_episode"] >= 0 and 0 <= rec["episode_serial_fraction"] <= 4
    # the record holds its generations: its one-thread fit is redone from it alone
    one = [m for m in rec["measurements"] if m["threads"] == 1]
    assert calibration._fit(one, True) == pytest.approx(
        (rec["s_per_round"], rec["s_per_step"], rec["s_per_episode"]))
    assert rec["late"]["run"] == str(run) and len(rec["late"]["params_sha256"]) == 16
    assert "s_per_episode" in json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for bad, msg in ((tmp_path, "holds no solution (FileNotFoundError)"),
                     (run, "is a run of 'CartPole-v1', not 'Acrobot-v1'")):
        env = "Acrobot-v1" if bad == run else "CartPole-v1"
        assert calibration.main([env, str(tmp_path / "x.json"), "--late", str(bad)]) == 2
        err = capsys.readouterr().err.strip()
        assert msg in err and len(err.splitlines()) == 1, err
    # the clock charges the episodes' term: seconds = steps, rounds and episodes at cost
    from islands.costmodel import StepCost

    cost = StepCost(1e-5, 0.5, 1e-3, 1.0, 1e-2, 0.0)
    assert cost.seconds(100, 10, 2, 3) == pytest.approx(
        100 * 1e-5 * 0.75 + 10 * 1e-3 + 3 * 1e-2 / 2)
    assert StepCost.of(rec).s_per_episode == rec["s_per_episode"]


def test_the_clock_charges_each_env_step_and_each_evaluator_round(tmp_path):
    """One island on one CPU, no latency, no tests' stops: its calls' virtual seconds add up
    to its env steps at the calibration's seconds per step plus its evaluator's rounds
    (EnvPool's batched steps, each at least one per step of the longest episode) at the
    seconds per round (and, with a per-episode term, its episodes at that cost); without the
    round term, the per-step model of old calibrations."""
    from islands.costmodel import StepCost

    doc = {"cluster_name": "t", "provider": {"type": "aws"}, "head_node_type": "head",
           "available_node_types": {"head": {"resources": {"CPU": 0}},
                                    "w": {"resources": {"CPU": 1}, "max_workers": 1}},
           "metadata": {"islands_virtual": {"latency_s": 0, "coordinator_s": 0}}}
    cluster = _cluster(tmp_path, doc)
    runs = {}
    for name, per_round, per_episode in (("steps", 0.0, 0.0), ("rounds", 1e-3, 0.0),
                                         ("episodes", 1e-3, 1e-2)):
        cal = tmp_path / f"{name}.json"
        cal.write_text(json.dumps({"env": "CartPole-v1", "s_per_step": 1e-5,
                                   "s_per_round": per_round, "s_per_episode": per_episode}))
        runs[name] = _run(tmp_path / name, cluster, islands=1, calibration=str(cal),
                          max_episodes=160)
    (_, m0), (s1, m1), (_, m2) = runs["steps"], runs["rounds"], runs["episodes"]
    steps, rounds = int(m1.env_steps.iloc[-1]), s1["island_rounds"]
    assert list(m0.env_steps) == list(m1.env_steps)  # the same calls, on other clocks
    assert m0.call_s.sum() == pytest.approx(steps * 1e-5)
    assert m1.call_s.sum() == pytest.approx(steps * 1e-5 + rounds * 1e-3)
    assert list(m2.env_steps) == list(m1.env_steps)
    assert m2.call_s.sum() == pytest.approx(steps * 1e-5 + rounds * 1e-3
                                            + int(m1.episodes.iloc[-1]) * 1e-2)
    episodes = np.diff(m1.episodes, prepend=0)
    lengths = np.diff(m1.env_steps, prepend=0) / episodes
    assert rounds >= lengths.sum() and rounds < steps  # a round steps every live env
    cost = StepCost(1e-5, 0.5, 1e-3, 1.0)
    assert cost.seconds(100, 10, 2) == pytest.approx(100 * 1e-5 * 0.75 + 10 * 1e-3)
    assert cost.seconds(100, 10, 0.5) == pytest.approx((100 * 1e-5 + 10 * 1e-3) * 2)


@pytest.mark.parametrize("cluster, opts, islands, workers", [
    ("cluster/virtual/c16.yaml", dict(cpus_per_island=8), 2, None),  # one per 8-CPU node
    ("cluster/virtual/c16.yaml", dict(cpus_per_island=3), 4, None),  # 2 a node, 2 CPUs idle
    ("cluster/virtual/c1024-hetero.yaml", dict(cpus_per_island=8), 128, None),
    ("cluster/virtual/c64.yaml", dict(), 64, None),  # --cpus-per-island's default: 1
    ("cluster/virtual/c64.yaml", dict(islands=1, eval_workers="fill"), 1, 64),
    ("cluster/virtual/c64.yaml", dict(islands=4, eval_workers="FILL"), 4, 16),
])
def test_fill_counts_islands_and_workers_from_the_cluster_files_nodes(cluster, opts, islands,
                                                                      workers):
    from islands.config import from_dict, resolve

    opts = {"islands": "fill", **opts}
    c = resolve(from_dict(dict(env="CartPole-v1", runtime="virtual", cluster=cluster,
                               **opts)), check_env=False)
    assert (c.islands, c.eval_workers) == (islands, workers)
    assert resolve(c, check_env=False).islands == islands  # resolving again keeps it


def test_fill_runs_on_the_virtual_cluster_and_on_this_machine(tmp_path):
    import os

    from islands.config import from_dict, resolve

    s, m = _run(tmp_path / "run", _cluster(tmp_path), islands="fill", max_episodes=96)
    assert s["islands"] == 3 and sorted(m.island.unique()) == [0, 1, 2]  # 3 one-CPU nodes
    c = resolve(from_dict(dict(env="CartPole-v1", islands="fill")), check_env=False)
    assert c.islands == os.cpu_count() and c.cpus_per_island == 1.0  # the embedded Ray's


@pytest.mark.parametrize("cluster, workers, scale", [
    ("cluster/virtual/c16.yaml", 16, 1), ("cluster/virtual/c256-hetero.yaml", 256, 16),
    ("cluster/virtual/c64.yaml", 64, 4)])
def test_a_filled_synchronous_population_gives_every_worker_an_episode(cluster, workers, scale):
    from islands.config import from_dict, resolve
    from islands.planning import plan_islands

    c = resolve(from_dict(dict(env="Hopper-v4", runtime="virtual", cluster=cluster, islands=1,
                               eval_workers="fill", popsize_scale="fill")), check_env=False)
    assert (c.eval_workers, c.popsize_scale) == (workers, scale)
    (spec,) = plan_islands(c, [8.0] * (workers // 8))
    # the row's 16 episodes (8 directions, top 4) scaled whole: every worker has one
    assert spec.popsize == 16 * scale >= workers and spec.options["top"] == 4 * scale
    with pytest.raises(Exception, match="--popsize-scale fill sizes a synchronous population"):
        resolve(from_dict(dict(env="Hopper-v4", popsize_scale="fill")), check_env=False)


def test_fill_on_a_joined_cluster_counts_the_nodes_it_is_given(monkeypatch):
    from islands.config import ConfigError, from_dict, resolve

    c = from_dict(dict(env="CartPole-v1", islands="fill", address="10.0.0.1:6379",
                       cpus_per_island=2))
    got = resolve(c, check_env=False, node_cpus=[0.0, 8.0, 8.0, 3.0])  # a CPU-less head
    assert (got.islands, got.cpus_per_island) == (9, 2.0)  # 4 + 4 + 1
    with pytest.raises(ConfigError, match="counts the nodes of the cluster it joins"):
        resolve(c, check_env=False)  # nodes not read (islands.api.prepare reads them)
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")  # joins as --address does
    with pytest.raises(ConfigError, match="counts the nodes of the cluster it joins"):
        resolve(from_dict(dict(env="CartPole-v1", islands="fill")), check_env=False)


@pytest.mark.parametrize("args, expect", [
    (["--islands", "fil"], "--islands: expected an integer or fill, got 'fil'"),
    # fill reads the nodes of the cluster it joins: none answers there (at once, not after
    # ray.init's 13 minutes of retries)
    (["--islands", "fill", "--address", "127.0.0.1:1"],
     "cannot join the Ray cluster at '127.0.0.1:1': nothing listens there"),
    (["--islands", "fill", "--runtime", "virtual", "--cluster", "cluster/virtual/c16.yaml",
      "--cpus-per-island", "16"],
     "--islands fill: no node holds an island of 16 CPUs (nodes: 8, 8)"),
    (["--islands", "fill", "--elastic", "1:4"], "--islands fill and --elastic"),
])
def test_bad_fill_options_are_one_line_and_exit_2(tmp_path, capsys, args, expect):
    code = launch.main(["--env", "CartPole-v1", *args, "--out", str(tmp_path / "run"),
                        "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("islands.launch: error: "), err
    assert expect in err and "\n" not in err, err
    assert not (tmp_path / "run").exists()


def test_a_calibration_fitted_on_a_runs_calls_recovers_the_costs_that_ran_it(tmp_path, capsys):
    """``--from-runs``: a virtual run's calls cost exactly its calibration's seconds per step
    and per episode (no rounds term, one CPU per island, no latency or stragglers), so the
    fit on them gives those costs back, with island 0's sleep taken out of its calls; a
    run of another env and a missing directory are one line and exit 2."""
    from islands.runtime import calibration

    doc = {"cluster_name": "t", "provider": {"type": "aws"}, "head_node_type": "head",
           "available_node_types": {"head": {"resources": {"CPU": 0}},
                                    "w": {"resources": {"CPU": 1}, "max_workers": 2}},
           "metadata": {"islands_virtual": {"latency_s": 0, "coordinator_s": 0}}}
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"env": "CartPole-v1", "s_per_step": 2e-5,
                               "s_per_episode": 3e-3, "serial_fraction": 0.25}))
    _run(tmp_path / "exp" / "runs" / "t000", _cluster(tmp_path, doc), islands=2,
         calibration=str(cal), max_episodes=320, island_specs=[{"slowdown_s": 0.05}, {}])
    out = tmp_path / "new-folder" / "fitted.json"  # a folder of its own, made for it
    assert calibration.main(["CartPole-v1", str(out), "--from-runs", str(tmp_path / "exp"),
                             "--serial-from", str(cal)]) == 0
    rec = json.loads(out.read_text())
    assert rec["s_per_step"] == pytest.approx(2e-5, rel=1e-6)
    assert rec["s_per_episode"] == pytest.approx(3e-3, rel=1e-6)
    assert rec["serial_fraction"] == 0.25 and rec["source"] == "runs"
    assert rec["calls"] == sum(rec["calls_per_run"]) > 2
    assert calibration.load(out, "CartPole-v1") == rec  # a virtual run can take it
    # no run of these seeds; a run of another env
    assert calibration.main(["CartPole-v1", str(out), "--from-runs", str(tmp_path / "exp"),
                             "--seeds", "0", "3"]) == 2
    assert "no runs/t*/ or run directories found" in capsys.readouterr().err
    assert calibration.main(["Acrobot-v1", str(out), "--from-runs",
                             str(tmp_path / "exp")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("is a run of 'CartPole-v1', not 'Acrobot-v1'") and "\n" not in err
