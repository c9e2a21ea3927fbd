"""The synthetic tasks (rastrigin:D, sphere:D) for load tests: values, costs, noise, errors."""

from __future__ import annotations

import numpy as np
import pytest

from envs import make_evaluator
from envs.spaces import pick_backend
from islands.config import ConfigError, parse_args, resolve


def test_rastrigin_and_sphere_values_and_the_evaluator_contract():
    ev = make_evaluator("rastrigin:3", episodes=2)
    X = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, 0.5, 0.5]])
    res = ev.evaluate(X, seed=0)
    # f(0) = 0; an integer point adds x^2 per coordinate; a half-integer adds x^2 + 20
    np.testing.assert_allclose(res.fitness, [0.0, -1.0, -3 * (0.25 + 20.0)], atol=1e-12)
    assert res.returns.shape == (3, 2) and res.env_steps == 6 and not res.broken.any()
    assert ev.backend == "synthetic" and ev.num_params == 3 and ev.obs_stats is None
    sphere = make_evaluator("sphere:2").evaluate(np.array([[3.0, 4.0]]), seed=1)
    assert sphere.fitness.tolist() == [-25.0]
    assert make_evaluator("rastrigin:3").evaluate(np.full((1, 3), np.nan), seed=0).broken[0]


def test_noise_is_common_to_the_population_and_seeded():
    ev = make_evaluator("sphere:2", episodes=4, env_kwargs={"noise": 1.0})
    a = ev.evaluate(np.zeros((2, 2)), seed=5).returns
    b = ev.evaluate(np.zeros((2, 2)), seed=5).returns
    c = ev.evaluate(np.zeros((2, 2)), seed=6).returns
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[0], a[1])  # common random numbers
    assert not np.array_equal(a, c) and a.std() > 0


def test_the_cost_of_a_call_is_spent():
    ev = make_evaluator("sphere:2", env_kwargs={"cost_ms": 5, "wait_ms": 20})
    res = ev.evaluate(np.zeros((4, 2)), seed=0)
    # 4 x 5 ms busy, then 20 ms asleep: the busy loop runs until its deadline and a sleep
    # lasts at least its time, so the call cannot take less (a floor, no window: a slow
    # machine only takes longer)
    assert res.wall_s >= 4 * 0.005 + 0.020
    # a host that defers the waits is owed them, call by call, and pays them once
    ev.defer_waits = True
    for _ in range(3):
        ev.evaluate(np.zeros((4, 2)), seed=0)
    assert ev.take_owed() == pytest.approx(3 * 0.020) and ev.take_owed() == 0.0


@pytest.mark.parametrize("env_id, backend, kwargs, message", [
    ("rastrigin:0", "auto", {}, "env 'rastrigin:0': the dimension must be at least 1"),
    ("rastrigin:4", "envpool", {}, "'rastrigin:4' and the envpool backend do not go together"),
    ("CartPole-v1", "synthetic", {}, "'CartPole-v1' and the synthetic backend do not go"),
    ("sphere:4", "auto", {"cost": 1}, "env 'sphere:4': unknown env_kwargs key 'cost' (known: "
     "cost_ms, wait_ms, noise)"),
])
def test_bad_synthetic_ids_and_options_are_refused(env_id, backend, kwargs, message):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        make_evaluator(env_id, backend=backend, env_kwargs=kwargs)


def test_the_launcher_config_takes_a_synthetic_env():
    cfg = resolve(parse_args(["--env", "rastrigin:50", "--islands", "3"]))
    assert pick_backend(cfg.env) == "synthetic" and cfg.eval_spec().build().num_params == 50
    with pytest.raises(ConfigError, match="do not go together"):
        resolve(parse_args(["--env", "rastrigin:50", "--backend", "torch"]))
