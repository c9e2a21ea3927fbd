"""MuJoCo Warp locomotion (envs/mjwarp.py) against Gymnasium's v4 envs, on the CPU: from
Gymnasium's reset state, the same actions give the same observations, rewards and
terminations. Warp's physics is float32 and MuJoCo's float64, hence the tolerances."""

from __future__ import annotations

import numpy as np
import pytest
import torch

gym = pytest.importorskip("gymnasium")
pytest.importorskip("mujoco_warp", reason='MuJoCo Warp: pip install -e ".[dev]"')

from envs import mjwarp  # noqa: E402
from envs.torch_registry import TORCH_ENVS  # noqa: E402

STEPS = 100  # compared steps per task, across episodes (a terminated one restarts both)
RTOL = ATOL = 1e-3  # observations; rewards to ATOL


def _gym_env(env_id: str, elliptic: bool):
    import mujoco

    env = gym.make(env_id).unwrapped
    if env.model.opt.solver == mujoco.mjtSolver.mjSOL_PGS:  # as mjwarp.mj_model does
        env.model.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    if elliptic:
        env.model.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    return env


def compare(env_id: str, elliptic: bool = False, seed: int = 0, resync: bool = False) -> dict:
    """Steps Gymnasium's env and the Warp env side by side; the largest differences. With
    ``resync`` every Warp step starts from Gymnasium's state before it (one-step agreement:
    where float32 and float64 trajectories part in chaotic contacts, as Ant's do)."""
    import mujoco

    genv, wenv = _gym_env(env_id, elliptic), TORCH_ENVS[env_id]()
    if elliptic:
        wenv.mjm.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC  # before Warp's model is built
    rng = np.random.default_rng(seed)
    worst = {"obs": 0.0, "reward": 0.0, "episodes": 1, "terminations": 0}
    obs, _ = genv.reset(seed=seed)
    st = wenv.state_from(genv.data.qpos[None], genv.data.qvel[None])
    np.testing.assert_allclose(wenv.observe(st)[0].numpy(), obs, rtol=RTOL, atol=ATOL)
    for _ in range(STEPS):
        a = rng.uniform(-0.5, 0.5, wenv.action.shape).astype(np.float32)
        if resync:
            st = _gym_state(wenv, genv, st)
        obs, r, term, _, _ = genv.step(a)
        st, wr, wterm, _ = wenv.step_state(st, torch.as_tensor(a)[None])
        wobs = wenv.observe(st)[0].numpy()
        np.testing.assert_allclose(wobs, obs, rtol=RTOL, atol=ATOL, err_msg=env_id)
        worst["obs"] = max(worst["obs"], float(np.abs(wobs - obs).max()))
        worst["reward"] = max(worst["reward"], abs(float(wr[0]) - r))
        assert bool(wterm[0]) == term, (env_id, worst)
        if term:
            worst["episodes"] += 1
            worst["terminations"] += 1
            obs, _ = genv.reset(seed=seed + worst["episodes"])
            st = wenv.state_from(genv.data.qpos[None], genv.data.qvel[None])
    return worst


@pytest.mark.parametrize("env_id", ["Hopper-v4", "HalfCheetah-v4", "Walker2d-v4",
                                    "Humanoid-v4"])
def test_each_task_steps_as_gymnasium_does(env_id):
    worst = compare(env_id)
    assert worst["reward"] <= ATOL, worst


def _gym_state(wenv, genv, st):
    """The Warp state of Gymnasium's env as it is now: its qpos and qvel, and the torso
    position its next reward starts from (``xipos`` as the last step left it)."""
    qpos, qvel, _, extras, steps = wenv.state_from(genv.data.qpos[None], genv.data.qvel[None])
    pos = torch.as_tensor(genv.data.xipos[wenv._torso][None, :2], dtype=torch.float32)
    return qpos, qvel, pos, extras, st[4]


