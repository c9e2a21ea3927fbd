"""CartPole-v1 for N environments at once as torch tensors (CPU or CUDA).

Same dynamics and episode rules as Gymnasium's ``CartPole-v1``: explicit Euler integration
with ``tau = 0.02``, ``force_mag = 10``, gravity 9.8, cart mass 1.0, pole mass 0.1, pole
half-length 0.5; the episode terminates when ``|x| > 2.4`` or ``|theta| > 12 deg`` (reward
1 on every step, the terminating step included) and is truncated after 500 steps. Initial
states are uniform in ``[-0.05, 0.05]^4``. The state is kept in float32 by default (the GPU
path), so trajectories match Gymnasium's float64 ones to float32 rounding; pass
``dtype=torch.float64`` for a closer match.

Two APIs:

* functional (used by :class:`envs.torch_evaluator.TorchEvaluator`): a state is a tuple of
  tensors ``(state (B, 4), steps (B,) int32)``; :meth:`TorchCartPole.initial_states`,
  :meth:`TorchCartPole.observe` and :meth:`TorchCartPole.step_state` never reset anything;
* stateful with auto-reset (``reset``/``step``), like a Gymnasium vector env in same-step
  autoreset mode: a finished env's returned observation is already the first of its next
  episode and the last one of the finished episode is in ``info["final_obs"]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from policies.spec import ActionSpec

GRAVITY = 9.8
MASSCART = 1.0
MASSPOLE = 0.1
TOTAL_MASS = MASSPOLE + MASSCART
LENGTH = 0.5  # half the pole's length, as in Gymnasium
POLEMASS_LENGTH = MASSPOLE * LENGTH
FORCE_MAG = 10.0
TAU = 0.02
THETA_THRESHOLD = 12 * 2 * math.pi / 360
X_THRESHOLD = 2.4
RESET_HIGH = 0.05  # initial states are uniform in [-RESET_HIGH, RESET_HIGH]
DEFAULT_MAX_EPISODE_STEPS = 500  # Gymnasium's TimeLimit for CartPole-v1

CartPoleState = tuple[torch.Tensor, torch.Tensor]


def seed_generator(seed: int) -> torch.Generator:
    """A CPU generator for episode starts: CPU draws are the same on every machine, so an
    evaluation on CUDA starts from exactly the states it would start from on CPU."""
    return torch.Generator(device="cpu").manual_seed(int(seed) % (2**63))


class TorchCartPole:
    """Batched CartPole-v1; see the module docstring for both APIs."""

    env_id = "CartPole-v1"
    obs_shape = (4,)
    action = ActionSpec(discrete=True, n=2)  # 0 pushes left, 1 pushes right
    default_max_episode_steps = DEFAULT_MAX_EPISODE_STEPS

    def __init__(
        self,
        num_envs: int = 1,
        device: str | torch.device = "cpu",
        seed: int = 0,
        max_episode_steps: int | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
        self.num_envs = int(num_envs)
        self.device = torch.device(device)
        self.dtype = dtype
        self.max_episode_steps = int(max_episode_steps or DEFAULT_MAX_EPISODE_STEPS)
        if self.max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1, got {max_episode_steps}")
        self._gen = torch.Generator(device=self.device).manual_seed(int(seed) % (2**63))
        self._st: CartPoleState | None = None

    # ---- functional API -------------------------------------------------------------------

    def initial_states(self, count: int, seed: int) -> CartPoleState:
        """``count`` episode starts drawn from ``torch.Generator(seed)`` (CPU, so the same
        starts on every device), as a state tuple on ``self.device``."""
        g = seed_generator(seed)
        x = torch.rand(count, 4, generator=g, dtype=torch.float64) * (2 * RESET_HIGH)
        x = x - RESET_HIGH
        return self.state_from(x)

    def state_from(self, x) -> CartPoleState:
        """State tuple (step counters at 0) from ``x`` of shape ``(B, 4)`` or ``(4,)``:
        ``(x, x_dot, theta, theta_dot)``, e.g. a Gymnasium env's ``unwrapped.state``."""
        x = torch.as_tensor(x, dtype=torch.float64).reshape(-1, 4)
        x = x.to(device=self.device, dtype=self.dtype)
        return x, torch.zeros(x.shape[0], dtype=torch.int32, device=self.device)

    @staticmethod
    def observe(st: CartPoleState) -> torch.Tensor:
        """Observations ``(B, 4)`` float32: the state itself, as in Gymnasium."""
        return st[0].to(torch.float32)

    def step_state(
        self, st: CartPoleState, action: torch.Tensor
    ) -> tuple[CartPoleState, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step of every env: ``(new_state, reward, terminated, truncated)``; no reset.
        Written as a handful of elementwise ops so that torch.compile fuses them."""
        state, steps = st
        x, x_dot, theta, theta_dot = state.unbind(1)
        force = torch.where(action == 1, FORCE_MAG, -FORCE_MAG).to(state.dtype)
        costheta = torch.cos(theta)
        sintheta = torch.sin(theta)
        temp = (force + POLEMASS_LENGTH * theta_dot * theta_dot * sintheta) / TOTAL_MASS
        thetaacc = (GRAVITY * sintheta - costheta * temp) / (
            LENGTH * (4.0 / 3.0 - MASSPOLE * costheta * costheta / TOTAL_MASS)
        )
        xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
        # explicit Euler: positions advance with the old velocities (Gymnasium's "euler")
        new_state = torch.stack(
            (
                x + TAU * x_dot,
                x_dot + TAU * xacc,
                theta + TAU * theta_dot,
                theta_dot + TAU * thetaacc,
            ),
            dim=1,
        )
        steps = steps + 1
        nx, nth = new_state[:, 0], new_state[:, 2]
        terminated = (nx < -X_THRESHOLD) | (nx > X_THRESHOLD)
        terminated = terminated | (nth < -THETA_THRESHOLD) | (nth > THETA_THRESHOLD)
        truncated = steps >= self.max_episode_steps
        reward = torch.ones(state.shape[0], dtype=torch.float32, device=state.device)
        return (new_state, steps), reward, terminated, truncated

    # ---- stateful API with auto-reset -----------------------------------------------------

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Start all envs afresh; with ``seed`` the starts are ``initial_states(N, seed)`` and
        the auto-reset generator is re-seeded too."""
        if seed is not None:
            self._gen.manual_seed(int(seed) % (2**63))
            self._st = self.initial_states(self.num_envs, seed)
        else:
            self._st = self.state_from(self._random_starts())
        return self.observe(self._st)

    def set_state(self, x) -> torch.Tensor:
        """Put every env in state ``x`` (``(N, 4)``, or ``(4,)`` broadcast), steps at 0."""
        st = self.state_from(x)
        if st[0].shape[0] == 1:
            st = (st[0].expand(self.num_envs, 4).clone(), st[1].expand(self.num_envs).clone())
        if st[0].shape[0] != self.num_envs:
            raise ValueError(f"state has {st[0].shape[0]} rows, env has {self.num_envs}")
        self._st = st
        return self.observe(st)

    @property
    def state(self) -> torch.Tensor:
        """Current ``(N, 4)`` state (x, x_dot, theta, theta_dot)."""
        self._require_reset()
        return self._st[0]

    def step(self, action) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict]:
        """``(obs, reward, terminated, truncated, info)``; finished envs restart at once."""
        self._require_reset()
        action = torch.as_tensor(action, device=self.device).reshape(self.num_envs)
        st, reward, terminated, truncated = self.step_state(self._st, action)
        final_obs = self.observe(st)
        done = terminated | truncated
        fresh = self._random_starts()
        state = torch.where(done.unsqueeze(1), fresh, st[0])
        steps = torch.where(done, torch.zeros_like(st[1]), st[1])
        self._st = (state, steps)
        return self.observe(self._st), reward, terminated, truncated, {"final_obs": final_obs}

    def _random_starts(self) -> torch.Tensor:
        # drawn every step (not only when an env finished) so there is no host sync
        u = torch.rand(self.num_envs, 4, generator=self._gen, device=self.device)
        return (u * (2 * RESET_HIGH) - RESET_HIGH).to(self.dtype)

    def _require_reset(self) -> None:
        if self._st is None:
            raise RuntimeError("call reset() or set_state() before stepping")


