"""Gymnasium's MuJoCo v4 locomotion tasks on MuJoCo Warp, batched as torch tensors.

Hopper-v4, HalfCheetah-v4, Walker2d-v4, Ant-v4 and Humanoid-v4 for the torch backend
(:mod:`envs.torch_registry`): Gymnasium's model files (``gymnasium/envs/mujoco/assets``),
frame skips, observations, rewards, termination and reset noise, as in Gymnasium's
``*_v4.py`` (read there, not copied from memory), stepped by MuJoCo Warp
(``mujoco_warp.step``) for every env of the batch at once on the evaluator's device (a CUDA
GPU, or the CPU for tests). Warp arrays share memory with torch tensors
(``warp.to_torch``), so observations, rewards and done flags never leave the device.

Differences from Gymnasium, all inherent to MuJoCo Warp:

* float32 physics (MuJoCo: float64), so long trajectories drift apart; the agreement with
  Gymnasium is measured per task in ``tests/test_mjwarp.py``;
* Humanoid's model asks for the PGS solver, which MuJoCo Warp does not have; it runs with
  Newton (``SOLVER_FOR``), as MJX and MuJoCo Playground do;
* a plane-capsule contact's tangent frame follows the capsule only when it lies within 60
  degrees of the plane (MuJoCo: always), which turns Ant's pyramidal friction cones at
  steep ankles (``docs/results/mjwarp.md``).

The functional API of :func:`envs.torch_registry.register_torch_env`: a state is
``(qpos (B, nq), qvel (B, nv), position (B, 2), extras (B, k), steps (B,))``. ``position``
is what the task's forward reward differentiates (the root's x, the torso's or the mass
center's xy), kept from the last step as Gymnasium reads it before stepping; ``extras`` are
the observation's other fields (Humanoid's body inertias, velocities and forces, empty
elsewhere). A step copies qpos and qvel into a Warp ``Data`` of the batch's size (one per
size, kept: its solver warm start carries over as in Gymnasium's one ``MjData``), sets
``ctrl``, steps ``frame_skip`` times and reads the result back.

Warp compiles its kernels on first use (about 20-30 s on a 2-core CPU, cached in
``~/.cache/warp``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from policies.spec import ActionSpec

from .torch_cartpole import seed_generator

MjwState = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
INSTALL = 'pip install -e ".[warp]"'  # the optional extra with MuJoCo Warp


@dataclass(frozen=True)
class Task:
    """One Gymnasium v4 task, its constructor defaults (Gymnasium's ``*_v4.py``)."""

    env_id: str
    xml: str
    frame_skip: int
    skip_qpos: int  # leading qpos entries left out of the observation
    reset_noise: float  # reset_noise_scale
    qvel_noise: str  # "uniform" (as qpos) or "normal" (scale times a standard normal)
    forward_weight: float
    ctrl_weight: float
    healthy_reward: float  # earned on every step (terminate_when_unhealthy=True)
    position: str  # "root_x", "torso" or "mass_center"
    healthy: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None
    qvel_clip: float | None = None
    extras: bool = False  # Humanoid: cinert, cvel, qfrc_actuator, cfrc_ext


def _hopper_healthy(qpos: torch.Tensor, qvel: torch.Tensor) -> torch.Tensor:
    state = torch.cat((qpos, qvel), 1)[:, 2:]
    z, angle = qpos[:, 1], qpos[:, 2]
    return ((state > -100) & (state < 100)).all(1) & (z > 0.7) & (angle > -0.2) & (angle < 0.2)


def _walker_healthy(qpos: torch.Tensor, qvel: torch.Tensor) -> torch.Tensor:
    z, angle = qpos[:, 1], qpos[:, 2]
    return (z > 0.8) & (z < 2.0) & (angle > -1.0) & (angle < 1.0)


def _ant_healthy(qpos: torch.Tensor, qvel: torch.Tensor) -> torch.Tensor:
    z = qpos[:, 2]
    return torch.isfinite(torch.cat((qpos, qvel), 1)).all(1) & (z >= 0.2) & (z <= 1.0)


def _humanoid_healthy(qpos: torch.Tensor, qvel: torch.Tensor) -> torch.Tensor:
    return (qpos[:, 2] > 1.0) & (qpos[:, 2] < 2.0)


TASKS = {t.env_id: t for t in (
    Task("Hopper-v4", "hopper.xml", 4, 1, 5e-3, "uniform", 1.0, 1e-3, 1.0, "root_x",
         _hopper_healthy, qvel_clip=10.0),
    Task("HalfCheetah-v4", "half_cheetah.xml", 5, 1, 0.1, "normal", 1.0, 0.1, 0.0, "root_x",
         None),
    Task("Walker2d-v4", "walker2d.xml", 4, 1, 5e-3, "uniform", 1.0, 1e-3, 1.0, "root_x",
         _walker_healthy, qvel_clip=10.0),
    Task("Ant-v4", "ant.xml", 5, 2, 0.1, "normal", 1.0, 0.5, 1.0, "torso", _ant_healthy),
    Task("Humanoid-v4", "humanoid.xml", 5, 2, 1e-2, "uniform", 1.25, 0.1, 5.0, "mass_center",
         _humanoid_healthy, extras=True),
)}
DEFAULT_MAX_EPISODE_STEPS = 1000  # Gymnasium's TimeLimit for every v4 locomotion task


def mj_model(task: Task):
    """The task's ``mujoco.MjModel`` from Gymnasium's model file, with the solver MuJoCo
    Warp can run (``SOLVER_FOR``)."""
    import importlib.util

    import mujoco

    # the files only: importing gymnasium.envs.mujoco would load its renderer (imageio, GL)
    spec = importlib.util.find_spec("gymnasium")
    xml = Path(spec.origin).parent / "envs" / "mujoco" / "assets" / task.xml if spec else None
    if xml is None or not xml.is_file():
        raise ImportError(f"{task.env_id} on MuJoCo Warp needs gymnasium's MuJoCo model "
                          f"files: {INSTALL}")
    m = mujoco.MjModel.from_xml_path(str(xml))
    if m.opt.solver == mujoco.mjtSolver.mjSOL_PGS:  # Humanoid: MuJoCo Warp has no PGS
        m.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    return m


@functools.cache  # called on every step: import and configure Warp once
def _import_warp():
    try:
        import warp

        warp.config.quiet = True  # no banner, no line per loaded kernel module
        warp.config.log_level = warp.LOG_WARNING
        import mujoco_warp
    except ImportError as e:
        raise ImportError(f"MuJoCo Warp is not installed: {INSTALL}") from e
    return warp, mujoco_warp


class WarpLocomotion:
    """A batch of one :class:`Task` on MuJoCo Warp (subclasses set ``task``); see the module
    docstring for the state tuple and how a step runs."""

    task: Task
    default_max_episode_steps = DEFAULT_MAX_EPISODE_STEPS

    def __init__(self, num_envs: int = 1, device: str | torch.device = "cpu", seed: int = 0,
                 max_episode_steps: int | None = None) -> None:
        self.env_id = self.task.env_id
        self.device = torch.device(device)
        self.mjm = mj_model(self.task)  # host model: cheap; Warp's is built on first use
        self.max_episode_steps = int(max_episode_steps or DEFAULT_MAX_EPISODE_STEPS)
        if self.max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1, got {max_episode_steps}")
        low, high = np.asarray(self.mjm.actuator_ctrlrange, dtype=np.float64).T
        self.action = ActionSpec(discrete=False, shape=(self.mjm.nu,),
                                 low=tuple(map(float, low)), high=tuple(map(float, high)))
        self.dt = float(self.mjm.opt.timestep) * self.task.frame_skip
        nb = self.mjm.nbody
        self.n_extras = (10 + 6 + 6) * nb + self.mjm.nv if self.task.extras else 0
        self.obs_shape = (self.mjm.nq - self.task.skip_qpos + self.mjm.nv + self.n_extras,)
        self._mass = torch.as_tensor(self.mjm.body_mass, dtype=torch.float32,
                                     device=self.device)
        self._torso = self.mjm.body("torso").id if self.task.position == "torso" else 0
        self._m = None  # the Warp model (on first use)
        self._data: dict[int, tuple] = {}  # batch size -> (Warp Data, torch views of it)

    # ---- Warp model and data ----------------------------------------------------------------

    def _wp_device(self) -> str:
        return "cpu" if self.device.type == "cpu" else f"cuda:{self.device.index or 0}"

    def _scope(self):
        """Warp on the env's device and, on CUDA, on torch's current stream, so Warp's
        kernels and torch's ops on the same tensors run in order."""
        from contextlib import ExitStack

        wp, _ = _import_warp()
        stack = ExitStack()
        stack.enter_context(wp.ScopedDevice(self._wp_device()))
        if self.device.type == "cuda":
            stream = wp.stream_from_torch(torch.cuda.current_stream(self.device))
            stack.enter_context(wp.ScopedStream(stream))
        return stack

    def _model(self):
        if self._m is None:
            _, mjw = _import_warp()
            with self._scope():
                self._m = mjw.put_model(self.mjm)
        return self._m

    VIEWS = ("qpos", "qvel", "ctrl", "qacc_warmstart", "xipos", "cinert", "cvel",
             "qfrc_actuator", "cfrc_ext")

    def _data_for(self, batch: int) -> tuple:
        """The Warp ``Data`` of ``batch`` worlds and torch views of its fields."""
        if batch not in self._data:
            wp, mjw = _import_warp()
            with self._scope():
                d = mjw.make_data(self.mjm, nworld=batch)
            self._data[batch] = d, {k: wp.to_torch(getattr(d, k)) for k in self.VIEWS}
        return self._data[batch]

    # ---- the functional API -----------------------------------------------------------------

    def initial_states(self, count: int, seed: int) -> MjwState:
        """``count`` episode starts, Gymnasium's reset noise drawn from
        ``torch.Generator(seed)`` on the CPU (the same starts on every device), with the
        kinematics of ``mj_forward`` (Gymnasium's ``set_state``)."""
        g, t, m = seed_generator(seed), self.task, self.mjm

        def uniform(n: int) -> torch.Tensor:
            return (torch.rand(count, n, generator=g, dtype=torch.float64) * 2 - 1) * t.reset_noise

        qpos = torch.as_tensor(m.qpos0, dtype=torch.float64) + uniform(m.nq)
        qvel = (uniform(m.nv) if t.qvel_noise == "uniform"
                else t.reset_noise * torch.randn(count, m.nv, generator=g, dtype=torch.float64))
        return self.state_from(qpos, qvel)

    def state_from(self, qpos, qvel) -> MjwState:
        """The state of ``qpos (B, nq)``, ``qvel (B, nv)`` (e.g. a Gymnasium env's), with
        its kinematics computed and step counters at 0."""
        _, mjw = _import_warp()
        f32 = dict(dtype=torch.float32, device=self.device)
        qpos = torch.as_tensor(qpos, **f32).reshape(-1, self.mjm.nq)
        qvel = torch.as_tensor(qvel, **f32).reshape(-1, self.mjm.nv)
        m, (d, v) = self._model(), self._data_for(len(qpos))
        with self._scope():
            v["qpos"].copy_(qpos)
            v["qvel"].copy_(qvel)
            v["ctrl"].zero_()
            v["qacc_warmstart"].zero_()
            mjw.forward(m, d)
            extras = self._extras(v, reset=True)
        steps = torch.zeros(len(qpos), dtype=torch.int32, device=self.device)
        return qpos, qvel, self._position(qpos, v), extras, steps

    def observe(self, st: MjwState) -> torch.Tensor:
        """Gymnasium's observation: qpos without the root's leading coordinates, qvel
        (clipped to +-10 for Hopper and Walker2d) and, for Humanoid, the extras."""
        qpos, qvel, _, extras, _ = st
        if self.task.qvel_clip is not None:
            qvel = qvel.clamp(-self.task.qvel_clip, self.task.qvel_clip)
        return torch.cat((qpos[:, self.task.skip_qpos:], qvel, extras), 1)

    def step_state(self, st: MjwState, action: torch.Tensor):
        """One env step (``frame_skip`` physics steps) of every env: ``(new_state, reward,
        terminated, truncated)``; no reset."""
        _, mjw = _import_warp()
        qpos, qvel, pos, _, steps = st
        t, action = self.task, action.to(torch.float32).reshape(len(qpos), -1)
        m, (d, v) = self._model(), self._data_for(len(qpos))
        with self._scope():
            v["qpos"].copy_(qpos)
            v["qvel"].copy_(qvel)
            v["ctrl"].copy_(action)
            # an episode's first step starts its solver cold, as after Gymnasium's reset
            v["qacc_warmstart"].mul_((steps > 0).to(torch.float32)[:, None])
            for _ in range(t.frame_skip):
                mjw.step(m, d)
            if t.extras:  # cfrc_ext, as Gymnasium's mj_rnePostConstraint after mj_step
                mjw.rne_postconstraint(m, d)
            new_qpos, new_qvel = v["qpos"].clone(), v["qvel"].clone()
            new_pos, extras = self._position(new_qpos, v), self._extras(v)
        velocity = (new_pos[:, 0] - pos[:, 0]) / self.dt
        reward = (t.forward_weight * velocity + t.healthy_reward
                  - t.ctrl_weight * (action * action).sum(1))
        healthy = (t.healthy(new_qpos, new_qvel) if t.healthy is not None
                   else torch.ones_like(steps, dtype=torch.bool))
        steps = steps + 1
        truncated = steps >= self.max_episode_steps
        return (new_qpos, new_qvel, new_pos, extras, steps), reward, ~healthy, truncated

    def _position(self, qpos: torch.Tensor, v: dict) -> torch.Tensor:
        """``(B, 2)``: what the forward reward differentiates, read as Gymnasium reads it
        (``xipos`` from the last physics step's kinematics, as MuJoCo leaves it)."""
        kind = self.task.position
        if kind == "root_x":
            return torch.stack((qpos[:, 0], torch.zeros_like(qpos[:, 0])), 1)
        if kind == "torso":
            return v["xipos"][:, self._torso, :2].clone()
        mass = self._mass
        return (mass[None, :, None] * v["xipos"]).sum(1)[:, :2] / mass.sum()

    def _extras(self, v: dict, reset: bool = False) -> torch.Tensor:
        """Humanoid's observation fields after qpos and qvel (``(B, 0)`` for the others);
        at a reset ``cfrc_ext`` is zero, as ``mj_forward`` leaves it in Gymnasium."""
        B = len(v["qpos"])
        if not self.task.extras:
            return torch.zeros(B, 0, dtype=torch.float32, device=self.device)
        ext = torch.zeros_like(v["cfrc_ext"]) if reset else v["cfrc_ext"]
        return torch.cat((v["cinert"].reshape(B, -1), v["cvel"].reshape(B, -1),
                          v["qfrc_actuator"].reshape(B, -1), ext.reshape(B, -1)), 1).clone()


def _task_class(env_id: str, name: str) -> type:
    return type(name, (WarpLocomotion,), {"task": TASKS[env_id], "__doc__":
                                          f"{env_id} on MuJoCo Warp."})


WarpHopper = _task_class("Hopper-v4", "WarpHopper")
WarpHalfCheetah = _task_class("HalfCheetah-v4", "WarpHalfCheetah")
WarpWalker2d = _task_class("Walker2d-v4", "WarpWalker2d")
WarpAnt = _task_class("Ant-v4", "WarpAnt")
WarpHumanoid = _task_class("Humanoid-v4", "WarpHumanoid")
