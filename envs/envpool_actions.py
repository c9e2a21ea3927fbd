"""The actions of one EnvPool evaluation: observation buffers, plans and policy calls.

A :class:`Plan` says who acts in a range of individuals while the set of active slots is
unchanged; :class:`Actions` builds plans, keeps the observation buffers the policy reads
(pinned host memory for CUDA) and the policy state, and turns observations into the
``(env_ids, actions)`` to send.
"""

from __future__ import annotations

import numpy as np
import torch

from .common import gather_state, scatter_state, tree_map
from .envpool_slots import RUN, SlotBook


class Plan:
    """Who acts in one range of individuals, valid while ``version`` is unchanged (slots
    only ever go idle in between): the individuals with an active slot (``rows``, ``first``),
    their slots (``slots``, all lanes), the active ones to send to and, for the policy's fast
    path, the actor restricted to those individuals with its observation input flattened to
    ``grid (len(slots), *obs_shape)``."""

    __slots__ = ("version", "rows", "first", "ri_dev", "p_rows", "actor", "grid", "slots",
                 "keep", "send_ids")

    def __init__(self, version: int, rows: np.ndarray) -> None:
        self.version, self.rows = version, rows
        self.first = None  # slice of individuals (all act) or their indices; None: nobody
        self.ri_dev = self.p_rows = self.actor = self.grid = self.slots = None
        self.keep = None  # positions of the active slots in the grid (None: all of them)
        self.send_ids = None  # the active slots, in grid order (int32)