def controller_mlp_params(
    sizes: Sequence[int], weights: Sequence[float] = (0.1, 0.5, 1.0, 1.0), gain: float = 10.0
) -> torch.Tensor:
    """A parameter vector for ``policies.mlp.MLPPolicy`` with layer ``sizes`` ``(4, *hidden,
    2)`` that pushes right exactly when ``weights . obs > 0`` (the default weights balance
    CartPole for 500 steps from Gymnasium's starts).

    Hidden unit 0 carries ``tanh(gain * weights . obs)`` through every tanh layer (tanh keeps
    the sign); the output layer scores action 1 with ``+h0`` and action 0 with ``-h0``. The
    layout is MLPPolicy's: per layer the ``(in, out)`` weight row-major, then the bias.
    """
    sizes = [int(s) for s in sizes]
    if sizes[0] != 4 or sizes[-1] != 2 or len(sizes) < 3:
        raise ValueError(f"need sizes (4, *hidden, 2) with at least one hidden layer, got {sizes}")
    chunks = []
    for i, (fi, fo) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        W = torch.zeros(fi, fo, dtype=torch.float64)
        if i == 0:
            W[:, 0] = gain * torch.tensor(weights, dtype=torch.float64)
        elif i < len(sizes) - 2:
            W[0, 0] = 2.0  # > 1 so the sign survives repeated tanh without shrinking to 0
        else:
            W[0, 0], W[0, 1] = -1.0, 1.0
        chunks += [W.reshape(-1), torch.zeros(fo, dtype=torch.float64)]
    return torch.cat(chunks)
