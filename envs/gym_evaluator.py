"""Gymnasium backend: any Gymnasium env, a user's class or a user-registered id.

Scheduling: a queue of ``(individual, episode)`` jobs and ``num_envs`` env slots. Every
slot always holds a live episode: when one ends, the slot takes the next job at once (same
step), so no env is ever stepped past the end of its episode (``frames == env_steps``).
Each round, one batched ``policy.act`` computes the actions of every live slot: slots map to
arbitrary individuals, so the policy runs with ``P = live slots, B = 1`` on the gathered
parameter rows ``params[individual_of_slot]``.

Common random numbers are exact: job ``(p, e)`` starts with ``env.reset(seed=seeds[e])``,
where ``seeds`` derive from the call's ``seed``; so every individual meets the same E
episodes, and another ``seed`` gives other episodes.

The envs are stepped one after another in the calling thread (the cost is Python stepping,
not inference); ``num_threads`` is kept for the common signature and does not start threads.
"""

from __future__ import annotations

import math
import time
from collections import deque
from typing import Any

import numpy as np
import torch

from .common import PopulationEvaluator, episode_seeds, gather_state, scatter_state
from .spaces import float_obs, make_gymnasium_env, resolve_gymnasium, spaces_to_policy_io

DEFAULT_NUM_ENVS = 32  # env slots: enough to batch inference, few enough to build quickly


