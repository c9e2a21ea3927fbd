"""Experiment specs without Ray: the YAML format and its scale merge, trial expansion, the
JSON round trip, one-line errors for bad input, named arms, and the experiment files of
``experiments/`` at every scale (their trials resolve, their laptop totals fit 45 minutes on
2 cores, and their comments state those totals)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import textwrap

import pytest
from conftest import ROOT

from islands.config import ConfigError, from_dict, resolve
from islands.experiment import ExperimentError, ExperimentSpec, Trial, load_experiment, trials
from islands.experiment.names import BUDGET_FIELDS, SCALES
from islands.experiment.spec import check_trials, trial_config

EXPERIMENTS = ROOT / "experiments"
FILES = ("network-scaling", "bipedal", "pong", "worker-scaling", "neuromod-vs-cmaes", "mujoco",
         "islands-vs-one", "mujoco-long", "humanoid", "virtual-time", "virtual-time-straggler",
         "virtual-time-hopper", "virtual-time-hopper-straggler", "cluster-scaling")
LAPTOP_RUNS = {"network-scaling": 45, "bipedal": 2, "pong": 2, "worker-scaling": 50,
               "neuromod-vs-cmaes": 10, "mujoco": 25, "islands-vs-one": 180, "mujoco-long": 10,
               "humanoid": 3, "virtual-time": 60,
               "virtual-time-straggler": 20, "virtual-time-hopper": 60,
               "virtual-time-hopper-straggler": 20, "cluster-scaling": 400}
# The research questions answered at an evaluation budget (the clock only a safety cap)
EVALUATION_BUDGETED = ("network-scaling", "worker-scaling", "neuromod-vs-cmaes")
# ... and at an episode budget (MuJoCo: ARS counts episodes)
EPISODE_BUDGETED = ("mujoco", "islands-vs-one", "mujoco-long", "humanoid", "virtual-time",
                    "virtual-time-straggler", "virtual-time-hopper",
                    "virtual-time-hopper-straggler", "cluster-scaling")
# files that share another's report kind
SHARED_REPORT = {"mujoco-long": "mujoco", "humanoid": "mujoco",
                 "virtual-time-straggler": "virtual-time", "virtual-time-hopper": "virtual-time",
                 "virtual-time-hopper-straggler": "virtual-time"}

MERGE_YAML = """\
name: merge
question: |
  What does
  a scale change?
base: {env: CartPole-v1, islands: 2, popsize: 8}
grid: {strategy: [cmaes, openai-es], hidden: [[8], [16]]}
seeds: 0-2
budget: {max_evals: 5000, time_budget: 60}
scales:
  smoke:
    base: {islands: 1}
    grid: {hidden: [[4]], episodes: [1, 2]}
    seeds: [7]
    budget: {time_budget: 10}
  laptop: {}
