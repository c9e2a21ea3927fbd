"""Torch-native envs (CartPole-v1, Snake-v0) and TorchEvaluator against their references:
Gymnasium's CartPole-v1 for the physics and the returns, scripted Snake games for the rules."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
import torch

from envs.torch_cartpole import TorchCartPole, controller_mlp_params
from envs.torch_evaluator import TORCH_ENVS, TorchEvaluator, register_torch_env
from envs.torch_snake import TorchSnake

BALANCE = (0.1, 0.5, 1.0, 1.0)  # push right when BALANCE . obs > 0: 500 steps from any start
# weaker controllers whose episodes end at many different steps; their float32 trajectories
# stay on the same side of every decision as Gymnasium's float64 ones
WEAK = [(0.0, 0.0, 1.0, 0.0), (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.2)]

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")


def _gym_cartpole(x0: np.ndarray):
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    env.unwrapped.state = np.asarray(x0, dtype=np.float64).copy()
    return env


# ---- CartPole env ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, atol", [(torch.float32, 1e-5), (torch.float64, 1e-7)])
def test_cartpole_trajectories_match_gymnasium(dtype, atol):
    # open loop (the same random pushes for both): the upright pole is unstable, so rounding
    # differences grow about 8% per step; random pushes end episodes within ~100 steps
    rng = np.random.default_rng(0)
    lengths = []
    for seed in range(10):
        ref = gym.make("CartPole-v1")
        obs_ref, _ = ref.reset(seed=seed)
        env = TorchCartPole(num_envs=1, dtype=dtype)
        obs = env.set_state(ref.unwrapped.state)
        np.testing.assert_allclose(obs[0].numpy(), obs_ref, rtol=0, atol=1e-7)
        for t in range(1, 501):
            a = int(rng.integers(2))
            obs_ref, r_ref, term_ref, trunc_ref, _ = ref.step(a)
            obs, r, term, trunc, info = env.step(torch.tensor([a]))
            np.testing.assert_allclose(info["final_obs"][0].numpy(), obs_ref, atol=atol)
            assert float(r[0]) == r_ref == 1.0
            assert (bool(term[0]), bool(trunc[0])) == (term_ref, trunc_ref), f"seed {seed} t {t}"
            if term_ref or trunc_ref:
                break
        lengths.append(t)
        assert term_ref  # random pushes end the episode by falling, well before 500
    assert len(set(lengths)) > 3, lengths


def test_cartpole_truncates_at_500_and_autoresets():
    env = TorchCartPole(num_envs=4, seed=3)
    obs = env.reset(seed=3)
    w = torch.tensor(BALANCE)
    for t in range(1, 501):
        obs, r, term, trunc, info = env.step((obs @ w > 0).long())
        assert not bool(term.any())
        assert bool(trunc.all()) == (t == 500)
    # after truncation every env restarted: fresh starts, step counters back at 0
    assert float(obs.abs().max()) <= 0.05
    assert not torch.equal(obs, info["final_obs"])
    assert int(env._st[1].max()) == 0
    # a falling pole terminates (reward 1 on that step) and restarts in the same call
    env.set_state([0.0, 0.0, 0.2094, 1.0])
    obs, r, term, trunc, info = env.step(torch.ones(4, dtype=torch.long))
    assert bool(term.all()) and not bool(trunc.any()) and float(r.sum()) == 4.0
    assert float(info["final_obs"][:, 2].min()) > 0.2094
    assert float(obs.abs().max()) <= 0.05


# ---- Snake env ---------------------------------------------------------------------------


def _cells(env: TorchSnake, body: torch.Tensor) -> dict[tuple[int, int], int]:
    b = body.reshape(env.H, env.W)
    return {(int(r), int(c)): int(b[r, c]) for r, c in torch.nonzero(b)}


def test_snake_eats_grows_and_places_food_on_empty_cell():
    env = TorchSnake(num_envs=1)
    env.set_state(env.make_state([(5, 5), (5, 4), (5, 3)], direction=1, food=(5, 6), key=7))
    obs, r, term, trunc, _ = env.step([0])  # straight, onto the food
    body, head, d, food, length = env.state[:5]
    assert float(r[0]) == 1.0 and not bool(term[0] | trunc[0])
    assert int(length[0]) == 4 and int(head[0]) == 5 * 10 + 6
    # the tail stayed while the head moved: values count down from the head
    assert _cells(env, body) == {(5, 6): 4, (5, 5): 3, (5, 4): 2, (5, 3): 1}
    f = int(food[0])
    assert 0 <= f < 100 and int(body.reshape(-1)[f]) == 0
    # the next move does not eat: the snake keeps length 4 and its tail leaves (5, 3)
    targets = {0: (5, 7), 1: (4, 6), 2: (6, 6)}  # straight, left (up), right (down)
    a = next(a for a, cell in targets.items() if cell != divmod(f, 10))
    obs, r, term, trunc, _ = env.step([a])
    assert float(r[0]) == 0.0 and int(env.state[4][0]) == 4
    assert set(_cells(env, env.state[0]).values()) == {1, 2, 3, 4}
    assert (5, 3) not in _cells(env, env.state[0])


def test_snake_hits_wall_then_resets():
    env = TorchSnake(num_envs=1)
    obs = env.set_state(env.make_state([(2, 7), (2, 6), (2, 5)], direction=1, food=(8, 0)))
    assert obs[0, :3].tolist() == [0.0, 0.0, 0.0]  # no danger straight / left / right
    for _ in range(2):
        obs, r, term, trunc, _ = env.step([0])
        assert not bool(term[0])
    assert obs[0, :3].tolist() == [1.0, 0.0, 0.0]  # at column 9 facing the right wall
    obs, r, term, trunc, info = env.step([0])
    assert bool(term[0]) and float(r[0]) == 0.0
    # auto-reset: a fresh snake of start length with its step counter at 0
    body, head, d, food, length, key, hunger, steps = env.state
    assert int(length[0]) == 3 and int(steps[0]) == 0 and int((body > 0).sum()) == 3
    assert int(key[0]) != 0
    assert not torch.equal(obs, info["final_obs"])


def test_snake_bites_itself_but_may_follow_its_tail():
    env = TorchSnake(num_envs=2)
    bite = env.make_state([(5, 5), (5, 4), (5, 3), (5, 2), (5, 1)], direction=1, food=(0, 0))
    # a length-4 snake curled in a square: turning right moves the head onto the tail
    # cell, which the tail leaves in the same step
    chase = env.make_state([(5, 5), (5, 4), (6, 4), (6, 5)], direction=1, food=(0, 0))
    env.set_state(tuple(torch.cat(p) for p in zip(bite, chase, strict=True)))
    for t in range(3):
        _, r, term, trunc, _ = env.step([2, 2])  # turn right three times
        assert term.tolist() == [t == 2, False], t
        assert float(r.sum()) == 0.0


def test_snake_invariants_under_random_play():
    env = TorchSnake(num_envs=64, size=(6, 7), seed=1)
    env.reset()
    g = torch.Generator().manual_seed(0)
    total_food = 0
    for _ in range(300):
        _, r, term, trunc, _ = env.step(torch.randint(0, 3, (64,), generator=g))
        total_food += float(r.sum())
        body, head, d, food, length = env.state[:5]
        flat = body.reshape(64, -1).long()
        assert torch.equal((flat > 0).sum(1), length)
        assert torch.equal(flat.gather(1, head[:, None])[:, 0], length)
        # the segments are exactly 1..length
        assert torch.equal(flat.sum(1), length * (length + 1) // 2)
        assert bool((food >= 0).all()) and bool((flat.gather(1, food[:, None]) == 0).all())
    assert total_food > 0


def test_snake_seeds_and_board_obs():
    a = TorchSnake(num_envs=16, obs="board")
    o1, o2, o3 = a.reset(seed=5), a.reset(seed=5), a.reset(seed=6)
    assert o1.shape == (16, 10, 10, 3) and torch.equal(o1, o2) and not torch.equal(o1, o3)
    assert o1[..., 0].sum().item() == 16 * 3 and o1[..., 1].sum().item() == 16
    assert o1[..., 2].sum().item() == 16 and (o1[..., 0] * o1[..., 2]).sum().item() == 0


@pytest.mark.gpu
@needs_cuda
def test_snake_cpu_and_cuda_trajectories_are_identical():
    g = torch.Generator().manual_seed(0)
    actions = torch.randint(0, 3, (200, 32), generator=g)
    out = []
    for dev in ("cpu", "cuda"):
        env = TorchSnake(num_envs=32, device=dev)
        obs, traj = env.reset(seed=11), []
        for a in actions:
            obs, r, term, trunc, _ = env.step(a.to(dev))
            traj.append(torch.cat([obs.reshape(32, -1), r[:, None], term[:, None]], 1).cpu())
        out.append(torch.stack(traj))
    assert torch.equal(out[0], out[1])


# ---- TorchEvaluator ----------------------------------------------------------------------


def _controllers(ev: TorchEvaluator, weights) -> torch.Tensor:
    return torch.stack([controller_mlp_params(ev.policy.sizes, w) for w in weights]).float()


def test_evaluator_controller_balances_for_500_steps():
    ev = TorchEvaluator("CartPole-v1", episodes=3, policy_options={"hidden": [16]})
    params = torch.cat([_controllers(ev, [BALANCE]), torch.zeros(1, ev.num_params)])
    res = ev.evaluate(params, seed=0)
    assert res.lengths.shape == (2, 3) and res.returns.shape == (2, 3)
    assert res.lengths[0].tolist() == [500, 500, 500] and res.fitness[0] == 500.0
    assert res.fitness[1] < 50  # always pushing left falls quickly
    assert res.env_steps == int(res.lengths.sum()) and res.frames == 2 * 3 * 500
    assert not res.broken.any() and ev.backend == "torch"


def test_evaluator_episodes_accounting_and_common_random_numbers():
    ev = TorchEvaluator("CartPole-v1", episodes=4)
    g = torch.Generator().manual_seed(0)
    params = torch.randn(5, ev.num_params, generator=g) * 0.5
    params[3] = params[1]
    res = ev.evaluate(params.numpy(), seed=42)
    assert res.lengths.shape == (5, 4) and (res.lengths >= 1).all()
    assert res.env_steps == int(res.lengths.sum())
    steps_run = res.extra["steps_run"]
    assert steps_run >= res.lengths.max() and res.frames == 5 * 4 * steps_run
    np.testing.assert_array_equal(res.returns[3], res.returns[1])  # identical params
    np.testing.assert_allclose(res.fitness, res.returns.mean(axis=1))
    # the same seed repeats every episode; another seed starts elsewhere
    np.testing.assert_array_equal(ev.evaluate(params, seed=42).returns, res.returns)
    assert not torch.equal(ev.initial_states(42)[0], ev.initial_states(43)[0])
    assert ev.initial_states(42)[0].shape == (4, 4)


def _gym_rollouts(ev: TorchEvaluator, params: torch.Tensor, seed: int):
    """Returns (P, E) and the observations acted on, from Gymnasium's CartPole-v1 started in
    the evaluator's episode starts and driven by the same policy."""
    starts = ev.initial_states(seed)[0].double().numpy()
    returns, seen = np.zeros((len(params), ev.episodes)), []
    for p in range(len(params)):
        for e in range(ev.episodes):
            env = _gym_cartpole(starts[e])
            obs = starts[e].astype(np.float32)
            while True:
                seen.append(obs)
                a, _ = ev.policy.act(params[p : p + 1], torch.as_tensor(obs).view(1, 1, 4))
                obs, r, term, trunc, _ = env.step(int(a.item()))
                returns[p, e] += r
                if term or trunc:
                    break
    return returns, np.asarray(seen, dtype=np.float64)