def test_ant_steps_as_gymnasium_does_from_each_of_its_states_with_elliptic_cones():
    # Ant's contacts are chaotic: a float32 and a float64 trajectory part within ~50 steps,
    # so each Warp step starts from Gymnasium's state. With the model's pyramidal friction
    # cones the engines part at steep foot contacts (the next test says why); with elliptic
    # cones in both they agree, so observations, reward and termination are right.
    worst = compare("Ant-v4", elliptic=True, resync=True)
    assert worst["reward"] <= ATOL, worst


def _warp_capsule_frame(normal: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """The frame MuJoCo Warp gives a plane-capsule contact (``collision_primitive_core.
    plane_capsule``, as MJX's): the first tangent is the capsule axis projected on the plane
    only when that projection is at least 0.5 long, else a fixed axis. MuJoCo's
    ``mjc_PlaneCapsule`` aligns it with the axis whenever the projection is not zero."""
    b = axis - normal * (normal @ axis)
    if np.linalg.norm(b) < 0.5:
        b = np.array([0.0, 1.0, 0.0]) if -0.5 < normal[1] < 0.5 else np.array([0.0, 0.0, 1.0])
    b = b / np.linalg.norm(b)
    return np.concatenate([normal, b, np.cross(normal, b)])


def test_ants_pyramidal_difference_is_only_the_capsule_contact_frame():
    # A pyramidal friction cone's edges turn with the contact's tangent frame. Ant's ankles
    # touch the floor steeply, where MuJoCo Warp falls back to a fixed tangent and MuJoCo
    # keeps the capsule's axis: the two engines then push differently (qacc off by up to
    # ~50). MuJoCo given Warp's frames agrees with Warp, so nothing else differs.
    import mujoco

    wenv = TORCH_ENVS["Ant-v4"]()
    m, wm = wenv.mjm, wenv._model()
    _, mjw = mjwarp._import_warp()
    rng, d = np.random.default_rng(0), mujoco.MjData(m)
    d.qpos[:] = m.qpos0 + rng.uniform(-0.1, 0.1, m.nq)
    turned = 0
    for _ in range(40):
        d.ctrl[:] = rng.uniform(-0.5, 0.5, m.nu)
        mujoco.mj_step(m, d, nstep=wenv.task.frame_skip)
        wd = mjw.put_data(m, d)
        mjw.forward(wm, wd)
        x = mujoco.MjData(m)
        x.qpos[:], x.qvel[:], x.ctrl[:] = d.qpos, d.qvel, d.ctrl
        mujoco.mj_fwdPosition(m, x)  # collision: then the frames, then the constraints again
        for c in x.contact[:x.ncon] if x.ncon else []:
            cap = c.geom[1]
            assert m.geom_type[cap] == mujoco.mjtGeom.mjGEOM_CAPSULE and c.geom[0] == 0
            frame = _warp_capsule_frame(c.frame[:3].copy(), x.geom_xmat[cap].reshape(3, 3)[:, 2])
            turned += not np.allclose(frame, c.frame, atol=1e-6)
            c.frame[:] = frame
        mujoco.mj_makeConstraint(m, x)
        mujoco.mj_projectConstraint(m, x)
        mujoco.mj_forwardSkip(m, x, mujoco.mjtStage.mjSTAGE_POS, 0)
        np.testing.assert_allclose(wd.qacc.numpy()[0], x.qacc, rtol=1e-4, atol=2e-3)
    assert turned >= 3, turned  # the states included contacts whose frames differ


def test_every_task_is_a_torch_env_with_gymnasiums_spaces():
    for env_id in mjwarp.TASKS:
        genv, wenv = gym.make(env_id), TORCH_ENVS[env_id]()
        assert wenv.obs_shape == genv.observation_space.shape, env_id
        assert wenv.action.shape == genv.action_space.shape, env_id
        np.testing.assert_allclose(wenv.action.low, genv.action_space.low)
        np.testing.assert_allclose(wenv.action.high, genv.action_space.high)
        assert wenv.dt == pytest.approx(genv.unwrapped.dt), env_id


def test_a_population_plays_hopper_on_the_torch_backend():
    from envs.torch_evaluator import TorchEvaluator

    ev = TorchEvaluator("Hopper-v4", episodes=2, max_episode_steps=50)
    params = np.random.default_rng(0).normal(0.0, 0.1, (4, ev.num_params))
    res = ev.evaluate(params, seed=1)
    assert res.lengths.max() == 50 and res.lengths.min() < 50  # truncated and terminated
    assert res.env_steps == res.lengths.sum()  # live steps only
    again = ev.evaluate(params, seed=1)  # the same starts and physics: the same returns
    assert again.fitness.tolist() == res.fitness.tolist()
    assert ev.evaluate(params, seed=2).fitness.tolist() != res.fitness.tolist()


RETURN_EPISODES, RETURN_STEPS = 20, 100  # per side; episodes cut at 100 steps on both


def mean_returns(env_id: str, backend: str) -> np.ndarray:
    """20 episode returns of one fixed linear policy (seeded weights, no normalization)."""
    from envs import make_evaluator

    ev = make_evaluator(env_id, backend=backend, policy="mlp", policy_options={"hidden": []},
                        episodes=RETURN_EPISODES, max_episode_steps=RETURN_STEPS,
                        num_threads=2)
    params = np.random.default_rng(7).normal(0.0, 0.1, (1, ev.num_params))
    return ev.evaluate(params, seed=11).returns[0]


@pytest.mark.parametrize("env_id", sorted(mjwarp.TASKS))
def test_a_linear_policys_returns_match_envpools(env_id):
    from scipy import stats

    warp, envpool = mean_returns(env_id, "torch"), mean_returns(env_id, "envpool")
    # the same policy, other episode starts: Welch's test on the two sets of 20 returns
    p = stats.ttest_ind(warp, envpool, equal_var=False).pvalue
    assert p > 0.01 or np.allclose(warp.mean(), envpool.mean(), rtol=1e-3), \
        (env_id, warp.mean(), envpool.mean(), p)


def test_an_ars_nt_warp_island_and_an_envpool_island_trade_and_the_warp_island_improves(
        ray_session):
    # Both on the CPU here; on a GPU machine the Warp island is the GPU one (num_gpus).
    from conftest import HANG_S, MET, last_row, stop_when

    from islands.config import from_dict, resolve
    from islands.planning import plan_islands
    from islands.runtime.archipelago import Archipelago

    cfg = resolve(from_dict({
        "env": "Hopper-v4", "islands": 2, "strategy": "ars", "popsize": 8, "episodes": 1,
        "max_episode_steps": 30, "target": None, "test_episodes": 2, "topology": "full",
        "migrants": 1, "migration_interval": 1, "obs_sync_interval": 1, "obs_norm": True,
        "generations": 100_000, "time_budget": HANG_S, "namespace": "t-mjwarp", "seed": 0,
        # ars-nt on the Warp island: population, noise and update on the island's device
        "island_specs": [{"backend": "torch", "strategy": "ars-nt",
                          "options": {"table_size": 100_000}}, {"backend": "envpool"}]}))

    def traded(rows):  # both islands: past the start, immigrants, merged statistics
        lasts = [last_row(rows, i) for i in (0, 1)]
        # both evaluators count one observation per live step (tests/test_evaluators.py),
        # so a count above an island's own steps holds the other island's observations
        return all(r is not None and r["generation"] >= 3 and r["immigrants"] > 0
                   and r["obs_count"] > r["env_steps"] for r in lasts)

    arch = Archipelago(cfg, plan_islands(cfg, [2.0]))
    try:
        arch.start()
        infos = arch.wait_ready()
        res = arch.run(stop_when(arch, traded))
    finally:
        arch.shutdown()
    assert res.stop_reason == MET, [last_row(res.rows, i) for i in (0, 1)]
    assert [(i.strategy, i.backend, i.device) for i in infos] == [
        ("ars-nt", "torch", "cpu"), ("ars", "envpool", "cpu")]
    warp = [r for r in res.rows if r["island"] == 0]
    assert warp[-1]["best_so_far"] > warp[0]["fitness_max"], warp  # it improved
