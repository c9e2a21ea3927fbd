"""The config package without Ray: registry choices, pydantic coercion errors, and a resolved
config that is fully resolved (test step limit, checkpoint location, evaluation specs)."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
import yaml

import policies
from envs.spaces import BACKENDS
from envs.spec import EvalSpec
from islands import topology
from islands.config import (
    FIELDS,
    Config,
    ConfigError,
    build_parser,
    from_dict,
    parse_args,
    resolve,
)
from islands.envdefaults import env_defaults
from islands.strategies import STRATEGIES
from policies import POLICIES


# ---- choices come from the registries ----------------------------------------------------
@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_registry_strategy_is_accepted(name):
    cfg = resolve(parse_args(["--strategy", name, "--islands", "2"]))
    assert cfg.strategy == name
    specs = resolve(parse_args(["--island-specs", f'[{{"strategy": "{name}"}}, {{}}]']))
    assert specs.island_specs[0]["strategy"] == name and specs.islands == 2


def test_unknown_strategy_is_refused_naming_the_registry():
    with pytest.raises(ConfigError) as e:
        resolve(parse_args(["--strategy", "cmaes,cma-es"]))
    assert str(e.value) == ("unknown strategy 'cma-es'; did you mean 'cmaes'? (choose from "
                            f"{', '.join(STRATEGIES)})")


@pytest.mark.parametrize("policy", list(POLICIES))
def test_unknown_policy_option_is_refused_naming_the_known_keys(policy):
    with pytest.raises(ConfigError) as e:
        resolve(parse_args(["--env", "CartPole-v1", "--policy", policy,
                            "--policy-options", '{"hiden": [8]}']))
    known = ", ".join(policies.option_names(policy))
    assert str(e.value) == (f"--policy-options: unknown key 'hiden' for policy {policy!r} "
                            f"(known: {known})")
    assert "hidden" in known
    # the library entry point refuses it too, so no caller builds the default network instead
    with pytest.raises(ValueError, match="unknown key 'hiden'"):
        policies.make(policy, (4, 84, 84), policies.ActionSpec(discrete=True, n=2), hiden=[8])


def test_help_and_choices_list_the_registries():
    assert FIELDS["policy"].metadata["choices"] == tuple(POLICIES)
    assert FIELDS["backend"].metadata["choices"] == tuple(BACKENDS)
    assert FIELDS["topology"].metadata["choices"] == topology.KINDS
    help_text = " ".join(build_parser().format_help().split())
    assert f"({', '.join(STRATEGIES)})" in help_text and "openai-es-nt" in help_text
    assert f"policy network: {', '.join(POLICIES)}" in help_text


# ---- coercion: spellings users write, one-line errors naming the flag --------------------
def test_spellings_are_coerced():
    cfg = parse_args(["--obs-norm", "auto", "--target", "none", "--hidden", "64, 32",
                      "--resources-per-island", "a=1,b=0.5", "--edges", "0>1;1>0", "--quiet",
                      "--dashboard", "yes", "--popsize", " 12 ", "--sigma", "1e-2",
                      "--strategy-options", '{"lr": 0.1}', "--islands", "none"])
    assert (cfg.obs_norm, cfg.target, cfg.hidden, cfg.resources_per_island, cfg.edges) == (
        None, None, [64, 32], {"a": 1.0, "b": 0.5}, "0>1,1>0")
    assert (cfg.quiet, cfg.dashboard, cfg.popsize, cfg.sigma, cfg.islands) == (
        True, True, 12, 0.01, None)
    assert cfg.strategy_options == {"lr": 0.1} and parse_args([]).target == "auto"
    yaml_values = from_dict({"hidden": [8], "popsize": 16.0, "resources_per_island":
                             {"gpu_node": 1}, "edges": [[0, 1], [1, 0]], "target": 200})
    assert (yaml_values.hidden, yaml_values.popsize, yaml_values.edges) == ([8], 16, "0>1,1>0")
    assert yaml_values.resources_per_island == {"gpu_node": 1.0} and yaml_values.target == 200.0


def test_hidden_linear_asks_for_a_policy_without_hidden_layers():
    # "" and "none" mean unset (the env table's network); "linear" means no hidden layer
    cfg = resolve(parse_args(["--env", "LunarLander-v3", "--hidden", "Linear"]))
    assert cfg.hidden == [] and resolve(parse_args(["--env", "LunarLander-v3"])).hidden == [16]
    import policies
    from policies.base import ActionSpec

    pol = policies.make("mlp", (8,), ActionSpec(discrete=True, n=4),
                        **cfg.eval_spec().policy_options)
    assert pol.num_params == 8 * 4 + 4  # one linear map: weights and biases


@pytest.mark.parametrize("argv, message", [
    (["--popsize", "x"], "--popsize: expected an integer, got 'x'"),
    (["--popsize", "5.5"], "--popsize: expected an integer, got '5.5'"),
    (["--quiet", "maybe"], "--quiet: expected on or off, got 'maybe'"),
    (["--obs-norm", "t"], "--obs-norm: expected on or off, got 't'"),
    (["--sigma", "nan"], "--sigma: expected a number, got 'nan'"),
    (["--target", "high"], "--target: expected a number, got 'high'"),
    (["--strategy-options", "{bad"], "--strategy-options: expected JSON (Expecting property "
     "name enclosed in double quotes), got '{bad'"),
    (["--env-kwargs", "[1]"], "--env-kwargs: expected a JSON object, got '[1]'"),
    (["--device", "tpu"], "--device: unknown value 'tpu'; choose one of auto, cpu, cuda"),
    (["--backend", "jax"], f"--backend: unknown value 'jax'; choose one of {', '.join(BACKENDS)}"),
    (["--hidden", "64,0"], "--hidden: layer sizes must be positive, got '64,0'"),
    (["--hidden", "64,x"], "--hidden: expected comma-separated layer sizes like 64,64, or "
     "linear, got '64,x'"),
    (["--edges", "0-1"], "--edges: bad edge '0-1': write edges as SRC>DST, e.g. 0>1,1>0"),
    (["--resources-per-island", "gpu_node"], "--resources-per-island: expected "
     "NAME=AMOUNT[,NAME=AMOUNT], got 'gpu_node'"),
    (["--resources-per-island", "gpu_node=x"], "--resources-per-island: expected a number, "
     "got 'gpu_node=x'"),
    (["--island-specs", '{"strategy": "ga"}'], "--island-specs: expected a JSON list, got "
     "'{\"strategy\": \"ga\"}'"),
    (["--island-specs", '[{"strategy": "ga", "popsize2": 4}]'], "--island-specs: entry 0 has "
     "unknown key 'popsize2'; allowed: strategy, popsize, sigma, options, episodes, num_cpus, "
     "num_gpus, resources, slowdown_s, restart, backend"),
    (["--island-specs", "[3]"], "--island-specs: entry 0 must be a mapping, got 3"),
])
def test_bad_values_give_one_line_naming_the_flag(argv, message):
    with pytest.raises(ConfigError) as e:
        parse_args(argv)
    assert str(e.value) == message


@pytest.mark.parametrize("values, message", [
    ({"popsize": True}, "--popsize: expected an integer, got True"),
    ({"env": 3}, "--env: expected a string, got 3"),
    ({"gpus_per_island": None}, "--gpus-per-island: expected a number, got None"),
    ({"edges": 5}, "--edges: expected edges like 0>1,1>2, got 5"),
    ({"_checkpoint_default": "x"},
     "unknown config key '_checkpoint_default'; did you mean 'checkpoint_uri'?"),
])
def test_bad_yaml_values_give_one_line(values, message):
    with pytest.raises(ConfigError) as e:
        from_dict(values)
    assert str(e.value) == message


# ---- a resolved config is fully resolved ---------------------------------------------------
@pytest.mark.parametrize("argv", [
    [],
    ["--env", "LunarLander-v3", "--max-episode-steps", "200", "--out", "runs/x"],
    ["--island-specs", '[{"strategy": "ga"}, {"popsize": 8}]', "--checkpoint-uri", "/ck"],
])
def test_resolve_is_idempotent(argv):
    once = resolve(parse_args(argv))
    assert resolve(once) == once
    assert resolve(once).to_yaml_dict() == once.to_yaml_dict()


def test_test_step_limit_is_the_registered_limit_even_with_a_shorter_training_limit():
    cfg = resolve(parse_args(["--env", "LunarLander-v3", "--max-episode-steps", "200"]))
    assert (cfg.max_episode_steps, cfg.test_max_episode_steps) == (200, 1000)
    assert cfg.test_max_episode_steps == 1000


def test_test_step_limit_of_an_envpool_only_id_is_the_training_limit():
    cfg = resolve(parse_args(["--env", "Pong-v5", "--max-episode-steps", "300"]))
    assert cfg.test_max_episode_steps == 300


def test_given_test_step_limit_is_kept():
    cfg = resolve(parse_args(["--env", "LunarLander-v3", "--test-max-episode-steps", "50"]))
    assert cfg.test_max_episode_steps == 50


def test_checkpoint_uri_follows_out_and_is_not_written(tmp_path):
    run = tmp_path / "run"
    cfg = resolve(parse_args(["--out", str(run)]))
    assert cfg.checkpoint_uri == str(run / "checkpoints")
    assert cfg.to_yaml_dict()["checkpoint_uri"] is None
    assert resolve(parse_args([])).checkpoint_uri is None  # no run directory yet

    moved = resolve(dataclasses.replace(cfg, out=str(tmp_path / "other")))
    assert moved.checkpoint_uri == str(tmp_path / "other" / "checkpoints")
    relative = resolve(dataclasses.replace(cfg, out="rel"))
    assert relative.checkpoint_uri == os.path.join(os.path.abspath("rel"), "checkpoints")


def test_a_moved_run_directory_resumes_from_its_own_checkpoints(tmp_path):
    cfg = resolve(parse_args(["--out", str(tmp_path / "old")]))
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "config.yaml").write_text(yaml.safe_dump(cfg.to_yaml_dict()))
    resumed = resolve(parse_args(["--resume", str(moved)]))
    assert resumed.checkpoint_uri == str(moved / "checkpoints")


def test_a_given_checkpoint_uri_is_kept_and_written(tmp_path):
    cfg = resolve(parse_args(["--out", str(tmp_path), "--checkpoint-uri", "s3://b/run"]))
    assert cfg.checkpoint_uri == "s3://b/run"
    assert cfg.to_yaml_dict()["checkpoint_uri"] == "s3://b/run"
    assert resolve(dataclasses.replace(cfg, out="elsewhere")).checkpoint_uri == "s3://b/run"
    again = resolve(parse_args(["--config", _write(tmp_path, cfg), "--out", "x"]))
    assert again.checkpoint_uri == "s3://b/run"


def _write(tmp_path, cfg: Config) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg.to_yaml_dict()))
    return str(path)


def test_eval_and_test_specs():
    cfg = resolve(parse_args(["--env", "LunarLander-v3", "--max-episode-steps", "200",
                              "--obs-norm", "on", "--test-episodes", "7",
                              "--policy-options", '{"hidden": [4, 4]}']))
    common = dict(env_id="LunarLander-v3", backend="auto", policy="mlp",
                  policy_options={"hidden": [4, 4]}, obs_norm=True,
                  env_kwargs=None, env_module=None)
    episodes = env_defaults("LunarLander-v3")["episodes"]  # the env table's, not a copy
    assert cfg.eval_spec() == EvalSpec(**common, episodes=episodes, max_episode_steps=200)
    assert cfg.test_spec() == EvalSpec(**common, episodes=7, max_episode_steps=1000)


def test_test_spec_builds_an_evaluator_with_the_test_limit():
    # Acrobot ends only when the arm swings up, which a zero genome never does.
    cfg = resolve(parse_args(["--env", "Acrobot-v1", "--test-max-episode-steps", "20",
                              "--test-episodes", "3", "--backend", "gymnasium"]))
    ev = cfg.test_spec().build()
    try:
        res = ev.evaluate(np.zeros((2, ev.num_params)), seed=0)
    finally:
        ev.close()
    assert res.lengths.shape == (2, 3) and (res.lengths == 20).all()


def test_the_env_tables_strategy_options_reach_only_its_strategys_islands():
    from islands.planning import plan_islands

    tuned = env_defaults("BipedalWalker-v3")["strategy_options"]  # the table's, not a copy
    assert tuned
    base = ["--env", "BipedalWalker-v3", "--islands", "2", "--strategy", "cmaes,openai-es"]
    plan = plan_islands(resolve(parse_args(base)), [2.0])
    assert plan[0].options == tuned and plan[1].options == {}
    off = resolve(parse_args([*base, "--strategy-options", '{"bounds": null}']))
    assert plan_islands(off, [2.0])[0].options == {"bounds": None}
    own = '[{"options": {"bounds": [-2, 2]}}, {}]'
    specs = resolve(parse_args([*base, "--island-specs", own]))
    assert plan_islands(specs, [2.0])[0].options == {"bounds": [-2, 2]}


def test_the_env_tables_migration_interval_is_a_default_the_flag_overrides():
    from islands.envdefaults import GENERIC
    from islands.runtime.archipelago import coordinator_spec

    tuned = env_defaults("LunarLander-v3")["migration_interval"]  # the table's, not a copy
    assert tuned != GENERIC["migration_interval"]
    cfg = resolve(parse_args(["--env", "LunarLander-v3"]))
    assert cfg.migration_interval == tuned
    assert coordinator_spec(cfg).migration_interval == tuned
    flag = resolve(parse_args(["--env", "LunarLander-v3", "--migration-interval", "3"]))
    assert flag.migration_interval == 3
    generic = resolve(parse_args(["--env", "CartPole-v1"]))
    assert generic.migration_interval == GENERIC["migration_interval"]
    with pytest.raises(ConfigError, match="migration-interval"):
        resolve(parse_args(["--env", "CartPole-v1", "--migration-interval", "0"]))


def test_popsize_scale_makes_one_island_as_large_as_k_and_keeps_ars_top_share():
    from islands.planning import plan_islands

    hopper = resolve(parse_args(["--env", "Hopper-v4", "--islands", "1",
                                 "--popsize-scale", "4"]), check_env=False)
    (spec,) = plan_islands(hopper, [2.0])
    # ARS V2-t's Hopper row: N = 8 directions, b = 4; four times larger: N = 32, b = 16
    assert (spec.popsize, spec.options["top"], spec.options["lr"]) == (64, 16, 0.01)
    assert spec.num_cpus == 2.0  # the single island gets the cores k islands would share
    lunar = resolve(parse_args(["--env", "LunarLander-v3", "--islands", "1",
                                "--popsize-scale", "2"]), check_env=False)
    assert [s.popsize for s in plan_islands(lunar, [2.0])] == [96]
    mixed = resolve(parse_args(["--env", "LunarLander-v3", "--popsize-scale", "3",
                                "--island-specs", '[{"popsize": 10}, {}]']), check_env=False)
    assert [s.popsize for s in plan_islands(mixed, [2.0])] == [30, 144]


@pytest.mark.parametrize("argv, message", [
    (["--env", "Swimmer-v4", "--popsize-scale", "2"], "--popsize-scale 2 needs a population "
     "size to scale: Swimmer-v4 has none in the env table; give --popsize"),
    (["--popsize-scale", "0"], "--popsize-scale must be positive, got 0"),
])
def test_popsize_scale_refuses_what_it_cannot_scale(argv, message):
    with pytest.raises(ConfigError) as e:
        resolve(parse_args(argv), check_env=False)
    assert str(e.value) == message


def test_a_runs_directory_is_settled_once_new_or_resumable(tmp_path):
    """settle_run_dir: a fresh default or the given directory, resolved again only where that
    moved ``out`` (checkpoints follow); a non-empty directory and a resume without
    checkpoints are one-line ConfigErrors."""
    from islands.config.resume import settle_run_dir

    cfg = resolve(parse_args(["--out", str(tmp_path / "a")]))
    assert settle_run_dir(cfg) is cfg  # already decided: neither resolved nor changed
    moved = settle_run_dir(cfg, str(tmp_path / "b"))
    assert moved.out == str(tmp_path / "b")
    assert moved.checkpoint_uri == str(tmp_path / "b" / "checkpoints")
    fresh = settle_run_dir(resolve(parse_args([])))
    assert fresh.out.startswith("runs") and fresh.checkpoint_uri.endswith("checkpoints")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x").write_text("a run's file")
    with pytest.raises(ConfigError, match="already exists and is not empty"):
        settle_run_dir(cfg)
    (tmp_path / "a" / "config.yaml").write_text(yaml.safe_dump(cfg.to_yaml_dict()))
    with pytest.raises(ConfigError, match="--resume: no checkpoints"):
        settle_run_dir(resolve(parse_args(["--resume", str(tmp_path / "a")])))
