"""EnvPool and Gymnasium evaluators on real environments (no mocks): scheduling, common
random numbers, agreement with plain sequential rollouts, user envs, NaN handling."""

from __future__ import annotations

import json
import logging
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest
import torch

import envs
import policies
from envs import EvalSpec, env_spaces, make_evaluator
from envs.common import episode_seeds
from envs.envpool_evaluator import EnvPoolEvaluator
from envs.gym_evaluator import GymnasiumEvaluator
from envs.testing import LineWorld

BACKENDS = ["envpool", "gymnasium"]


@pytest.fixture(autouse=True)
def one_torch_thread():
    # Torch threads beside EnvPool's on a 2-core machine contend; restore the setting after.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def population(ev, P: int, seed: int, scale: float = 0.5) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(P, ev.num_params)) * scale


def check_accounting(res, P: int, E: int) -> None:
    """Exactly E finished episodes per individual, no stepped frame wasted."""
    assert res.returns.shape == res.lengths.shape == (P, E)
    assert res.fitness.shape == res.broken.shape == (P,)
    ok = ~res.broken
    assert (res.lengths[ok] > 0).all()
    assert res.env_steps == res.frames == int(res.lengths.sum())
    assert res.live_fraction == 1.0
    np.testing.assert_allclose(res.fitness[ok], res.returns[ok].mean(axis=1))


@torch.inference_mode()
def sequential_returns(env_id, policy, params, seeds, max_episode_steps=None,
                       env_kwargs=None, obs_log=None):
    """Plain Gymnasium rollouts, one individual and one episode at a time."""
    if ":" in env_id:
        module, name = env_id.split(":")
        env = getattr(sys.modules[module], name)(**(env_kwargs or {}))
        if max_episode_steps:
            env = gym.wrappers.TimeLimit(env, max_episode_steps)
    else:
        env = gym.make(env_id, max_episode_steps=max_episode_steps, **(env_kwargs or {}))
    out = np.zeros((len(params), len(seeds)))
    lengths = np.zeros((len(params), len(seeds)), dtype=np.int64)
    for p in range(len(params)):
        pt = torch.as_tensor(params[p : p + 1], dtype=torch.float32)
        for e, s in enumerate(seeds):
            obs, _ = env.reset(seed=int(s))
            state = policy.initial_state(1, 1, "cpu")
            done = False
            while not done:
                if obs_log is not None:
                    obs_log.append(np.asarray(obs, dtype=np.float64))
                o = torch.as_tensor(obs).reshape(1, 1, *policy.obs_shape)
                a, state = policy.act(pt, o, state)
                a = int(a[0, 0]) if policy.action.discrete else a[0, 0].numpy()
                obs, r, term, trunc, _ = env.step(a)
                out[p, e] += r
                lengths[p, e] += 1
                done = term or trunc
    env.close()
    return out, lengths


# -- factory and spaces -----------------------------------------------------------------


def test_auto_backend_prefers_envpool_and_falls_back_to_gymnasium():
    with make_evaluator("CartPole-v1") as ev:
        assert isinstance(ev, EnvPoolEvaluator) and ev.backend == "envpool"
    with make_evaluator("islands/LineWorld-v0", env_module="envs.testing") as ev:
        assert isinstance(ev, GymnasiumEvaluator) and ev.backend == "gymnasium"
    with make_evaluator("CartPole-v1", backend="gymnasium") as ev:
        assert isinstance(ev, GymnasiumEvaluator)


def test_torch_backend_when_asked_or_only_it_has_the_id():
    torch_ev = pytest.importorskip("envs.torch_evaluator")
    with make_evaluator("CartPole-v1", backend="torch", episodes=1) as ev:
        assert isinstance(ev, torch_ev.TorchEvaluator)
    with make_evaluator("Snake-v0", episodes=1) as ev:  # neither EnvPool nor Gymnasium has it
        assert ev.backend == "torch"
        assert env_spaces("Snake-v0") == (ev.obs_shape, ev.env.action)
    with pytest.raises(ValueError, match="the torch backend has no env 'Pong-v5'"):
        make_evaluator("Pong-v5", backend="torch")


