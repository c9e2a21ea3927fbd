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
        P, E = params_t.shape[0], self.episodes
        seeds = episode_seeds(seed, E)
        returns = np.full((P, E), np.nan)
        lengths = np.zeros((P, E), dtype=np.int64)
        broken = ~finite
        self._warn_bad_params(finite)
        jobs = deque((p, e) for p in range(P) if finite[p] for e in range(E))
        S = min(len(jobs), self.num_envs)
        envs = self._slots(S)
        pol, action, dev = self.policy, self.action_spec, self.device
        mean, std = self._norm_tensors()
        moments = self._moments()
        check_obs = float_obs(self._obs_dtype)

        obs_buf = np.zeros((max(S, 1), *self.obs_shape), dtype=self._obs_dtype)
        slot_p = np.full(S, -1, dtype=np.int64)
        slot_e = np.zeros(S, dtype=np.int64)
        ret = np.zeros(S)
        length = np.zeros(S, dtype=np.int64)
        live = np.zeros(S, dtype=bool)
        new_ep = np.zeros(S, dtype=bool)
        pstate = pol.initial_state(S, 1, dev) if S else None
        steps = 0

        def record(s: int) -> None:
            if length[s] > 0:  # an episode broken at reset keeps return NaN, length 0
                returns[slot_p[s], slot_e[s]], lengths[slot_p[s], slot_e[s]] = ret[s], length[s]
            live[s] = False

        def mark_broken(s: int, what: str) -> None:
            record(s)
            broken[slot_p[s]] = True
            self._warn_broken(int(slot_p[s]), int(slot_e[s]), what)

        def start(s: int) -> None:
            """Put the next job of a still-sound individual into slot ``s``."""
            while jobs:
                p, e = jobs.popleft()
                if broken[p]:
                    continue
                obs, _ = envs[s].reset(seed=int(seeds[e]))
                slot_p[s], slot_e[s], ret[s], length[s] = p, e, 0.0, 0
                live[s] = new_ep[s] = True
                if check_obs and not np.isfinite(obs).all():
                    mark_broken(s, "observation at reset")
                    continue
                obs_buf[s] = obs
                return

        for s in range(S):
            start(s)
        while live.any():
            # Slots of an individual that broke elsewhere this round: their episodes end
            # here (counted as finished), the slots take other jobs.
            for s in np.flatnonzero(live & broken[np.maximum(slot_p, 0)]):
                record(s)
                start(s)
            idx = np.flatnonzero(live)
            if len(idx) == 0:
                break
            if pstate is not None and new_ep.any():
                done = torch.from_numpy(new_ep.reshape(S, 1)).to(dev)
                pstate = pol.reset_state(pstate, done)
            new_ep[:] = False
            obs_live = obs_buf[idx]
            if moments is not None:
                moments.add(obs_live)
            idx_t = torch.from_numpy(idx).to(dev)
            p_rows = params_t.index_select(0, torch.from_numpy(slot_p[idx]).to(dev))
            o = torch.from_numpy(obs_live).to(dev).unsqueeze(1)
            if pstate is None or len(idx) == S:
                acts, pstate_new = pol.act(p_rows, o, pstate, mean, std)
                pstate = pstate_new
            else:
                sub = gather_state(pstate, idx_t)
                acts, sub = pol.act(p_rows, o, sub, mean, std)
                scatter_state(pstate, idx_t, sub)
            acts = acts.cpu().numpy()
            for k, s in enumerate(idx):
                a = int(acts[k, 0]) if action.discrete else acts[k, 0]
                obs, r, term, trunc, _ = envs[s].step(a)
                ret[s] += r
                length[s] += 1
                steps += 1
                if not math.isfinite(r):
                    mark_broken(s, "reward")
                elif check_obs and not np.isfinite(obs).all():
                    mark_broken(s, "observation")
                elif term or trunc:
                    record(s)
                else:
                    obs_buf[s] = obs
                    continue
                start(s)
        extra: dict[str, Any] = {"num_envs": S}
        return self._result(returns, lengths, broken, steps, steps, t0, moments, extra)
