"""Small Gymnasium envs for tests and examples of user envs.

* :class:`LineWorld` -- a point on a line; usable as ``"envs.testing:LineWorld"`` (a user
  class) or as the registered id ``"islands/LineWorld-v0"`` (``env_module="envs.testing"``).
* :class:`NaNTrap` (``"islands/NaNTrap-v0"``) -- deliberately broken: walking off the right
  end gives NaN observations and rewards, as a simulator that blew up would.

Both draw their start from ``np_random`` at reset only, so ``reset(seed=s)`` fixes the
whole episode for a deterministic policy.
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


def _register() -> None:
    for name, cls in (("islands/LineWorld-v0", LineWorld), ("islands/NaNTrap-v0", NaNTrap)):
        if name not in gymnasium.registry:
            gymnasium.register(id=name, entry_point=f"{__name__}:{cls.__name__}")


_register()