"""


def write(tmp_path, text: str, name: str = "exp.yaml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_order_seeds_runs_every_grid_point_of_a_seed_before_the_next_seed(tmp_path):
    """``order: seeds``: arms comparable on shared seeds as soon as a seed is done (runs of
    hours, kept and resumed across sessions); the default runs each point's seeds in turn.
    Another order is one line."""
    text = """\
        name: ordered
        base: {env: CartPole-v1}
        grid: {strategy: [cmaes, ga]}
        seeds: [1, 2]
        """
    by_grid = [t.label for t in trials(load_experiment(write(tmp_path, text), None))]
    assert by_grid == ["strategy=cmaes seed=1", "strategy=cmaes seed=2",
                       "strategy=ga seed=1", "strategy=ga seed=2"]
    spec = load_experiment(write(tmp_path, text + "order: seeds\n"), None)
    assert [(t.trial_id, t.label) for t in trials(spec)] == [
        ("t000", "strategy=cmaes seed=1"), ("t001", "strategy=ga seed=1"),
        ("t002", "strategy=cmaes seed=2"), ("t003", "strategy=ga seed=2")]
    assert ExperimentSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    with pytest.raises(ExperimentError, match=r"order must be one of grid, seeds, got 'arm'"):
        load_experiment(write(tmp_path, text + "order: arm\n"), None)


# ---- the scale merge ----------------------------------------------------------------------
def test_a_scale_merges_base_and_budget_by_key_grid_by_field_and_replaces_seeds(tmp_path):
    spec = load_experiment(write(tmp_path, MERGE_YAML), "smoke")
    assert spec.base == {"env": "CartPole-v1", "islands": 1, "popsize": 8}
    assert spec.budget == {"max_evals": 5000, "time_budget": 10}
    # hidden keeps its place and takes the scale's values; episodes comes after
    assert list(spec.grid.items()) == [("strategy", ["cmaes", "openai-es"]),
                                       ("hidden", [[4]]), ("episodes", [1, 2])]
    assert spec.seeds == [7]
    assert (spec.name, spec.report, spec.scale) == ("merge", "generic", "smoke")
    assert spec.question == "What does a scale change?"  # one line
    assert spec.source == str(tmp_path / "exp.yaml")


def test_an_empty_scale_block_is_the_top_level(tmp_path):
    spec = load_experiment(write(tmp_path, MERGE_YAML), "laptop")
    assert spec.base == {"env": "CartPole-v1", "islands": 2, "popsize": 8}
    assert spec.grid == {"strategy": ["cmaes", "openai-es"], "hidden": [[8], [16]]}
    assert spec.budget == {"max_evals": 5000, "time_budget": 60}
    assert spec.seeds == [0, 1, 2]


@pytest.mark.parametrize("text, seeds", [
    ("[3, 1]", [3, 1]), ("0-4", [0, 1, 2, 3, 4]), ("0-2,8", [0, 1, 2, 8]), ("5", [5]),
])
def test_seeds_take_lists_ranges_and_single_seeds(tmp_path, text, seeds):
    path = write(tmp_path, f"name: s\nseeds: {text}\nscales: {{smoke: {{}}}}\n")
    assert load_experiment(path, "smoke").seeds == seeds


# ---- trials -------------------------------------------------------------------------------
def test_trials_are_the_grid_in_file_order_times_the_seeds(tmp_path):
    spec = load_experiment(write(tmp_path, MERGE_YAML), "laptop")
    ts = trials(spec)
    assert [t.trial_id for t in ts] == [f"t{i:03d}" for i in range(12)]
    assert [t.label for t in ts[:4]] == [
        "strategy=cmaes hidden=8 seed=0", "strategy=cmaes hidden=8 seed=1",
        "strategy=cmaes hidden=8 seed=2", "strategy=cmaes hidden=16 seed=0"]
    assert ts[-1].label == "strategy=openai-es hidden=16 seed=2"
    assert ts[4].params == {"strategy": "cmaes", "hidden": [16]} and ts[4].seed == 1
    assert ts[4].overrides == {"env": "CartPole-v1", "islands": 2, "popsize": 8,
                               "max_evals": 5000, "time_budget": 60, "strategy": "cmaes",
                               "hidden": [16], "seed": 1}
    assert list(ts[4].overrides) == ["env", "islands", "popsize", "max_evals", "time_budget",
                                     "strategy", "hidden", "seed"]
    assert trials(spec) == ts  # stable


def test_grid_values_win_over_base_and_an_empty_grid_gives_one_trial_per_seed():
    spec = ExperimentSpec(name="x", base={"popsize": 8, "env": "CartPole-v1"},
                          grid={"popsize": [16]}, seeds=[0, 1])
    assert [t.overrides["popsize"] for t in trials(spec)] == [16, 16]
    plain = trials(ExperimentSpec(name="x", seeds=[4, 2]))
    assert [(t.trial_id, t.label, t.params, t.overrides) for t in plain] == [
        ("t000", "seed=4", {}, {"seed": 4}), ("t001", "seed=2", {}, {"seed": 2})]


def test_labels_show_values_readably_and_ids_widen_past_a_thousand_trials():
    spec = ExperimentSpec(name="x", grid={"hidden": [[]], "obs_norm": [True],
                                          "sigma": [0.5], "env_kwargs": [{"a": 1}]},
                          seeds=[0])
    assert trials(spec)[0].label == 'hidden=[] obs_norm=on sigma=0.5 env_kwargs={"a":1} seed=0'
    many = trials(ExperimentSpec(name="x", grid={"popsize": list(range(2, 1003))}, seeds=[0]))
    assert (many[0].trial_id, many[-1].trial_id) == ("t0000", "t1000")
    assert len({t.trial_id for t in many}) == len(many)


def test_trials_do_not_share_mutable_values_with_the_spec():
    spec = ExperimentSpec(name="x", base={"env_kwargs": {"a": 1}}, grid={"hidden": [[8]]},
                          seeds=[0])
    t = trials(spec)[0]
    t.overrides["env_kwargs"]["a"] = 2
    t.params["hidden"].append(4)
    assert spec.base == {"env_kwargs": {"a": 1}} and spec.grid == {"hidden": [[8]]}


# ---- to_dict / from_dict ------------------------------------------------------------------
def test_the_json_round_trip_is_exact_and_tuples_come_back_as_lists(tmp_path):
    spec = ExperimentSpec(name="x", report="network-scaling", question="q?",
                          base={"hidden": (32, 16), "env_kwargs": {1: (2, 3)}},
                          grid={"hidden": [(32, 16), (64, 32)]}, seeds=(0, 1),
                          budget={"time_budget": 30.5}, scale="smoke", source="a.yaml")
    assert spec.base == {"hidden": [32, 16], "env_kwargs": {"1": [2, 3]}}
    back = ExperimentSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert back == spec and back.to_dict() == spec.to_dict()
    assert trials(back) == trials(spec)
    loaded = load_experiment(write(tmp_path, MERGE_YAML), "smoke")
    assert ExperimentSpec.from_dict(json.loads(json.dumps(loaded.to_dict()))) == loaded


def test_to_dict_is_a_copy():
    spec = ExperimentSpec(name="x", base={"hidden": [8]}, seeds=[0])
    spec.to_dict()["base"]["hidden"].append(4)
    assert spec.base == {"hidden": [8]}


def test_from_dict_refuses_unknown_keys_and_a_missing_name():
    with pytest.raises(ExperimentError) as e:
        ExperimentSpec.from_dict({"name": "x", "grids": {}})
    assert str(e.value).startswith("unknown experiment spec key 'grids'; allowed: name, ")
    with pytest.raises(ExperimentError, match="^experiment spec has no name$"):
        ExperimentSpec.from_dict({"seeds": [0]})


# ---- bad input: one line each -------------------------------------------------------------
OK = "name: x\nseeds: [0]\nscales: {smoke: {}}\n"
BAD = [
    ("name: x\nseeds: [0\n", "smoke", "malformed YAML at line 3, column 1: expected ',' or "
     "']', but got '<stream end>'"),
    ("name: x\nbase: {env: a}\nbase: {env: b}\n", "smoke",
     "malformed YAML at line 3, column 1: duplicate key 'base'"),
    ("- name: x\n", "smoke",
     "the top level must be a mapping of name, report, question, description, base, arms, "
     "grid, seeds, order, budget, scales, got a list"),
    ("", "smoke", "the file is empty; an experiment needs at least name and seeds"),
    (OK + "grids: {}\n", "smoke", "unknown key 'grids' (did you mean 'grid'?); allowed: "
     "name, report, question, description, base, arms, grid, seeds, order, budget, scales"),
    ("seeds: [0]\n", "smoke", "missing name (e.g. name: network-scaling)"),
    ("name: a b\nseeds: [0]\n", "smoke",
     "name must be letters, digits, '.', '_' or '-', got 'a b'"),
    (OK + "report: pongg\n", "smoke", "unknown report 'pongg' (did you mean 'pong'?); "
     "allowed: generic, network-scaling, bipedal, pong, worker-scaling, neuromod-vs-cmaes, mujoco, "
     "islands-vs-one, virtual-time, cluster-scaling"),
    ("name: x\nseeds: [0]\nscales: {smoke: {}, laptop: {}, cluster: {}}\n", "huge",
     "unknown scale 'huge'; this experiment has smoke, laptop, cluster"),
    ("name: x\nseeds: [0]\n", "laptop", "unknown scale 'laptop'; this experiment has no scales"),
    ("name: x\nseeds: [0]\nscales: {lapton: {}}\n", "smoke",
     "unknown scale 'lapton' in scales (did you mean 'laptop'?); allowed: smoke, laptop, "
     "cluster"),
    ("name: x\nseeds: [0]\nscales: {smoke: {seed: [1]}}\n", "smoke",
     "unknown key 'seed' in scales.smoke (did you mean 'seeds'?); allowed: base, grid, seeds, "
     "budget"),
    ("name: x\nseeds: [0]\nscales: {smoke: [1]}\n", "smoke",
     "scales.smoke must be a mapping, got [1]"),
    (OK + "grid: {hiden: [[8]]}\n", "smoke", "unknown field 'hiden' in grid (did you mean "
     "'hidden'?)"),
    (OK + "base: {zzzz: 1}\n", "smoke", "unknown field 'zzzz' in base"),
    ("name: x\nseeds: [0]\nscales: {smoke: {}, cluster: {base: {popsiz: 4}}}\n", "smoke",
     "unknown field 'popsiz' in scales.cluster.base (did you mean 'popsize'?)"),
    (OK + "base: {out: runs/x}\n", "smoke",
     "field 'out' in base is set by the runner for each trial"),
    (OK + "grid: {namespace: [a, b]}\n", "smoke",
     "field 'namespace' in grid is set by the runner for each trial"),
    (OK + "base: {seed: 3}\n", "smoke", "field 'seed' in base: list the seeds under seeds: "
     "instead"),
    (OK + "base: {time_budget: 30}\n", "smoke", "field 'time_budget' in base belongs in budget"),
    (OK + "budget: {popsize: 8}\n", "smoke", "field 'popsize' in budget is not a budget "
     "field (it belongs in base); allowed: max_evals, max_episodes, max_env_steps, "
     "time_budget, generations"),
    (OK + "budget: {max_eval: 8}\n", "smoke", "unknown budget key 'max_eval' in budget (did "
     "you mean 'max_evals'?); allowed: max_evals, max_episodes, max_env_steps, time_budget, "
     "generations"),
    (OK + "grid: {strategy: cmaes}\n", "smoke",
     "grid field 'strategy' in grid must be a non-empty list of values, got 'cmaes'"),
    ("name: x\nseeds: [0]\nscales: {smoke: {grid: {popsize: []}}}\n", "smoke",
     "grid field 'popsize' in scales.smoke.grid must be a non-empty list of values, got []"),
    (OK + "grid: {hidden: [[8], [4], [8]]}\n", "smoke",
     "grid field 'hidden' in grid lists [8] twice"),
    (OK + "grid: [hidden]\n", "smoke", "grid must be a mapping, got ['hidden']"),
    ("name: x\nscales: {smoke: {}}\n", "smoke",
     "no seeds at scale 'smoke' (e.g. seeds: [0, 1, 2] or seeds: 0-4)"),
    ("name: x\nseeds: [0]\nscales: {smoke: {seeds: []}}\n", "smoke",
     "no seeds at scale 'smoke' (e.g. seeds: [0, 1, 2] or seeds: 0-4)"),
    ("name: x\nseeds: 4-2\nscales: {smoke: {}}\n", "smoke",
     "seeds must be a list of integers or a range like 0-4, got '4-2'"),
    ("name: x\nseeds: [0, a]\nscales: {smoke: {}}\n", "smoke",
     "seeds must be a list of integers or a range like 0-4, got [0, 'a']"),
    ("name: x\nseeds: 0-2,1\nscales: {smoke: {}}\n", "smoke", "seeds lists seed 1 twice"),
    (OK + "arms: {a: {islands: 2}}\n", "smoke", "arms: a defined but the grid has no 'arm' "
     "field to run them (e.g. grid: {arm: [a]})"),
    (OK + "arms: {one: {islands: 1}}\ngrid: {arm: [one, onee]}\n", "smoke",
     "grid field 'arm' names 'onee', which arms: does not define (did you mean 'one'?)"),
    (OK + "arms: {one: {islands: 1}}\ngrid: {arm: [one], islands: [2]}\n", "smoke",
     "arm 'one' sets 'islands', which the grid also varies"),
    (OK + "arms: {one: {islandz: 1}}\ngrid: {arm: [one]}\n", "smoke",
     "unknown field 'islandz' in arms.one (did you mean 'islands'?)"),
    (OK + "arms: {one: {max_evals: 1}}\ngrid: {arm: [one]}\n", "smoke",
     "field 'max_evals' in arms.one belongs in budget"),
    (OK + "question: [a]\n", "smoke", "question must be text, got ['a']"),
]


@pytest.mark.parametrize("text, scale, message", BAD, ids=[m[:40] for _, _, m in BAD])
def test_bad_input_gets_its_one_line_message_naming_the_file(tmp_path, text, scale, message):
    path = write(tmp_path, text)
    with pytest.raises(ExperimentError) as e:
        load_experiment(path, scale)
    assert str(e.value) == f"{path}: {message}"
    assert "\n" not in str(e.value)


def test_a_missing_file_is_named(tmp_path):
    path = str(tmp_path / "nope.yaml")
    with pytest.raises(ExperimentError) as e:
        load_experiment(path, "smoke")
    assert str(e.value) == f"experiment file {path!r} not found"


def test_a_trial_the_launcher_refuses_is_named_by_its_label(tmp_path):
    path = write(tmp_path, "name: x\nbase: {env: CartPole-v1}\ngrid: {popsize: [4, 1]}\n"
                           "seeds: [0]\nscales: {smoke: {}}\n")
    spec = load_experiment(path, "smoke")
    with pytest.raises(ConfigError) as launcher:
        resolve(from_dict({"env": "CartPole-v1", "popsize": 1}))
    with pytest.raises(ExperimentError) as e:
        check_trials(spec)
    assert str(e.value) == f"trial popsize=1 seed=0: {launcher.value}"
    assert str(e.value) == "trial popsize=1 seed=0: --popsize must be at least 2, got 1"


def test_a_value_the_launcher_cannot_read_is_named_by_its_trial(tmp_path):
    path = write(tmp_path, "name: x\ngrid: {strategy: [cmaes, cmaez]}\nseeds: [3]\n"
                           "scales: {smoke: {}}\n")
    with pytest.raises(ExperimentError) as e:
        check_trials(load_experiment(path, "smoke"))
    assert str(e.value).startswith("trial strategy=cmaez seed=3: unknown strategy 'cmaez'; "
                                   "did you mean 'cmaes'?")


def test_trial_config_is_the_resolved_launcher_config(tmp_path):
    t = Trial("t000", "seed=3", {}, 3, {"env": "CartPole-v1", "max_evals": 100, "seed": 3})
    cfg = trial_config(t, str(tmp_path / "run"), "ns-1")
    assert (cfg.seed, cfg.max_evals, cfg.namespace, cfg.quiet) == (3, 100, "ns-1", True)
    assert cfg.out == str(tmp_path / "run") and cfg.strategy == "cmaes"  # the env table's
    assert not (tmp_path / "run").exists()


def test_a_relative_experiment_directory_gives_its_trials_absolute_run_directories(
        tmp_path, monkeypatch):
    """Tune runs a trial in a working directory of its own under the Ray session: a
    relative run directory landed there, so a resume (a new session) found no checkpoints
    and ran the trial again from scratch (a Walker2d seed lost 49,520 episodes so)."""
    from islands.experiment.cli import prepare
    from islands.experiment.source import ExperimentTrials

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "e.yaml"
    path.write_text("name: e\nquestion: q\ndescription: d\nreport: generic\n"
                    "base: {env: CartPole-v1}\nbudget: {generations: 2}\nseeds: [1]\n")
    prepare(str(path), None, "exps/e")
    source = ExperimentTrials("exps/e")
    out = source.config(source.ids()[0]).out
    assert os.path.isabs(out) and out == str(tmp_path / "exps" / "e" / "runs" / "t000")


# ---- the experiment files -----------------------------------------------------------------
def load(name: str, scale: str) -> ExperimentSpec:
    return load_experiment(EXPERIMENTS / f"{name}.yaml", scale)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", FILES)
def test_every_experiment_file_loads_and_checks_at_every_scale(name, scale):
    spec = load(name, scale)
    assert spec.name == name and spec.question.endswith("?")
    # each file its own report, but for MuJoCo's long tasks (the mujoco report: ARS's
    # counts) and the straggler's calibration (the virtual-time report)
    assert spec.report == SHARED_REPORT.get(name, name)
    check_trials(spec)
    for t in trials(spec):  # every run ends
        assert t.overrides.get("time_budget") or t.overrides.get("max_evals"), t.label


def test_the_directory_holds_exactly_the_listed_experiments():
    assert sorted(p.stem for p in EXPERIMENTS.glob("*.yaml")) == sorted(FILES)


@pytest.mark.parametrize("name", FILES)
def test_laptop_and_smoke_budgets_and_the_comment_states_them(name):
    laptop, smoke = trials(load(name, "laptop")), trials(load(name, "smoke"))
    assert len(laptop) == LAPTOP_RUNS[name]
    caps = {t.overrides["time_budget"] for t in laptop}
    assert len(caps) == 1  # one cap per file, as the comment states it
    assert sum(t.overrides["time_budget"] for t in smoke) <= 90
    assert len({t.seed for t in smoke}) <= 2
    head = (EXPERIMENTS / f"{name}.yaml").read_text().split("\nname:")[0]
    if name in EVALUATION_BUDGETED:  # evaluations are the budget; the clock a safety cap
        evals = {t.overrides["max_evals"] for t in laptop}
        assert len(evals) == 1 and caps.pop() <= 900
        m = re.search(r"#\s+laptop:\s+(\d+) runs[^\n]*<= (\d+)K evaluations", head)
        assert m, "the comment states the laptop total as runs x <= NK evaluations"
        assert (int(m[1]), int(m[2]) * 1000) == (len(laptop), evals.pop())
        assert min(t.seed for t in laptop) >= 1000  # seeds never used to choose defaults
        return
    if name in EPISODE_BUDGETED:
        episodes = {t.overrides["max_episodes"] for t in laptop}
        assert len(episodes) == 1 and min(t.seed for t in laptop) >= 1000
        m = re.search(r"#\s+laptop:\s+(\d+) runs?[^\n]*<= ([\d.]+)K episodes, ([\d,]+) s cap",
                      head)
        assert m, "the comment states the laptop total as runs x <= NK episodes, a cap"
        assert (int(m[1]), round(float(m[2]) * 1000)) == (len(laptop), episodes.pop())
        assert int(m[3].replace(",", "")) == caps.pop()
        return
    assert len(laptop) * caps.pop() <= 45 * 60
    m = re.search(r"#\s+laptop:\s+(\d+) runs\s+x (\d+) s", head)
    assert m, "the comment states the laptop total as runs x seconds"
    assert (int(m[1]), int(m[2])) == (len(laptop), laptop[0].overrides["time_budget"])


def test_the_cluster_scales_are_the_plans_sizes():
    ns = load("network-scaling", "cluster")
    assert ns.base["env"] == "LunarLander-v3"
    assert ns.grid == {"hidden": [[32, 16], [64, 32], [128, 64], [256, 128], [512, 256]],
                       "strategy": ["cmaes", "sep-cmaes", "openai-es"]}
    bw = load("bipedal", "cluster")
    assert bw.base["env"] == "BipedalWalker-v3" and bw.budget["max_evals"] == 500_000
    assert bw.grid == {"hidden": [[], [64, 32]]}
    pong = load("pong", "cluster")
    assert (pong.base["env"], pong.base["policy"], pong.base["target"]) == ("Pong-v5", "cnn", 0)
    assert pong.budget["max_evals"] >= 1_000_000 and pong.base["gpus_per_island"] > 0
    ws = load("worker-scaling", "cluster")
    assert ws.base["env"] == "LunarLander-v3" and ws.grid == {"islands": [1, 2, 4, 8, 16]}
    nm = load("neuromod-vs-cmaes", "cluster")
    assert nm.grid["policy"] == ["mlp", "neuromod"] and nm.base["strategy"] == "cmaes"
    assert len(nm.seeds) >= 5 and "max_evals" in nm.budget


def test_worker_scaling_on_the_laptop_measures_every_k_with_ten_seeds():
    # a worker is an island with one CPU (the runner shares the CPUs where there are fewer
    # than islands); k = 1..16 with >= 10 seeds each, for the algorithmic factor E(k)
    spec = load("worker-scaling", "laptop")
    assert spec.grid == {"islands": [1, 2, 4, 8, 16]} and spec.base["env"] == "LunarLander-v3"
    assert len(spec.seeds) >= 10 and spec.budget["max_evals"] > 0
    assert all(t.overrides["cpus_per_island"] == 1 for t in trials(spec))


@pytest.mark.parametrize("scale", SCALES)
def test_neuromod_arms_share_the_budget_and_the_width(scale):
    spec = load("neuromod-vs-cmaes", scale)
    arms = {}
    for t in trials(spec):
        arms.setdefault(t.params["policy"], set()).add(
            json.dumps({k: v for k, v in t.overrides.items() if k != "policy"}))
    assert sorted(arms) == ["mlp", "neuromod"] and arms["mlp"] == arms["neuromod"]
    assert all(len(h) == 1 for h in spec.grid["hidden"])  # neuromod takes one size
    if scale != "smoke":
        assert len(spec.seeds) >= 5
    for t in trials(spec):
        cfg = trial_config(t, os.path.join("unused", t.trial_id), "ns")
        assert cfg.strategy == "cmaes" and cfg.max_evals == spec.budget["max_evals"]
        assert cfg.hidden == t.params["hidden"]


def test_budgets_name_only_budget_fields():
    for name in FILES:
        for scale in SCALES:
            assert set(load(name, scale).budget) <= set(BUDGET_FIELDS)


def test_loading_and_checking_write_nothing(tmp_path, monkeypatch):
    # the files' paths are relative to where `run` is typed, and --islands fill reads the
    # cluster file while checking: a link to the project's cluster/ stands in for it
    (tmp_path / "cluster").symlink_to(ROOT / "cluster")
    monkeypatch.chdir(tmp_path)
    for name in FILES:
        for scale in SCALES:
            check_trials(load_experiment(EXPERIMENTS / f"{name}.yaml", scale))
    assert [p.name for p in tmp_path.iterdir()] == ["cluster"]


ARMS_YAML = """\
name: arms
base: {env: CartPole-v1, popsize: 8}
arms:
  one-x2: {islands: 1, popsize_scale: 2}
  isolated-2: {islands: 2, migrants: 0}
  islands-2: {islands: 2}
