"""Small Gymnasium envs for tests and examples of user envs.

* :class:`LineWorld` -- a point on a line; usable as ``"envs.testing:LineWorld"`` (a user
  class) or as the registered id ``"islands/LineWorld-v0"`` (``env_module="envs.testing"``).
* :class:`NaNTrap` (``"islands/NaNTrap-v0"``) -- deliberately broken: walking off the right
  end gives NaN observations and rewards, as a simulator that blew up would.
* :class:`NoisyBandit` (``"islands/NoisyBandit-v0"``) -- one continuous action, one step,
  a smooth reward plus Gaussian noise much larger than the reward's differences near the
  optimum: a fitness whose ranking becomes a lottery once the search has converged.

Both draw their start from ``np_random`` at reset only, so ``reset(seed=s)`` fixes the
whole episode for a deterministic policy.

And an example of a user's objective (``--problem envs.testing:shifted_sphere --dim D
--minimize``): :func:`shifted_sphere`, batched over a population.
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces


class LineWorld(gymnasium.Env):
    """Position ``x`` starts uniform in ``[-0.5, 0.5]``; actions 0/1/2 move it by
    -0.1/0/+0.1. Reward ``1 - |x|`` per step; the episode terminates when ``|x| > 1`` and is
    truncated after ``max_steps``. Observation ``(x, t / max_steps)``."""

    metadata = {"render_modes": []}

    def __init__(self, max_steps: int = 40) -> None:
        self.max_steps = int(max_steps)
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(3)
        self.x = 0.0
        self.t = 0

    def _obs(self) -> np.ndarray:
        return np.array([self.x, self.t / self.max_steps], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options=None):
        super().reset(seed=seed)
        self.x = float(self.np_random.uniform(-0.5, 0.5))
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.x += 0.1 * (int(action) - 1)
        self.t += 1
        terminated = abs(self.x) > 1.0
        return self._obs(), 1.0 - abs(self.x), terminated, self.t >= self.max_steps, {}


class NaNTrap(LineWorld):
    """LineWorld whose right end is broken: past ``x > 1`` the observation and reward are
    NaN and the episode never ends by itself (only truncation would end it)."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if self.x > 1.0:
            return np.full(2, np.nan, np.float32), float("nan"), False, truncated, info
        return obs, reward, terminated, truncated, info


class NoisyBandit(gymnasium.Env):
    """One step: observation ``(1,)``, action ``a`` in ``[-1, 1]``, reward
    ``-10 (a - 0.5)^2 + noise_std * (z1 cos(50 a) + z2 sin(50 a))`` with ``z1, z2 ~ N(0, 1)``
    drawn at reset (``reset(seed=...)`` fixes them). The noise is N(0, noise_std^2) at every
    action but differs between actions more than ~1/50 apart, as chaotic dynamics make it:
    common random numbers (one seed for a whole generation) do not cancel it."""

    metadata = {"render_modes": []}

    def __init__(self, noise_std: float = 2.0) -> None:
        self.noise_std = float(noise_std)
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.z = np.zeros(2)

    def reset(self, *, seed: int | None = None, options=None):
        super().reset(seed=seed)
        self.z = self.np_random.normal(size=2)
        return np.ones(1, dtype=np.float32), {}

    def step(self, action):
        a = float(np.asarray(action).reshape(-1)[0])
        noise = self.z[0] * np.cos(50.0 * a) + self.z[1] * np.sin(50.0 * a)
        reward = -10.0 * (a - 0.5) ** 2 + self.noise_std * float(noise)
        return np.ones(1, dtype=np.float32), reward, True, False, {}


def shifted_sphere(X: np.ndarray) -> np.ndarray:
    """``sum((x - 1)^2)`` of each row of ``X`` (P, D): a cost whose minimum, 0, is at the
    all-ones genome, away from where genomes start."""
    return ((np.asarray(X) - 1.0) ** 2).sum(1)


def _register() -> None:
    for name, cls in (("islands/LineWorld-v0", LineWorld), ("islands/NaNTrap-v0", NaNTrap),
                      ("islands/NoisyBandit-v0", NoisyBandit)):
        if name not in gymnasium.registry:
            gymnasium.register(id=name, entry_point=f"{__name__}:{cls.__name__}")


_register()