@pytest.mark.parametrize("bad, hint", [("LunarLander-v9", "LunarLander-v3"),
                                       ("CartPole-v2", "CartPole-v1")])
def test_unknown_env_id_names_close_matches(bad, hint):
    with pytest.raises(ValueError, match=f"unknown env id '{bad}'.*did you mean.*{hint}"):
        make_evaluator(bad)


def test_bad_arguments_give_one_line_errors():
    with pytest.raises(ValueError, match="unknown backend 'jax'"):
        make_evaluator("CartPole-v1", backend="jax")
    with pytest.raises(ValueError, match="EnvPool has no env 'islands/LineWorld-v0'"):
        make_evaluator("islands/LineWorld-v0", backend="envpool", env_module="envs.testing")
    with make_evaluator("CartPole-v1", backend="gymnasium") as ev:
        with pytest.raises(ValueError, match=r"params must have shape \(P, "):
            ev.evaluate(np.zeros((2, ev.num_params + 1)), seed=0)
        with pytest.raises(ValueError, match="seed must be a non-negative int"):
            ev.evaluate(np.zeros((2, ev.num_params)), seed=-1)
    with pytest.raises(ValueError, match="env_kwargs may not set"):
        make_evaluator("CartPole-v1", backend="envpool", env_kwargs={"num_envs": 3})
    with pytest.raises(ValueError, match="Snake-v1: unsupported observation space Dict"):
        make_evaluator("Snake-v1", backend="envpool")  # EnvPool's jumanji Snake


def test_env_spaces():
    assert env_spaces("CartPole-v1") == ((4,), policies.ActionSpec(discrete=True, n=2))
    shape, act = env_spaces("Pendulum-v1", backend="gymnasium")
    assert shape == (3,) and not act.discrete and act.shape == (1,)
    assert act.low == (-2.0,) and act.high == (2.0,)
    assert env_spaces("envs.testing:LineWorld")[0] == (2,)


@pytest.mark.parametrize("backend", ["auto", "envpool", "gymnasium", "torch"])
def test_eval_spec_round_trips_and_builds_what_make_evaluator_builds(backend):
    assert backend in envs.BACKENDS
    kw = {"policy_options": {"hidden": [8]}, "episodes": 2, "max_episode_steps": 60,
          "obs_norm": True}
    spec = EvalSpec("CartPole-v1", backend=backend, **kw)
    assert EvalSpec.from_dict(spec.to_dict()) == spec
    assert EvalSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    assert spec.replace(episodes=3).episodes == 3 and spec.episodes == 2
    with EvalSpec.from_dict(spec.to_dict()).build() as a, \
            make_evaluator("CartPole-v1", backend=backend, **kw) as b:
        assert type(a) is type(b) and a.num_params == b.num_params
        x = population(a, 3, 21)
        for seed in (4, 5):  # the second call normalizes with the merged statistics
            ra, rb = a.evaluate(x, seed=seed), b.evaluate(x, seed=seed)
            np.testing.assert_array_equal(ra.returns, rb.returns)
            np.testing.assert_array_equal(ra.lengths, rb.lengths)
            np.testing.assert_array_equal(ra.obs_mean, rb.obs_mean)
        assert a.obs_stats.count == b.obs_stats.count > 0


# -- scheduling and accounting ----------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("env_id", ["CartPole-v1", "LunarLander-v3"])
def test_every_individual_gets_exactly_E_episodes(backend, env_id):
    P, E = 5, 3
    with make_evaluator(env_id, backend=backend, episodes=E, num_threads=2,
                        policy_options={"hidden": (8,)}, max_episode_steps=300) as ev:
        res = ev.evaluate(population(ev, P, 0), seed=7)
    check_accounting(res, P, E)
    assert res.lengths.max() <= 300
    assert np.isfinite(res.fitness).all()


