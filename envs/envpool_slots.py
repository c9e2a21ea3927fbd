"""Slot bookkeeping of one EnvPool evaluation: which episode each slot runs, what it earned.

Slot ``p * m + i`` belongs to individual ``p`` and lane ``i`` (see
:mod:`envs.envpool_evaluator`). A slot is RUN (its episode is live), RESET (its episode
ended and EnvPool will reset it on the next send) or idle (no more episodes this call).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

RUN, RESET = 1, 2  # slot status; 0 = idle (no more episodes this call)
_sum = np.add.reduce


class SlotBook:
    """Per-slot episode state and per-individual results of one call.

    ``version`` is bumped whenever a slot goes idle: plans built on the set of active slots
    (:mod:`envs.envpool_actions`) are valid while it is unchanged."""

    def __init__(self, P: int, m: int, episodes: int, finite: np.ndarray, check_obs: bool,
                 warn_broken: Callable[[int, int, str], None]) -> None:
        E = episodes
        self.P, self.m, self.S = P, m, P * m
        self.check_obs = check_obs  # float observations can be non-finite; integer ones not
        self.warn_broken = warn_broken
        self.slot_ids = np.arange(self.S, dtype=np.int32)
        self.ind = np.repeat(np.arange(P), m)  # the individual of each slot
        lane = np.tile(np.arange(m), P)
        self.n_jobs = np.array([len(range(i, E, m)) for i in range(m)])[lane]
        self.jobs_left = self.n_jobs.copy()
        self.slot_ep = lane.copy()  # episode index each slot is running
        self.resets = np.zeros(self.S, dtype=np.int64)
        self.returns = np.full((P, E), np.nan)
        self.lengths = np.zeros((P, E), dtype=np.int64)
        self.broken = ~finite
        self.status = np.zeros(self.S, dtype=np.int8)
        self.n_resetting = 0  # slots in RESET (none at all when every slot runs 1 episode)
        self.version = 0
        self.ret = np.zeros(self.S)
        self.length = np.zeros(self.S, dtype=np.int64)
        self.new_ep = np.zeros(self.S, dtype=bool)  # the policy state must be reset there
        self.steps = self.rounds = self.n_resets = 0

    def drop(self, individuals) -> None:
        """Stop individuals (NaN seen): record the episodes they have under way as finished
        where they got a step, idle their slots."""
        m = self.m
        for p in individuals:
            self.broken[p] = True
            sl = slice(p * m, (p + 1) * m)
            st = self.status[sl]
            for s in p * m + np.flatnonzero((st == RUN) & (self.length[sl] > 0)):
                e = self.slot_ep[s]
                self.returns[p, e], self.lengths[p, e] = self.ret[s], self.length[s]
            self.n_resetting -= int(np.count_nonzero(st == RESET))
            st[:] = 0
        self.version += 1

    def find_bad(self, ids, obs, rew=None) -> np.ndarray:
        """Slots among ``ids`` with a non-finite observation (or reward); warns once each."""
        bad = np.zeros(len(ids), dtype=bool)
        if self.check_obs:
            bad |= ~np.isfinite(obs.reshape(len(ids), -1)).all(axis=1)
        if rew is not None:
            bad |= ~np.isfinite(rew)
        for s in ids[bad]:
            p = int(self.ind[s])
            if not self.broken[p]:
                self.warn_broken(p, int(self.slot_ep[s]),
                                 "observation at reset" if rew is None else
                                 "reward/observation")
        return bad

    def started(self, ids, obs) -> None:
        """Every slot was reset once, explicitly (its first episode = its lane)."""
        self.resets += 1
        self.n_resets += self.S
        self.status[np.repeat(~self.broken, self.m)] = RUN
        self.new_ep[:] = self.status == RUN
        bad = self.find_bad(ids, obs) & (self.status[ids] == RUN)
        if bad.any():
            self.drop(np.unique(self.ind[ids[bad]]))

    def finish(self, fin: np.ndarray) -> None:
        """Record the episodes that just ended in slots ``fin``; queue their next ones."""
        p, e = self.ind[fin], self.slot_ep[fin]
        self.returns[p, e], self.lengths[p, e] = self.ret[fin], self.length[fin]
        self.jobs_left[fin] -= 1
        more = self.jobs_left[fin] > 0
        if more.all():
            self.status[fin] = RESET
        else:
            self.status[fin] = np.where(more, RESET, 0)
            self.version += 1
        n_more = int(np.count_nonzero(more))
        if n_more:
            self.slot_ep[fin[more]] += self.m
            self.n_resetting += n_more

    def process(self, ids, obs, rew, done) -> None:
        """Account one received batch: steps of live episodes, ends, resets, NaNs. (The
        caller stores the observations where its policy reads them.)"""
        self.rounds += 1
        if self.n_resetting:  # some received slots were reset, not stepped
            st = self.status[ids]
            run = st == RUN
            is_rs = st == RESET
            rs = ids[is_rs]
            if len(rs):
                self.status[rs] = RUN
                self.n_resetting -= len(rs)
                self.resets[rs] += 1
                self.n_resets += len(rs)
                self.ret[rs], self.length[rs] = 0.0, 0
                self.new_ep[rs] = True
                bad = self.find_bad(rs, obs[is_rs])
                if bad.any():
                    self.drop(np.unique(self.ind[rs[bad]]))
            ids, obs, rew, done = ids[run], obs[run], rew[run], done[run]
            if len(ids) == 0:
                return
        self.ret[ids] += rew
        self.length[ids] += 1
        self.steps += len(ids)
        if not self.finite(obs, rew) or done.any():
            self.ends(ids, obs, rew, done)

    def finite(self, obs, rew) -> bool:
        # One reduction each; an overflowing sum only sends us to the exact check.
        total = float(_sum(rew))
        if self.check_obs:
            total += float(_sum(obs, axis=None))
        return math.isfinite(total)

    def ends(self, ids, obs, rew, done) -> None:
        """After a step of slots ``ids`` was accounted: drop individuals that met a NaN,
        finish the episodes that ended."""
        if not self.finite(obs, rew):
            bad = self.find_bad(ids, obs, rew)
            if bad.any():  # the abandoned episodes count as finished
                self.drop(np.unique(self.ind[ids[bad]]))
                keep = self.status[ids] == RUN
                ids, done = ids[keep], done[keep]
        if done.any():
            self.finish(ids[done])

    def missing_resets(self) -> np.ndarray:
        """Per slot, the episode starts it has not drawn this call (dropped early): giving
        them keeps every slot of a lane in lockstep (common random numbers)."""
        return self.n_jobs - self.resets
