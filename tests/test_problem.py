"""A user's own objective as an evaluator (envs/problem.py): batched or per-genome
functions, minimize, bounds, non-finite values, and one-line errors for bad targets."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import HANG_S, ROOT, subprocess_env

from envs.problem import ProblemError, ProblemEvaluator, load_target
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
        load_target(target)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_target_string_imports_its_function():
    ev = ProblemEvaluator("math:fsum", 3)  # per genome: math.fsum of a row
    np.testing.assert_allclose(ev.evaluate(np.ones((2, 3)), 0).fitness, [3.0, 3.0])
    assert load_target("os.path:join") is __import__("os").path.join


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
def test_problem_options_resolve_to_an_env_and_bad_ones_are_one_line():
    from islands.config import ConfigError, from_dict, resolve

    cfg = resolve(from_dict({"problem": "envs.testing:shifted_sphere", "dim": 4,
                             "minimize": True}))
    assert cfg.env == "problem:envs.testing:shifted_sphere"
    assert cfg.env_kwargs == {"dim": 4, "minimize": True}
    assert resolve(cfg).env == cfg.env  # config.yaml fed back: the same
    for options, message in [
        ({"problem": "envs.testing:nope", "dim": 2}, "--problem: problem 'envs.testing:nope' "
         "cannot be imported"),
        ({"problem": "envs.testing:shifted_sphere"}, "--problem needs --dim"),
        ({"dim": 3}, "--dim and --minimize go with --problem"),
    ]:
        with pytest.raises(ConfigError) as e:
            resolve(from_dict(options))
        assert message in str(e.value) and "\n" not in str(e.value)


def test_islands_minimize_a_closure_given_from_python(ray_session, tmp_path):
    """A function with no importable name (a closure here, a notebook cell's in use)
    reaches the islands by value, and a fresh process re-tests the run from its files."""
    import subprocess
    import sys
    import threading

    import islands

    centre = np.array([1.0, -1.0, 0.5, 2.0])

    def cost(X):  # batched: (P, 4) -> (P,)
        return ((X - centre) ** 2).sum(axis=1)

    res = islands.run(problem=cost, dim=4, minimize=True, islands=2,
                      strategy="cmaes", popsize=12, target=-1e-4, generations=300,
                      time_budget=HANG_S, test_episodes=1, quiet=True,
                      out=str(tmp_path / "run"), namespace="t-problem")
    assert res.solved and res.stop_reason == "target", res.summary
    assert res.summary["env"] == "problem:islands_user:test_islands_minimize_a_closure_" \
        "given_from_python__locals__cost"
    np.testing.assert_allclose(res.best, centre, atol=0.02)  # the minimum, found
    assert res.best_fitness >= -1e-4
    # `islands evaluate` in another process installs the function from solution.json
    out = subprocess.run([sys.executable, "-m", "islands.evaluate", str(tmp_path / "run"),
                          "--episodes", "1"], cwd=ROOT, env=subprocess_env(),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    again = json.loads(out.stdout.strip().splitlines()[-1])
    assert again["mean"] == pytest.approx(-cost(res.best[None])[0], abs=1e-12), again
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