@pytest.mark.parametrize("max_envs", [4, 7, 256])  # 1 lane + autoresets .. 1 episode/slot
def test_envpool_layouts_give_E_episodes_and_crn(max_envs):
    P, E = 4, 3
    with make_evaluator("CartPole-v1", backend="envpool", episodes=E, max_envs=max_envs,
                        policy_options={"hidden": (8,)}, num_threads=2) as ev:
        x = population(ev, P, 1)
        x[2] = x[0]
        for seed in (1, 2):  # the second call checks the lanes stayed in lockstep
            res = ev.evaluate(x, seed=seed)
            check_accounting(res, P, E)
            np.testing.assert_array_equal(res.returns[2], res.returns[0])
            np.testing.assert_array_equal(res.lengths[2], res.lengths[0])
        assert ev.pools_built == 1  # built once, reused
        assert res.extra["lanes"] == max(1, min(E, max_envs // P))


def test_gymnasium_slot_count_does_not_change_results():
    P, E = 4, 3
    results = []
    for num_envs in (1, 5, 32):
        with make_evaluator("CartPole-v1", backend="gymnasium", episodes=E, num_envs=num_envs,
                            policy_options={"hidden": (8,)}) as ev:
            res = ev.evaluate(population(ev, P, 2), seed=3)
            check_accounting(res, P, E)
            results.append(res.returns)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])


@pytest.mark.parametrize("overlap", [False, True])
def test_envpool_fast_io_and_overlap_do_not_change_results(overlap):
    P, E = 6, 2
    out = []
    for low_level in (True, False):
        with EnvPoolEvaluator("CartPole-v1", episodes=E, policy_options={"hidden": (8,)},
                              overlap=overlap, merge_below=4, low_level_io=low_level) as ev:
            res = ev.evaluate(population(ev, P, 3), seed=11)
            assert res.extra["low_level_io"] is low_level
            check_accounting(res, P, E)
            out.append(res.returns)
    np.testing.assert_array_equal(out[0], out[1])


# -- agreement with plain rollouts --------------------------------------------------------


@pytest.mark.parametrize("env_id, kwargs", [
    ("CartPole-v1", {}),
    ("LunarLander-v3", {"max_episode_steps": 150}),
    ("Pendulum-v1", {"max_episode_steps": 30}),  # Box actions
    ("envs.testing:LineWorld", {"max_episode_steps": 25}),
])
def test_gymnasium_backend_equals_sequential_rollouts(env_id, kwargs):
    P, E, seed = 3, 2, 5
    with make_evaluator(env_id, backend="gymnasium", episodes=E, num_envs=4,
                        policy_options={"hidden": (8,)}, **kwargs) as ev:
        x = population(ev, P, 4)
        res = ev.evaluate(x, seed=seed)
        ref, ref_len = sequential_returns(env_id, ev.policy, x, episode_seeds(seed, E),
                                          kwargs.get("max_episode_steps"))
    check_accounting(res, P, E)
    np.testing.assert_array_equal(res.lengths, ref_len)
    np.testing.assert_allclose(res.returns, ref, rtol=1e-9, atol=1e-9)


def test_stateful_policy_matches_sequential_rollouts():
    """neuromod carries per-slot state: the scheduler must reset it when a slot starts a
    new episode (2 slots for 6 episodes: slots are reused)."""
    P, E, seed = 3, 2, 9
    with make_evaluator("CartPole-v1", backend="gymnasium", episodes=E, num_envs=2,
                        policy="neuromod", policy_options={"hidden": 6}) as ev:
        x = population(ev, P, 5)
        res = ev.evaluate(x, seed=seed)
        ref, _ = sequential_returns("CartPole-v1", ev.policy, x, episode_seeds(seed, E))
    np.testing.assert_array_equal(res.returns, ref)


