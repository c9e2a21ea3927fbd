"""A user's own objective (envs/objective.py, envs/problem.py): batched or per-genome
functions, minimize, bounds, noisy functions, non-finite values, one-line errors for bad
functions and settings; the objective as one value from the API and the CLI to the
evaluator; and runs that stop on a target given in the function's own scale."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from conftest import HANG_S, ROOT, subprocess_env

from envs.objective import Objective, load_function
from envs.problem import ProblemError, ProblemEvaluator
from envs.spec import EvalSpec
from islands import strategies
from islands.config import ConfigError

X = np.array([[0.0, 0.0], [1.0, 2.0], [-1.0, 3.0]])


def sphere_batch(X):
    return (X * X).sum(1)


def sphere_one(x):
    return float(x @ x)


@pytest.mark.parametrize("fn, batched", [(sphere_batch, True), (sphere_one, False)])
def test_batched_and_per_genome_functions_give_the_same_fitness(fn, batched):
    ev = ProblemEvaluator(fn, 2, minimize=True)
    res = ev.evaluate(X, seed=0)
    assert ev.batched is batched and ev.env_id == f"problem:{fn.__name__}"
    np.testing.assert_array_equal(res.fitness, [-0.0, -5.0, -10.0])
    assert res.env_steps == 3 and res.returns.shape == (3, 1) and not res.broken.any()
    # maximize (the default) keeps the sign
    np.testing.assert_array_equal(ProblemEvaluator(fn, 2).evaluate(X, 0).fitness, [0, 5, 10])


def test_bounds_clip_what_the_function_sees_and_where_genomes_start():
    seen = []
    ev = ProblemEvaluator(lambda X: seen.append(X.copy()) or X.sum(1), 2, bounds=(-1, 1))
    ev.evaluate(np.array([[5.0, -5.0], [0.5, 0.25]]), seed=0)
    np.testing.assert_array_equal(seen[0], [[1.0, -1.0], [0.5, 0.25]])
    x0 = ev.policy.init_params(np.random.default_rng(0))
    assert x0.shape == (2,) and np.all(np.abs(x0) <= 1)


def test_a_non_finite_value_is_a_broken_genome_not_an_error():
    ev = ProblemEvaluator(lambda X: np.array([1.0, np.nan, np.inf]), 2)
    res = ev.evaluate(X, seed=0)
    assert res.fitness[0] == 1.0 and np.all(res.fitness[1:] == -np.inf)
    assert list(res.broken) == [False, True, True]


@pytest.mark.parametrize("target, message", [
    ("no_such_module_x:f", "cannot be imported"),
    ("math:no_such_function", "cannot be imported"),
    ("math:pi", "is not callable (float)"),
    ("math", "expected package.module:function"),
])
def test_a_bad_target_is_one_line(target, message):
    with pytest.raises(ProblemError) as e:
        load_function(target)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_target_string_imports_its_function():
    ev = ProblemEvaluator("math:fsum", 3)  # per genome: math.fsum of a row
    np.testing.assert_allclose(ev.evaluate(np.ones((2, 3)), 0).fitness, [3.0, 3.0])
    assert load_function("os.path:join") is __import__("os").path.join


@pytest.mark.parametrize("fn, message", [
    (lambda X: np.zeros(len(X) + 1) if X.ndim == 2 else np.zeros(2), "expected a number"),
    (lambda x: np.zeros(4), "expected a number"),
])
def test_a_wrong_return_shape_is_one_line(fn, message):
    with pytest.raises(ProblemError) as e:
        ProblemEvaluator(fn, 2).evaluate(X, seed=0)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_batched_function_that_changes_its_shape_later_is_refused():
    calls = []

    def fn(X):
        calls.append(1)
        return X.sum(1) if len(calls) == 1 else X.sum()

    ev = ProblemEvaluator(fn, 2)
    ev.evaluate(X, seed=0)
    with pytest.raises(ProblemError, match=r"returned shape \(\) for 3 genomes"):
        ev.evaluate(X, seed=1)


def test_cma_es_minimizes_a_users_rastrigin_to_its_global_basin():
    def rastrigin(X):  # per population, as a user writes it
        return 10 * X.shape[1] + (X**2 - 10 * np.cos(2 * math.pi * X)).sum(1)

    ev = ProblemEvaluator(rastrigin, 5, minimize=True)
    # a large population finds the global basin (seeds 0-4 all did at 200; at 100, one)
    es = strategies.make("cmaes", dim=5, sigma=2.0, seed=0, popsize=200,
                         x0=ev.policy.init_params(np.random.default_rng(0)))
    for g in range(150):
        es.tell(ev.evaluate(es.ask(), seed=g).fitness)
    assert es.best[1] > -1e-6  # f = 0 at the optimum; fitness is -f


# ---- through the config and a run ---------------------------------------------------------
def test_problem_options_resolve_to_one_objective_and_bad_ones_are_one_line():
    from islands.config import ConfigError, from_dict, resolve

    cfg = resolve(from_dict({"problem": "envs.testing:shifted_sphere", "dim": 4,
                             "minimize": True, "bounds": "-5,5", "target": 0.01}))
    assert cfg.env == "problem:envs.testing:shifted_sphere" and cfg.env_kwargs == {}
    obj = cfg.eval_spec().objective
    assert obj == Objective("envs.testing:shifted_sphere", 4, True, (-5.0, 5.0), False, 0.01)
    assert obj.travels == "by name" and cfg.objective() == obj
    # the target is the user's cost; candidates and tests compare fitness (minus the cost)
    assert cfg.target == 0.01 and cfg.fitness_target == -0.01
    assert resolve(cfg).eval_spec() == cfg.eval_spec()  # config.yaml fed back: the same
    # an earlier run's config.yaml: env problem:T with dim / minimize / bounds in env_kwargs
    old = resolve(from_dict({"env": "problem:envs.testing:shifted_sphere", "env_kwargs":
                             {"dim": 4, "minimize": True, "bounds": [-5, 5]}, "target": 0.01}))
    assert old.eval_spec() == cfg.eval_spec()
    for options, message in [
        ({"problem": "envs.testing:nope", "dim": 2}, "--problem: problem 'envs.testing:nope' "
         "cannot be imported"),
        ({"problem": "envs.testing:shifted_sphere"}, "--problem needs --dim"),
        ({"dim": 3}, "--dim, --minimize, --noisy and --bounds go with --problem (got --dim)"),
        ({"noisy": True}, "go with --problem (got --noisy)"),
        ({"problem": "envs.testing:shifted_sphere", "dim": 2, "bounds": "3,1"},
         "--bounds: needs LOW < HIGH"),
        ({"problem": "envs.testing:shifted_sphere", "dim": 2, "env_kwargs": {"noise": 1}},
         "--problem takes no --env-kwargs (got 'noise')"),
    ]:
        with pytest.raises(ConfigError) as e:
            resolve(from_dict(options))
        assert message in str(e.value) and "\n" not in str(e.value)


def test_a_deterministic_function_is_tested_by_one_call_a_noisy_one_as_an_env():
    from islands.config import from_dict, resolve

    base = {"problem": "envs.testing:shifted_sphere", "dim": 3}
    det = resolve(from_dict(base))
    assert (det.test_episodes, det.retest_episodes, det.confirm_episodes, det.candidates) == \
        (1, 0, 0, "sample")
    noisy = resolve(from_dict({**base, "noisy": True}))
    assert (noisy.test_episodes, noisy.retest_episodes, noisy.confirm_episodes,
            noisy.candidates) == (100, 100, 10, "center")
    mine = resolve(from_dict({**base, "noisy": True, "test_episodes": 7, "candidates":
                              "center,sample"}))
    assert (mine.test_episodes, mine.retest_episodes, mine.candidates) == \
        (7, 7, "center,sample")
    env = resolve(from_dict({"env": "CartPole-v1"}))
    assert (env.test_episodes, env.confirm_episodes, env.candidates) == (100, 10, "center")
    # a test of a deterministic function is one call, however many episodes it asks
    calls = []
    ev = ProblemEvaluator(lambda X: calls.append(1) or X.sum(1), 2, episodes=5)
    res = ev.evaluate(X, seed=0)
    assert len(calls) == 1 and res.returns.shape == (3, 5) and res.env_steps == 3
    assert np.all(res.returns == res.fitness[:, None])
    # a noisy one is called once per episode and averaged, as an env's episodes are
    rng = np.random.default_rng(0)
    ev = ProblemEvaluator(lambda X: X.sum(1) + rng.standard_normal(len(X)), 2, noisy=True,
                          episodes=5)
    res = ev.evaluate(X, seed=0)
    assert res.env_steps == 15 and res.returns.std(axis=1).min() > 0
    np.testing.assert_allclose(res.fitness, res.returns.mean(1))


def test_the_objective_travels_as_one_value_by_name_or_by_value():
    from envs.objective import source_of
    from envs.testing import shifted_sphere

    assert source_of(shifted_sphere) == "envs.testing:shifted_sphere"
    packed = Objective(source_of(lambda X: -X.sum(1)), 2, minimize=True, noisy=True,
                       target=-1.5)
    assert packed.by_value and packed.name.endswith("__locals___lambda_")
    spec = EvalSpec(env_id=packed.env_id, backend="problem", policy="genome", episodes=1,
                    objective=packed)
    again = EvalSpec.from_dict(json.loads(json.dumps(spec.to_dict())))  # solution.json
    assert again == spec and again.spaces()[1].size == 2
    np.testing.assert_array_equal(again.build().evaluate(X, 0).fitness, X.sum(1))
    assert packed.fitness_target == 1.5 and packed.scale.user(-2.0) == 2.0


def test_islands_minimize_a_closure_given_from_python(ray_session, tmp_path):
    """A function with no importable name (a closure here, a notebook cell's in use)
    reaches the islands by value, and a fresh process re-tests the run from its files."""
    import threading

    import islands

    centre = np.array([1.0, -1.0, 0.5, 2.0])

    def cost(X):  # batched: (P, 4) -> (P,)
        return ((X - centre) ** 2).sum(axis=1)

    res = islands.run(problem=cost, dim=4, minimize=True, islands=2,
                      strategy="cmaes", popsize=12, target=1e-4, generations=300,
                      time_budget=HANG_S, test_episodes=1, quiet=True,
                      out=str(tmp_path / "run"), namespace="t-problem")
    assert res.solved and res.stop_reason == "target", res.summary
    assert res.summary["env"] == "problem:islands_user:test_islands_minimize_a_closure_" \
        "given_from_python__locals__cost"
    np.testing.assert_allclose(res.best, centre, atol=0.02)  # the minimum, found
    assert res.best_fitness >= -1e-4 and 0 <= res.best_value <= 1e-4  # the cost itself
    assert res.summary["objective"]["travels"] == "by value"
    # `islands evaluate` in another process installs the function from solution.json
    out = subprocess.run([sys.executable, "-m", "islands.evaluate", str(tmp_path / "run"),
                          "--episodes", "1"], cwd=ROOT, env=subprocess_env(),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    again = json.loads(out.stdout.strip().splitlines()[-1])
    assert again["mean"] == pytest.approx(-cost(res.best[None])[0], abs=1e-12), again
    assert again["value"] == pytest.approx(cost(res.best[None])[0], abs=1e-12)  # the cost
    assert res.evaluate(episodes=3)["value"] == pytest.approx(again["value"])
    # and a resume's config (config.yaml) rebuilds the same evaluator
    code = ("import numpy as np; from islands.api import prepare; "
            f"c = prepare({str(tmp_path / 'run' / 'config.yaml')!r}, out={str(tmp_path)!r}); "
            "print(c.eval_spec().build().evaluate(np.zeros((1, 4)), 0).fitness[0])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=subprocess_env(),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.strip().splitlines()[-1]) == pytest.approx(-(centre**2).sum())

    lock = threading.Lock()
    with pytest.raises(ConfigError, match="cannot be pickled to reach the islands"):
        islands.run(problem=lambda X: X.sum(1) if lock else 0, dim=2,
                    out=str(tmp_path / "never"))
    assert not (tmp_path / "never").exists()


def _solved_on_target(s: dict, target: float, minimize: bool) -> None:
    """A run's summary says it stopped solved on its target, in the function's own scale,
    with what solving it cost recorded."""
    assert s["solved"] and s["stop_reason"] == "target", s
    assert s["episodes_to_solve"] > 0 and s["evals_to_solve"] > 0
    assert 0 < s["wall_to_solve"] <= s["wall_s"]
    obj = s["objective"]
    assert obj["target"] == target and s["target"] == target
    reached = (lambda v: v <= target) if minimize else (lambda v: v >= target)
    assert reached(obj["best"]) and reached(obj["test"]), obj
    assert [t["passed"] for t in s["tests"]][-1] and not s["tests"][-1].get("stopped_early")


def test_a_cost_target_stops_a_cli_run_and_a_value_target_a_python_one(ray_session,
                                                                       tmp_path):
    """The issue's two reproductions: ``--minimize --target 0.001`` on a cost through the
    command line (joining this session's Ray), and ``islands.run(problem=f, target=-0.001)``
    on a maximized function. Both used to run to their generation cap unsolved."""
    import islands

    gcs = ray_session.get_runtime_context().gcs_address
    out = tmp_path / "cli"
    proc = subprocess.run(
        [sys.executable, "-m", "islands.launch", "--address", gcs, "--problem",
         "envs.testing:shifted_sphere", "--dim", "10", "--minimize", "--target", "0.001",
         "--islands", "2", "--generations", "2000", "--time-budget", str(HANG_S),
         "--namespace", "t-cost-target", "--out", str(out)],
        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    line = json.loads(proc.stdout.strip().splitlines()[-1])
    assert line["solved"] and line["objective"]["best"] <= 0.001, line
    assert "global best cost" in proc.stdout  # the live lines speak the cost
    _solved_on_target(json.loads((out / "summary.json").read_text()), 0.001, True)

    def value(X):  # maximized: minus a shifted sphere, 0 at its best
        return -((X - 0.5) ** 2).sum(1)

    res = islands.run(problem=value, dim=10, target=-0.001, islands=2, generations=2000,
                      time_budget=HANG_S, quiet=True, out=str(tmp_path / "py"),
                      namespace="t-value-target")
    _solved_on_target(res.summary, -0.001, False)
    assert res.time_to_solve == res.summary["wall_to_solve"] and res.episodes_to_solve > 0
    # TensorBoard has the cost's own tags for a cost, the fitness's for a value
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags = EventAccumulator(str(out / "tb" / "archipelago")).Reload().Tags()["scalars"]
    assert "cost/best" in tags and "fitness/best" not in tags, tags


def test_a_noisy_function_is_tested_and_confirmed_on_many_calls(ray_session, tmp_path):
    """``noisy=True``: a candidate's test and its confirmation average many calls, as an
    env's episodes, and the run stops when both reach the target."""
    import islands

    rng = np.random.default_rng(0)

    def noisy_cost(X):
        return ((X - 1.0) ** 2).sum(1) + 0.01 * rng.standard_normal(len(X))

    res = islands.run(problem=noisy_cost, dim=5, minimize=True, noisy=True, target=0.02,
                      test_episodes=40, islands=2, generations=2000, time_budget=HANG_S,
                      quiet=True, out=str(tmp_path / "noisy"), namespace="t-noisy-target")
    s = res.summary
    _solved_on_target(s, 0.02, True)
    last = s["tests"][-1]
    assert last["role"] == "confirmation" and last["episodes"] == 40 and last["std"] > 0
    assert s["objective"]["confirmation"] <= 0.02 and s["objective"]["noisy"]
