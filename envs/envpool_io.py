"""Sending actions to and receiving results from an EnvPool in synchronous mode."""

from __future__ import annotations

import numpy as np

from .spaces import envpool_spaces


class PoolIO:
    """send / recv / reset on an EnvPool in sync mode, returning ``(ids, obs, reward, done)``.

    Uses EnvPool's flat ``_send`` / ``_recv`` when the pool has the usual single-player
    layout (it skips building Gymnasium tuples and info dicts every round: a large part of
    a small round's cost), the public API otherwise."""

    def __init__(self, pool, low_level: bool = True) -> None:
        self.pool = pool
        self.fast = False
        envpool_spaces(pool)  # built (and cached by the pool) now, with the warnings muted
        if low_level:
            try:
                keys = list(pool._state_keys)
                akeys = list(pool._spec._action_keys)
                single = pool.config.get("max_num_players", 1) == 1
                obs_keys = [k for k in keys if k == "obs" or k.startswith("obs:")]
                if single and akeys == ["env_id", "players.env_id", "action"] and \
                        len(obs_keys) == 1:
                    self.i_id = keys.index("info:env_id")
                    self.i_obs = keys.index(obs_keys[0])
                    self.i_rew = keys.index("reward")
                    self.i_done = keys.index("done")
                    self.fast = True
            except (AttributeError, ValueError):
                self.fast = False

    def send(self, ids: np.ndarray, actions: np.ndarray) -> None:
        if self.fast:
            self.pool._send([ids, ids, np.ascontiguousarray(actions)])
        else:
            self.pool.send(actions, ids)

    def recv(self):
        if self.fast:
            s = self.pool._recv()
            done = s[self.i_done].astype(bool, copy=False)
            return s[self.i_id], s[self.i_obs], s[self.i_rew], done
        obs, rew, term, trunc, info = self.pool.recv()
        return info["env_id"], obs, rew, term | trunc

    def reset(self, ids: np.ndarray):
        obs, info = self.pool.reset(ids)
        return info["env_id"], obs