grid: {episodes: [1, 2], arm: [islands-2, one-x2]}
seeds: [0]
scales:
  smoke: {grid: {arm: [isolated-2]}}
"""


def test_arms_are_named_sets_of_fields_that_the_grid_field_arm_runs(tmp_path):
    spec = load_experiment(write(tmp_path, ARMS_YAML), None)
    got = [(t.params, t.overrides) for t in trials(spec)]
    assert got[0] == ({"episodes": 1, "arm": "islands-2"},
                      {"popsize": 8, "env": "CartPole-v1", "islands": 2, "episodes": 1,
                       "seed": 0})
    assert got[1][1] == {"popsize": 8, "env": "CartPole-v1", "islands": 1, "popsize_scale": 2,
                         "episodes": 1, "seed": 0}
    assert [t.label for t in trials(spec)][1] == "episodes=1 arm=one-x2 seed=0"
    cfg = trial_config(trials(spec)[1], str(tmp_path / "run"), "n")
    assert (cfg.islands, cfg.popsize, cfg.popsize_scale) == (1, 8, 2)
    # a scale picks among the top level's arms; the spec keeps them through JSON
    smoke = load_experiment(write(tmp_path, ARMS_YAML), "smoke")
    assert [t.overrides["migrants"] for t in trials(smoke)] == [0, 0]
    assert ExperimentSpec.from_dict(json.loads(json.dumps(smoke.to_dict()))) == smoke


def test_islands_vs_one_runs_three_shapes_per_k_on_the_same_cores():
    from islands.experiment.reports.islands_vs_one import arm_shape

    spec = load("islands-vs-one", "laptop")
    shapes = {}
    for fields in spec.arms.values():
        shape, k = arm_shape(fields)
        shapes.setdefault(k, set()).add(shape)
        assert "cpus_per_island" not in fields  # the default share: every arm all the cores
    # three shapes per k, and one-x1 (the row's own popsize: the papers' baseline)
    assert shapes == {1: {"one"}} | {k: {"islands", "isolated", "one"} for k in (2, 4, 8)}
    assert set(spec.grid["arm"]) == {a for a in spec.arms if a.endswith(("-2", "-4", "x2",
                                                                           "x4"))}
    assert spec.grid["env"] == ["LunarLander-v3", "Hopper-v4", "HalfCheetah-v4"]
    assert min(spec.seeds) >= 4000 and len(spec.seeds) >= 10


def test_the_cluster_scaling_arms_fill_each_cluster_with_their_shape(tmp_path):
    """One name per shape across cluster sizes (the report's speedup compares an arm with
    itself), so the island and worker counts come from each cluster file (``fill``)."""
    counts = {}
    for t in trials(load("cluster-scaling", "laptop")):
        if t.params["env"] != "Hopper-v4" or t.seed != 7000:
            continue
        c = trial_config(t, str(tmp_path / t.trial_id), "n")
        cores = os.path.basename(c.cluster).split(".")[0]
        counts[cores, t.params["arm"]] = (c.islands, c.cpus_per_island, c.eval_workers)
        assert c.runtime == "virtual" and c.calibration.endswith("cluster-scaling/calibration")
    for size, nodes in (("c16", 2), ("c64", 8), ("c16-hetero", 2), ("c64-hetero", 8)):
        cores = 8 * nodes
        assert counts[size, "islands"] == counts[size, "islands-x4"] == (nodes, 8, None)
        assert counts[size, "islands-2cpu"] == (4 * nodes, 2, None)
        assert counts[size, "one"] == (1, 8, None)
        assert counts[size, "sync"][0::2] == (1, cores)  # a worker on every core


def test_the_cluster_scaling_design_arms_change_one_thing_of_the_islands_arm(
        tmp_path, monkeypatch):
    """The choosing arms of issue 61's designs (run with ``--only arm=...``, in no grid):
    32 islands of 8 cores at 256 cores, as ``islands``, and only the restart or the
    topology differs. The cluster is named as a user types it from the checkout's root."""
    from islands.experiment.narrow import narrowed

    monkeypatch.chdir(ROOT)

    spec = narrowed(load("cluster-scaling", "cluster"), "7100-7104",
                    ["env=Hopper-v4", "cluster=cluster/virtual/c256-hetero.yaml",
                     "arm=islands,islands-hof,islands-rand"])
    got = {}
    for t in trials(spec):
        c = trial_config(t, str(tmp_path / t.trial_id), "n")
        got.setdefault(t.params["arm"], set()).add(
            (c.islands, c.cpus_per_island, c.restart, c.topology, c.topology_degree))
    assert got == {"islands": {(32, 8, "none", "ring", 1)},
                   "islands-hof": {(32, 8, "hof", "ring", 1)},
                   "islands-rand": {(32, 8, "none", "random", 2)}}


def test_a_trials_files_are_found_again_in_this_checkout(tmp_path):
    """A kept experiment resumed from another worktree or machine names the files of the
    checkout it started in: the tail of each path is looked up under this one."""
    gone = "/nonexistent-checkout/bg2/cluster/virtual/c16.yaml"
    t = Trial("t000", "seed=3", {}, 3, {"env": "CartPole-v1", "runtime": "virtual",
                                        "cluster": gone, "islands": "fill",
                                        "cpus_per_island": 8, "seed": 3})
    cfg = trial_config(t, str(tmp_path / "run"), "ns")
    assert cfg.cluster == str(ROOT / "cluster" / "virtual" / "c16.yaml") and cfg.islands == 2
    nowhere = dataclasses.replace(t, overrides={**t.overrides, "cluster": "/nowhere/x.yaml"})
    with pytest.raises(ConfigError, match=r"--cluster: cannot read /nowhere/x\.yaml"):
        trial_config(nowhere, str(tmp_path / "run"), "ns")