class Actions:
    """Action computation for the slots of one call of ``ev`` (the EnvPoolEvaluator);
    ``params_t`` is float32 ``(P, D)`` on the device. Reads the book's slot status,
    ``version`` and ``new_ep``."""

    def __init__(self, ev, book: SlotBook, params_t: torch.Tensor) -> None:
        self.book, self.params_t = book, params_t
        P, m, S = book.P, book.m, book.S
        self.P, self.m, self.S, self.slot_ids = P, m, S, book.slot_ids
        self.lane_ids = np.arange(m)
        self.pol, self.dev, self.act_dtype = ev.policy, ev.device, ev._act_dtype
        self.mean, self.std = ev._norm_tensors()
        self.moments = ev._moments()
        self._cache: dict[tuple[int, int], Plan] = {}
        self.obs_shape = ev.obs_shape
        self.on_cpu = self.dev.type == "cpu"
        # For CUDA inference the observation buffer lives in pinned (page-locked) host memory:
        # only from there does ``.to(cuda, non_blocking=True)`` copy by DMA without a staging
        # copy, and without blocking this thread. Reusing it next round is safe because each
        # round ends with the actions' device->host copy, which waits for the stream (and so
        # for the observation copy queued before the forward pass).
        self.pinned = ev.pinned
        if self.pinned:
            t_dtype = torch.from_numpy(np.empty(0, dtype=ev._obs_dtype)).dtype
            self.obs_host = torch.zeros((S, *ev.obs_shape), dtype=t_dtype, pin_memory=True)
            self.obs_buf = self.obs_host.numpy()
            # gathered rows (some individuals done) are staged here, pinned too
            self.stage = torch.empty((P, m, *ev.obs_shape), dtype=t_dtype, pin_memory=True)
        else:
            self.obs_buf = np.zeros((S, *ev.obs_shape), dtype=ev._obs_dtype)
            self.obs_host = self.stage = torch.from_numpy(self.obs_buf)
        self.obs_np_grid = self.obs_buf.reshape(P, m, *ev.obs_shape)
        self.obs_grid = torch.from_numpy(self.obs_buf).view(P, m, *ev.obs_shape)
        self.pstate = self.pol.initial_state(P, m, self.dev)
        # The policy's fast path for this call's parameters (None: ``act`` every round).
        self.actor = (self.pol.actor(params_t, self.mean, self.std)
                      if self.pstate is None and ev.fast_actor else None)

    def buffers_pinned(self) -> bool:
        """Whether the host buffers observations go to the device from are page-locked, as
        torch sees them (``Tensor.is_pinned``), not as asked for."""
        return bool(self.obs_host.is_pinned() and self.stage.is_pinned())

    def plan(self, a: int, b: int) -> Plan:
        """The plan of individuals ``a..b-1`` for the current ``version`` (cached)."""
        hit = self._cache.get((a, b))
        if hit is not None and hit.version == self.book.version:
            return hit
        m = self.m
        active = self.book.status[a * m:b * m] != 0
        rows = active.reshape(b - a, m).any(axis=1)
        plan = Plan(self.book.version, rows)
        if rows.any():
            if hit is not None and hit.first is not None and np.array_equal(rows, hit.rows):
                # Same individuals, fewer slots: keep the prepared rows and buffers.
                for k in ("first", "ri_dev", "p_rows", "actor", "grid", "slots"):
                    setattr(plan, k, getattr(hit, k))
            else:
                if rows.all():
                    plan.first = first = slice(a, b)
                    plan.slots = self.slot_ids[a * m:b * m]
                else:
                    plan.first = first = a + np.flatnonzero(rows)
                    plan.slots = (first[:, None] * m + self.lane_ids).ravel().astype(np.int32)
                    if self.actor is None:
                        plan.ri_dev = torch.from_numpy(first).to(self.dev)
                        plan.p_rows = self.params_t.index_select(0, plan.ri_dev)
                if self.actor is not None:
                    plan.actor = self.actor if b - a == self.P and isinstance(first, slice) \
                        else self.actor.rows(first)
                    plan.grid = plan.actor.inputs(m).reshape(len(plan.slots), *self.obs_shape)
            live = self.book.status[plan.slots] != 0
            if live.all():
                plan.send_ids = plan.slots
            else:
                plan.keep = np.flatnonzero(live)
                plan.send_ids = plan.slots[plan.keep]
        self._cache[(a, b)] = plan
        return plan

    def add_moments(self, plan: Plan, obs: np.ndarray) -> None:
        """Observation statistics of the slots about to act on ``obs`` (in ``send_ids``
        order): those running an episode, not those about to be reset."""
        run = self.book.status[plan.send_ids] == RUN
        self.moments.add(obs if run.all() else obs[run])

    def act(self, a: int, b: int):
        """``(env_ids, actions)`` for the active slots of individuals ``a..b-1``, or None.
        Reads observations from ``obs_buf``."""
        plan = self.plan(a, b)
        if plan.first is None:
            return None
        m = self.m
        if self.moments is not None:
            self.add_moments(plan, self.obs_buf[plan.send_ids])
        first = plan.first
        if plan.actor is not None:  # the policy's fast path (stateless kinds)
            plan.grid[...] = (self.obs_buf[a * m:b * m] if isinstance(first, slice)
                              else self.obs_buf[plan.slots])
            acts = plan.actor()
        else:
            if self.pstate is not None:
                fresh = self.book.new_ep[a * m:b * m]
                if fresh.any():
                    done = np.zeros((self.P, m), dtype=bool)
                    done[a:b] = fresh.reshape(b - a, m)
                    self.pstate = self.pol.reset_state(self.pstate,
                                                       torch.from_numpy(done).to(self.dev))
                    fresh[:] = False
            if isinstance(first, slice):  # every individual in range acts: views, no copies
                p_t, o_t = self.params_t[first], self.obs_grid[first]
                sub = tree_map(lambda x: x[first], self.pstate)
            else:
                p_t = plan.p_rows
                if self.pinned:
                    o_t = torch.index_select(self.obs_grid, 0, torch.from_numpy(first),
                                             out=self.stage[:len(first)])
                else:
                    o_t = torch.from_numpy(self.obs_np_grid[first])
                sub = gather_state(self.pstate, plan.ri_dev)
            if not self.on_cpu:
                o_t = o_t.to(self.dev, non_blocking=True)
            acts, new = self.pol.act(p_t, o_t, sub, self.mean, self.std)
            if self.pstate is not None:
                if isinstance(first, slice):
                    tree_map(lambda full, x: full[first].copy_(x), self.pstate, new)
                else:
                    scatter_state(self.pstate, plan.ri_dev, new)
            acts = acts.numpy() if self.on_cpu else acts.cpu().numpy()
        acts = acts.reshape(-1, *acts.shape[2:])
        if plan.keep is not None:
            acts = acts[plan.keep]
        return plan.send_ids, acts.astype(self.act_dtype, copy=False)

    def replan(self, plan: Plan | None, ids, got, obs) -> Plan | None:
        """The plan after slots went idle, its grid holding the observations ``obs`` of the
        last batch (sent to ``ids``); None when nobody is left. Shrinks ``plan`` in place
        while every individual in it still has an active slot."""
        if not np.array_equal(got, ids):
            raise RuntimeError("EnvPool returned envs in another order than sent")
        live = None if plan is None else self.book.status[plan.slots] != 0
        if live is not None and live.reshape(-1, self.m).any(axis=1).all():
            if plan.keep is None:
                plan.grid[...] = obs
            else:
                plan.grid[plan.keep] = obs
            sent = live if plan.keep is None else live[plan.keep]
            if live.all():
                plan.keep, plan.send_ids = None, plan.slots
            else:
                plan.keep = np.flatnonzero(live)
                plan.send_ids = plan.slots[plan.keep]
            plan.version = self.book.version
            now = obs[sent]
        else:
            plan = self.plan(0, self.P)
            if plan.first is None:
                return None
            pos = np.zeros(self.S, dtype=np.int64)
            pos[ids] = np.arange(len(ids))
            now = obs[pos[plan.send_ids]]
            if plan.keep is None:
                plan.grid[...] = now
            else:
                plan.grid[plan.keep] = now
        if self.moments is not None:
            self.add_moments(plan, now)
        return plan