def test_evaluator_returns_equal_gymnasium_rollouts():
    ev = TorchEvaluator("CartPole-v1", episodes=4)
    params = torch.cat([_controllers(ev, [BALANCE, *WEAK]), torch.zeros(1, ev.num_params)])
    res = ev.evaluate(params, seed=2024)
    returns, seen = _gym_rollouts(ev, params, seed=2024)
    np.testing.assert_array_equal(res.returns, returns)
    assert res.returns[0].tolist() == [500.0] * 4 and len(set(res.returns[1:4].ravel())) > 3
    assert res.env_steps == len(seen)


def test_evaluator_obs_moments_match_gymnasium_and_merge_after_the_call():
    ev = TorchEvaluator("CartPole-v1", episodes=4, obs_norm=True)
    # short episodes (< 60 steps), where float32 and float64 trajectories agree closely
    params = torch.cat([_controllers(ev, WEAK[:2]), torch.zeros(1, ev.num_params)])
    # first call: no statistics yet, so the policy sees raw observations
    res = ev.evaluate(params, seed=7)
    returns, seen = _gym_rollouts(ev, params, seed=7)
    np.testing.assert_array_equal(res.returns, returns)
    assert res.obs_count == len(seen) == res.env_steps
    np.testing.assert_allclose(res.obs_mean, seen.mean(0), rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(res.obs_m2, ((seen - seen.mean(0)) ** 2).sum(0), rtol=1e-4)
    # merged after the call; the next call normalizes with them and merges its own
    assert ev.obs_stats.count == res.obs_count
    np.testing.assert_allclose(ev.obs_stats.mean, res.obs_mean)
    # statistics that shift theta by -0.5: the theta controller (row 0) now always pushes
    # left, exactly like the all-zero policy (row 2)
    ev.set_obs_stats(
        {"shape": [4], "eps": 1e-2, "count": 1.0, "mean": [0, 0, 0.5, 0], "m2": [1.0] * 4}
    )
    res2 = ev.evaluate(params, seed=7)
    np.testing.assert_array_equal(res2.returns[0], res.returns[2])
    assert not np.array_equal(res2.returns[0], res.returns[0])
    assert ev.obs_stats.count == 1.0 + res2.obs_count


class NaNPole(TorchCartPole):
    """CartPole whose state turns to NaN whenever it is pushed right."""

    def step_state(self, st, action):
        (x, steps), r, term, trunc = super().step_state(st, action)
        x = torch.where((action == 1)[:, None], torch.nan, x)
        return (x, steps), r, term, trunc


def test_evaluator_nan_observations_make_fitness_minus_inf():
    register_torch_env("NaNPole-v0", NaNPole)
    try:
        ev = TorchEvaluator("NaNPole-v0", episodes=2, policy_options={"hidden": [8]})
        params = torch.cat([torch.zeros(1, ev.num_params), _controllers(ev, [BALANCE])])
        res = ev.evaluate(params, seed=0)
    finally:
        TORCH_ENVS.pop("NaNPole-v0")
    assert res.broken.tolist() == [False, True]
    assert np.isfinite(res.fitness[0]) and res.fitness[1] == -np.inf


def test_evaluator_non_finite_params_do_not_play():
    ev = TorchEvaluator("CartPole-v1", episodes=2, policy_options={"hidden": [8]})
    params = torch.cat([_controllers(ev, [BALANCE]), torch.zeros(1, ev.num_params)])
    params[1, 3] = float("nan")
    res = ev.evaluate(params, seed=0)
    assert res.broken.tolist() == [False, True] and res.fitness.tolist() == [500.0, -np.inf]
    assert res.lengths[1].tolist() == [0, 0] and res.env_steps == 1000
    # a single parameter vector is a population of one
    assert ev.evaluate(params[0].numpy(), seed=0).fitness.tolist() == [500.0]


def test_evaluator_rejects_bad_input():
    with pytest.raises(ValueError, match=re.escape(", ".join(sorted(TORCH_ENVS)))):
        TorchEvaluator("Pong-v5")
    ev = TorchEvaluator("CartPole-v1")
    with pytest.raises(ValueError, match=f"params must have shape \\(P, {ev.num_params}\\)"):
        ev.evaluate(np.zeros((2, 3)), seed=0)
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        ev.evaluate(np.zeros((1, ev.num_params)), seed=-1)
    with pytest.raises(ValueError, match="needs obs_norm=True"):
        ev.set_obs_stats({"shape": [4], "eps": 0.01, "count": 1, "mean": [0] * 4, "m2": [1] * 4})
    ev.set_obs_stats(None)  # nothing to set, nothing to complain about


def test_evaluator_snake_common_random_numbers():
    ev = TorchEvaluator(
        "Snake-v0", episodes=3, env_kwargs={"size": 8}, policy_options={"hidden": [16]}
    )
    assert ev.obs_shape == (11,) and ev.policy.action.n == 3
    g = torch.Generator().manual_seed(1)
    params = torch.randn(6, ev.num_params, generator=g)
    params[4] = params[2]
    res = ev.evaluate(params, seed=9)
    np.testing.assert_array_equal(res.returns[4], res.returns[2])
    np.testing.assert_array_equal(res.lengths[4], res.lengths[2])
    assert res.lengths.shape == (6, 3) and (res.lengths >= 1).all()
    assert (res.lengths <= ev.max_episode_steps).all() and (res.returns >= 0).all()
    assert res.env_steps == int(res.lengths.sum()) and not res.broken.any()


@pytest.mark.gpu
@needs_cuda
def test_evaluator_cpu_and_cuda_agree():
    # policies whose decisions are far from argmax ties, so CPU/CUDA matmul rounding cannot
    # flip an action: the balancing controller (500 on both) and the all-zero policy
    # (always action 0: Snake goes straight into a wall at the same step on both)
    for env_id in ("CartPole-v1", "Snake-v0"):
        out = []
        for dev in ("cpu", "cuda"):
            ev = TorchEvaluator(env_id, episodes=5, device=dev)
            params = torch.zeros(2, ev.num_params)
            if env_id == "CartPole-v1":
                params[0] = _controllers(ev, [BALANCE])[0]
            res = ev.evaluate(params, seed=3)
            out.append((res.returns, res.lengths, res.env_steps, res.frames))
        for a, b in zip(*out, strict=True):
            np.testing.assert_array_equal(a, b)


# ---- torch.compile of the rollout step -----------------------------------------------------
def _compiled_against_eager(mode: str, device: str) -> None:
    """The ``mode``-compiled evaluator compiles the step into a graph and plays the same
    episodes as eager: the balancing controller, weak controllers (episodes of many lengths,
    far from decision ties) and the all-zero policy (always left)."""
    from torch._dynamo.utils import counters

    out = []
    for compile_mode in (False, mode):
        ev = TorchEvaluator("CartPole-v1", episodes=4, device=device, compile=compile_mode,
                            policy_options={"hidden": [16]})
        params = torch.cat([_controllers(ev, [BALANCE, *WEAK]), torch.zeros(1, ev.num_params)])
        graphs = counters["stats"]["unique_graphs"]
        res = ev.evaluate(params, seed=5)
        if compile_mode:  # dynamo captured the step (it would run eager past its limits)
            assert counters["stats"]["unique_graphs"] > graphs
        out.append(res)
    eager, compiled = out
    np.testing.assert_array_equal(compiled.lengths, eager.lengths)
    np.testing.assert_array_equal(compiled.returns, eager.returns)
    assert compiled.lengths[0].tolist() == [500] * 4 and compiled.env_steps == eager.env_steps


def test_the_default_compile_mode_runs_on_cpu_and_matches_eager():
    _compiled_against_eager("default", "cpu")


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_compile_modes_on_cuda_match_eager(mode):
    _compiled_against_eager(mode, "cuda")