class GymnasiumEvaluator(PopulationEvaluator):
    backend = "gymnasium"

    def __init__(self, env_id: str, *args: Any, num_envs: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(env_id, *args, **kwargs)
        self.num_envs = DEFAULT_NUM_ENVS if num_envs is None else int(num_envs)
        if self.num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self._target = resolve_gymnasium(env_id)
        env = self._make_env()
        self._envs = [env]
        obs_shape, action = spaces_to_policy_io(env.observation_space, env.action_space,
                                                env_id)
        self._obs_dtype = np.dtype(env.observation_space.dtype)
        self._init_policy(obs_shape, action)

    def _make_env(self):
        return make_gymnasium_env(self._target, self.max_episode_steps, self.env_kwargs)

    def _slots(self, n: int) -> list:
        while len(self._envs) < n:
            self._envs.append(self._make_env())
        return self._envs[:n]

    def close(self) -> None:
        for env in self._envs:
            env.close()
        self._envs = []

    @torch.inference_mode()
    def evaluate(self, params, seed: int):
        t0 = time.perf_counter()
        params_t, finite = self._params(params)
        seeds = episode_seeds(seed, self.episodes)
        self._warn_bad_params(finite)
        run = _Rollout(self, params_t, finite, seeds)
        run.run()
        extra: dict[str, Any] = {"num_envs": run.S}
        return self._result(run.returns, run.lengths, run.broken, run.steps, run.steps, t0,
                            run.moments, extra)


class _Rollout:
    """One ``evaluate`` call: the queue of ``(individual, episode)`` jobs, the env slots
    (``slot_p``, ``slot_e``: the job each runs) and what the episodes earned."""

    def __init__(self, ev: GymnasiumEvaluator, params_t: torch.Tensor, finite: np.ndarray,
                 seeds: np.ndarray) -> None:
        P, E = params_t.shape[0], ev.episodes
        self.ev, self.params_t, self.seeds = ev, params_t, seeds
        self.returns = np.full((P, E), np.nan)
        self.lengths = np.zeros((P, E), dtype=np.int64)
        self.broken = ~finite
        self.jobs = deque((p, e) for p in range(P) if finite[p] for e in range(E))
        self.S = S = min(len(self.jobs), ev.num_envs)
        self.envs = ev._slots(S)
        self.mean, self.std = ev._norm_tensors()
        self.moments = ev._moments()
        self.check_obs = float_obs(ev._obs_dtype)
        self.obs_buf = np.zeros((max(S, 1), *ev.obs_shape), dtype=ev._obs_dtype)
        self.slot_p = np.full(S, -1, dtype=np.int64)
        self.slot_e = np.zeros(S, dtype=np.int64)
        self.ret = np.zeros(S)
        self.length = np.zeros(S, dtype=np.int64)
        self.live = np.zeros(S, dtype=bool)
        self.new_ep = np.zeros(S, dtype=bool)
        self.pstate = ev.policy.initial_state(S, 1, ev.device) if S else None
        self.steps = 0

    def run(self) -> None:
        """Rounds until every job is done: one batched policy call, then one step per env."""
        for s in range(self.S):
            self.start(s)
        while self.live.any():
            # Slots of an individual that broke elsewhere this round: their episodes end
            # here (counted as finished), the slots take other jobs.
            for s in np.flatnonzero(self.live & self.broken[np.maximum(self.slot_p, 0)]):
                self.record(s)
                self.start(s)
            idx = np.flatnonzero(self.live)
            if len(idx) == 0:
                break
            self.step(idx, self.actions(idx))

    def record(self, s: int) -> None:
        if self.length[s] > 0:  # an episode broken at reset keeps return NaN, length 0
            p, e = self.slot_p[s], self.slot_e[s]
            self.returns[p, e], self.lengths[p, e] = self.ret[s], self.length[s]
        self.live[s] = False

    def mark_broken(self, s: int, what: str) -> None:
        self.record(s)
        self.broken[self.slot_p[s]] = True
        self.ev._warn_broken(int(self.slot_p[s]), int(self.slot_e[s]), what)

    def start(self, s: int) -> None:
        """Put the next job of a still-sound individual into slot ``s``."""
        while self.jobs:
            p, e = self.jobs.popleft()
            if self.broken[p]:
                continue
            obs, _ = self.envs[s].reset(seed=int(self.seeds[e]))
            self.slot_p[s], self.slot_e[s], self.ret[s], self.length[s] = p, e, 0.0, 0
            self.live[s] = self.new_ep[s] = True
            if self.check_obs and not np.isfinite(obs).all():
                self.mark_broken(s, "observation at reset")
                continue
            self.obs_buf[s] = obs
            return

    def actions(self, idx: np.ndarray) -> np.ndarray:
        """The actions of the live slots ``idx``: one ``policy.act`` with ``P = len(idx),
        B = 1`` on the gathered parameter rows (and policy state rows)."""
        pol, dev = self.ev.policy, self.ev.device
        if self.pstate is not None and self.new_ep.any():
            done = torch.from_numpy(self.new_ep.reshape(self.S, 1)).to(dev)
            self.pstate = pol.reset_state(self.pstate, done)
        self.new_ep[:] = False
        obs_live = self.obs_buf[idx]
        if self.moments is not None:
            self.moments.add(obs_live)
        p_rows = self.params_t.index_select(0, torch.from_numpy(self.slot_p[idx]).to(dev))
        o = torch.from_numpy(obs_live).to(dev).unsqueeze(1)
        if self.pstate is None or len(idx) == self.S:
            acts, self.pstate = pol.act(p_rows, o, self.pstate, self.mean, self.std)
        else:
            idx_t = torch.from_numpy(idx).to(dev)
            sub = gather_state(self.pstate, idx_t)
            acts, sub = pol.act(p_rows, o, sub, self.mean, self.std)
            scatter_state(self.pstate, idx_t, sub)
        return acts.cpu().numpy()

    def step(self, idx: np.ndarray, acts: np.ndarray) -> None:
        """One env step per live slot; an ended or broken episode's slot starts the next
        job at once (same round), so no env is stepped past the end of an episode."""
        discrete = self.ev.action_spec.discrete
        for k, s in enumerate(idx):
            a = int(acts[k, 0]) if discrete else acts[k, 0]
            obs, r, term, trunc, _ = self.envs[s].step(a)
            self.ret[s] += r
            self.length[s] += 1
            self.steps += 1
            if not math.isfinite(r):
                self.mark_broken(s, "reward")
            elif self.check_obs and not np.isfinite(obs).all():
                self.mark_broken(s, "observation")
            elif term or trunc:
                self.record(s)
            else:
                self.obs_buf[s] = obs
                continue
            self.start(s)