def test_envpool_stateful_policy_with_autoresets():
    P, E = 4, 3
    with make_evaluator("CartPole-v1", backend="envpool", episodes=E, max_envs=P,
                        policy="neuromod", policy_options={"hidden": 6}) as ev:
        x = population(ev, P, 6)
        x[3] = x[1]
        res = ev.evaluate(x, seed=1)
    check_accounting(res, P, E)
    np.testing.assert_array_equal(res.returns[3], res.returns[1])


def test_envpool_dynamics_match_gymnasium_in_distribution():
    """EnvPool episodes cannot be seeded like Gymnasium's, so compare what is comparable:
    CartPole pushed left every step (zero network: argmax tie -> action 0) falls in 8-11
    steps from Gymnasium's start distribution; EnvPool's episodes must fall in that range."""
    E = 40
    zeros = None
    lengths = {}
    for backend in BACKENDS:
        with make_evaluator("CartPole-v1", backend=backend, episodes=E,
                            policy_options={"hidden": (4,)}) as ev:
            zeros = np.zeros((1, ev.num_params))
            lengths[backend] = ev.evaluate(zeros, seed=0).lengths[0]
    lo, hi = lengths["gymnasium"].min(), lengths["gymnasium"].max()
    assert 7 <= lo and hi <= 12
    assert lengths["envpool"].min() >= lo - 1 and lengths["envpool"].max() <= hi + 1
    assert abs(lengths["envpool"].mean() - lengths["gymnasium"].mean()) < 1.0


# -- common random numbers --------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_identical_individuals_meet_identical_episodes(backend):
    P, E = 4, 3
    with make_evaluator("LunarLander-v3", backend=backend, episodes=E, num_threads=2,
                        policy_options={"hidden": (8,)}, max_episode_steps=200) as ev:
        x = population(ev, P, 8, scale=0.2)
        x[3] = x[0]
        a = ev.evaluate(x, seed=1)
        b = ev.evaluate(x, seed=2)
    for res in (a, b):
        np.testing.assert_array_equal(res.returns[3], res.returns[0])
        assert len(np.unique(res.returns[0])) == E  # the E episodes differ from each other
    assert not np.array_equal(a.returns, b.returns)  # a new seed gives new episodes


def test_gymnasium_same_seed_same_episodes():
    with make_evaluator("CartPole-v1", backend="gymnasium", episodes=3) as ev:
        x = population(ev, 3, 9)
        np.testing.assert_array_equal(ev.evaluate(x, 4).returns, ev.evaluate(x, 4).returns)


def test_envpool_reseed_each_call_makes_calls_reproducible():
    with make_evaluator("LunarLander-v3", backend="envpool", episodes=2,
                        policy_options={"hidden": (8,)}, reseed_each_call=True,
                        max_episode_steps=150) as ev:
        x = population(ev, 3, 10, scale=0.2)
        a, b, c = ev.evaluate(x, 4), ev.evaluate(x, 4), ev.evaluate(x, 5)
    np.testing.assert_array_equal(a.returns, b.returns)
    assert not np.array_equal(a.returns, c.returns)


# -- user envs --------------------------------------------------------------------------


def test_user_env_class_by_module_path():
    with make_evaluator("envs.testing:LineWorld", episodes=2, max_episode_steps=15,
                        env_kwargs={"max_steps": 30}) as ev:
        assert ev.backend == "gymnasium"
        x = np.zeros((2, ev.num_params))
        x[1, -2] = 1.0  # output bias: action 1 (stay) always -> only truncation ends it
        res = ev.evaluate(x, seed=0)
    check_accounting(res, 2, 2)
    assert (res.lengths[1] == 15).all()


