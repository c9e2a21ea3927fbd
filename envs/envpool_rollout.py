"""The rounds of one EnvPool evaluation: send actions, receive a batch, account it, act.

Three schedulers over the same :class:`~envs.envpool_slots.SlotBook` and
:class:`~envs.envpool_actions.Actions` (see :mod:`envs.envpool_evaluator` for when each is
used): :meth:`Rollout.loop` (one batch for everybody per round), :meth:`Rollout.loop_fast`
(the policy's NumPy fast path, lean) and :meth:`Rollout.loop_halves` (two halves alternate
so inference overlaps env stepping).
"""

from __future__ import annotations

import numpy as np
import torch

from .envpool_actions import Actions
from .envpool_io import PoolIO
from .envpool_slots import SlotBook
from .spaces import float_obs


class Rollout:
    """One ``evaluate`` call of ``ev`` (the EnvPoolEvaluator) on its current pool."""

    def __init__(self, ev, params_t: torch.Tensor, finite: np.ndarray) -> None:
        P, m = ev._layout
        self.io: PoolIO = ev._io
        self.book = SlotBook(P, m, ev.episodes, finite, float_obs(ev._obs_dtype),
                             ev._warn_broken)
        self.actions = Actions(ev, self.book, params_t)
        self.action_spec = ev.action_spec

    def run(self, overlap: bool, merge_below: int) -> int:
        """Every slot's episodes, then the lockstep restored; returns the resets that took."""
        P = self.book.P
        self.start()
        if overlap and P > 1:
            self.loop_halves(merge_below)
        elif self.actions.actor is not None:
            self.loop_fast()
        else:
            self.loop(self.actions.act(0, P))
        return self.restore_lockstep()

    def start(self) -> None:
        """Every slot starts with one explicit reset (its first episode = its lane)."""
        ids, obs = self.io.reset(self.book.slot_ids)
        self.actions.obs_buf[ids] = obs
        self.book.started(ids, obs)

    def loop(self, job) -> None:
        """One batch for everybody per round."""
        io, P, book, actions = self.io, self.book.P, self.book, self.actions
        while job is not None:
            io.send(*job)
            ids, obs, rew, done = io.recv()
            actions.obs_buf[ids] = obs
            book.process(ids, obs, rew, done)
            job = actions.act(0, P)

    def loop_fast(self) -> None:
        """``loop`` for a policy with a fast path, lean: a round is one send, one recv, the
        accounting, the observations copied into the actor's input grid and one ``actor()``.
        EnvPool's sync mode returns envs in the order they were sent, so a batch lines up
        with the plan that sent it: no index lookups. While every slot sent steps a live
        episode (no resets pending), returns accumulate in send order and are written back,
        with the lengths, only when an episode ends or a NaN shows up."""
        book, actions = self.book, self.actions
        send, recv, finite, moments = self.io.send, self.io.recv, book.finite, actions.moments
        spec = self.action_spec
        flat = (-1, *spec.shape) if not spec.discrete else (-1,)
        act_dtype = actions.act_dtype
        ids = got = book.slot_ids
        obs = actions.obs_buf  # start(): every slot's first observation
        plan = ret = actor = grid = keep = None
        t = rounds = steps = 0
        try:
            while True:
                if plan is not None and plan.version == book.version:
                    if keep is None:
                        grid[...] = obs
                    else:
                        grid[keep] = obs
                    if moments is not None:
                        actions.add_moments(plan, obs)
                else:
                    plan = actions.replan(plan, ids, got, obs)
                    if plan is None:
                        return
                    actor, grid, keep = plan.actor, plan.grid, plan.keep
                acts = actor().reshape(flat)
                if keep is not None:
                    acts = acts[keep]
                ids = plan.send_ids
                send(ids, acts.astype(act_dtype, copy=False))
                if ret is None and not book.n_resetting:
                    ret, t = book.ret[ids], 0
                got, obs, rew, done = recv()
                if ret is None:
                    book.process(ids, obs, rew, done)
                    continue
                ret += rew
                t += 1
                rounds += 1
                steps += len(ids)
                if not finite(obs, rew) or done.any():
                    book.ret[ids] = ret
                    book.length[ids] += t
                    ret = None
                    book.ends(ids, obs, rew, done)
        finally:
            book.rounds += rounds
            book.steps += steps

    def loop_halves(self, merge_below: int) -> None:
        """Two halves alternate so inference overlaps env stepping; merge near the end."""
        io, book, actions = self.io, self.book, self.actions
        h0 = (book.P + 1) // 2
        halves = [(0, h0), (h0, book.P)]
        pending = [actions.act(*halves[0]), actions.act(*halves[1])]
        inflight = None
        for g in (0, 1):
            if pending[g] is not None:
                io.send(*pending[g])
                pending[g], inflight = None, g
                break
        while inflight is not None:
            batch = io.recv()
            g, inflight = inflight, None
            h = 1 - g
            merge = np.count_nonzero(book.status) < merge_below
            if not merge and pending[h] is not None:  # keep the env threads busy first
                io.send(*pending[h])
                pending[h], inflight = None, h
            actions.obs_buf[batch[0]] = batch[1]
            book.process(*batch)
            job = actions.act(*halves[g])
            if merge:
                parts = [j for j in (job, pending[h]) if j is not None]
                if parts:
                    self.loop((np.concatenate([j[0] for j in parts]),
                               np.concatenate([j[1] for j in parts])))
                return
            if job is not None:
                if inflight is None:
                    io.send(*job)
                    inflight = g
                else:
                    pending[g] = job

    def restore_lockstep(self) -> int:
        """Give slots dropped early the resets they missed, so every slot of a lane has
        drawn the same number of episode starts. Returns how many resets that took."""
        deficit = self.book.missing_resets()
        for k in range(int(deficit.max(initial=0))):
            self.io.reset(np.flatnonzero(deficit > k).astype(np.int32))
        return int(deficit.sum())