def test_user_env_registered_by_env_module(tmp_path, monkeypatch):
    """The id exists only once ``env_module`` is imported (as in a fresh Ray worker)."""
    mod = "islands_test_user_envs"
    (tmp_path / f"{mod}.py").write_text(textwrap.dedent("""
        import gymnasium
        gymnasium.register(id="UserLine-v7", entry_point="envs.testing:LineWorld",
                           max_episode_steps=12)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="unknown env id 'UserLine-v7'"):
        make_evaluator("UserLine-v7")
    try:
        with make_evaluator("UserLine-v7", env_module=mod, episodes=2) as ev:
            res = ev.evaluate(np.zeros((3, ev.num_params)), seed=1)
        check_accounting(res, 3, 2)
        assert res.lengths.max() <= 12
    finally:
        gym.registry.pop("UserLine-v7", None)
        sys.modules.pop(mod, None)


# -- broken envs and parameters ---------------------------------------------------------


def test_nan_env_gives_worst_fitness_to_that_individual_only(caplog):
    with make_evaluator("islands/NaNTrap-v0", env_module="envs.testing", episodes=3,
                        num_envs=2) as ev:
        x = np.zeros((3, ev.num_params))  # argmax tie -> action 0: walks left, terminates
        x[1, -1] = 1.0  # output bias of action 2: walks right into the NaNs
        with caplog.at_level(logging.WARNING, logger="envs"):
            res = ev.evaluate(x, seed=2)
    assert res.broken.tolist() == [False, True, False]
    assert res.fitness[1] == -np.inf
    assert np.isfinite(res.fitness[[0, 2]]).all()
    np.testing.assert_array_equal(res.returns[0], res.returns[2])
    assert (res.lengths[[0, 2]] > 0).all()
    assert "individual 1 produced non-finite" in caplog.text
    assert res.env_steps == res.frames == res.lengths.sum()


def test_envpool_nan_observation_drops_only_that_individual(caplog):
    """EnvPool's own envs do not produce NaN on demand, so a fault is injected into what
    the real pool returns: individual 1's first slot sees NaN at its 3rd step."""
    P, E = 4, 3
    with make_evaluator("CartPole-v1", backend="envpool", episodes=E, max_envs=P,
                        policy_options={"hidden": (8,)}) as ev:
        x = population(ev, P, 16)
        x[3] = x[0]
        ev.evaluate(x, seed=0)  # builds the pool (1 lane: 4 slots, 3 episodes each)
        io, seen = ev._io, {"n": 0}
        real_recv = io.recv

        def faulty_recv():
            ids, obs, rew, done = real_recv()
            hit = np.flatnonzero(ids == 1)  # slot of individual 1 (one lane)
            if len(hit):
                seen["n"] += 1
                if seen["n"] == 3:
                    obs = obs.copy()
                    obs[hit[0], 2] = np.nan
            return ids, obs, rew, done

        io.recv = faulty_recv
        with caplog.at_level(logging.WARNING, logger="envs"):
            res = ev.evaluate(x, seed=1)
        io.recv = real_recv
        assert res.broken.tolist() == [False, True, False, False]
        assert res.fitness[1] == -np.inf and np.isfinite(res.fitness[[0, 2, 3]]).all()
        assert res.lengths[1].tolist() == [3, 0, 0]  # abandoned at step 3, rest skipped
        assert res.env_steps == res.frames == res.lengths.sum()
        assert res.extra["burned_resets"] == 2  # its two skipped episodes' starts
        assert "individual 1 produced non-finite" in caplog.text
        after = ev.evaluate(x, seed=2)  # lanes still in lockstep: CRN holds
        check_accounting(after, P, E)
        np.testing.assert_array_equal(after.returns[3], after.returns[0])
        assert ev.pools_built == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_non_finite_params_give_worst_fitness(backend, caplog):
    with make_evaluator("CartPole-v1", backend=backend, episodes=2) as ev:
        x = population(ev, 3, 11)
        x[0, 0] = np.nan
        x[2, 1] = np.inf
        with caplog.at_level(logging.WARNING, logger="envs"):
            res = ev.evaluate(x, seed=0)
            again = ev.evaluate(x, seed=1)  # EnvPool: lanes stayed in lockstep
    for r in (res, again):
        assert r.broken.tolist() == [True, False, True]
        assert r.fitness[0] == r.fitness[2] == -np.inf and np.isfinite(r.fitness[1])
        assert (r.lengths[1] > 0).all()
    assert "individual 0 has non-finite parameters" in caplog.text


# -- Box actions, truncation, observation statistics ------------------------------------


@pytest.mark.parametrize("env_id, backend", [("LunarLanderContinuous-v3", "envpool"),
                                             ("LunarLanderContinuous-v3", "gymnasium"),
                                             ("Pendulum-v1", "envpool")])
def test_box_actions(env_id, backend):
    P, E = 3, 2
    with make_evaluator(env_id, backend=backend, episodes=E, max_episode_steps=60,
                        policy_options={"hidden": (8,)}) as ev:
        assert not ev.action_spec.discrete
        res = ev.evaluate(population(ev, P, 12), seed=3)
    check_accounting(res, P, E)
    assert np.isfinite(res.fitness).all() and res.lengths.max() <= 60


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_episode_steps_truncates(backend):
    with make_evaluator("Pendulum-v1", backend=backend, episodes=2, max_episode_steps=9) as ev:
        res = ev.evaluate(np.zeros((2, ev.num_params)), seed=0)
    assert (res.lengths == 9).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_obs_norm_statistics_are_returned_and_merged(backend):
    with make_evaluator("CartPole-v1", backend=backend, episodes=2, obs_norm=True,
                        policy_options={"hidden": (8,)}) as ev:
        x = population(ev, 3, 13)
        a = ev.evaluate(x, seed=1)
        assert a.obs_count == a.env_steps  # one observation acted on per step
        assert a.obs_mean.shape == a.obs_m2.shape == (4,)
        assert ev.obs_stats.count == a.obs_count
        np.testing.assert_allclose(ev.obs_stats.mean, a.obs_mean)
        b = ev.evaluate(x, seed=2)  # normalized with a's statistics, then merged
        assert ev.obs_stats.count == a.obs_count + b.obs_count
        state = ev.obs_stats.state_dict()
        ev.set_obs_stats(state)
        assert ev.obs_stats.count == state["count"]


def test_obs_moments_equal_those_of_the_observations_seen():
    seed, E = 3, 2
    with make_evaluator("CartPole-v1", backend="gymnasium", episodes=E, obs_norm=True,
                        policy_options={"hidden": (8,)}) as ev:
        x = population(ev, 2, 14)
        res = ev.evaluate(x, seed=seed)  # first call: no normalization yet
        seen = []
        sequential_returns("CartPole-v1", ev.policy, x, episode_seeds(seed, E), obs_log=seen)
    seen = np.array(seen)
    assert res.obs_count == len(seen)
    np.testing.assert_allclose(res.obs_mean, seen.mean(0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(res.obs_m2, ((seen - seen.mean(0)) ** 2).sum(0), rtol=1e-5)


def test_line_world_is_deterministic_per_seed():
    env = LineWorld()
    a, _ = env.reset(seed=3)
    b, _ = env.reset(seed=3)
    c, _ = env.reset(seed=4)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_cpu_inference_reads_observations_from_plain_host_memory():
    with make_evaluator("CartPole-v1", backend="envpool", episodes=2) as ev:
        res = ev.evaluate(population(ev, 3, 15), seed=1)
    assert res.extra["pinned_obs"] is False  # read from the buffers: no page-locking on CPU


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("backend", BACKENDS)
def test_cuda_inference_matches_cpu(backend):
    out = []
    extra = {"reseed_each_call": True} if backend == "envpool" else {}
    for device in ("cpu", "cuda"):
        with make_evaluator("CartPole-v1", backend=backend, episodes=2, device=device,
                            **extra) as ev:
            res = ev.evaluate(population(ev, 3, 15), seed=1)
            out.append(res.lengths)
            if backend == "envpool":  # CUDA reads observations from pinned host memory,
                # as the buffers themselves say (Tensor.is_pinned)
                assert res.extra["pinned_obs"] is (device == "cuda")
    np.testing.assert_array_equal(out[0], out[1])
