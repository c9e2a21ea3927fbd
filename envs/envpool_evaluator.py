"""EnvPool backend: C++ environments stepped by ``num_threads`` threads, no wasted steps.

Layout. The pool has ``S = P * m`` env slots: slot ``p * m + i`` belongs to individual
``p`` and *lane* ``i`` (``m = min(E, max_envs // P)``, at least 1). Lane ``i`` runs episode
indices ``i, i + m, i + 2m, ...`` of its individual one after another, so with
``P * E <= max_envs`` every slot runs exactly one episode per call. The pool is built on
the first ``evaluate`` (its size depends on P) and reused by every later call with the same
population size; ``num_threads`` env threads step it.

No wasted steps. The pool runs in EnvPool's synchronous mode (``batch_size == num_envs``),
where ``send(actions, env_ids)`` may name any subset of envs and the next ``recv`` returns
exactly those (EnvPool's async mode cannot do this: ``recv`` waits for a full batch, which
at the end of an evaluation would force stepping finished envs). Only slots with a live
episode, or one that must reset to start its next episode, are ever sent an action, so a
finished env is never stepped: ``frames == env_steps``. Each round one batched
``policy.act`` over the (individual, lane) grid ``obs (P_live, m, *obs_shape)`` computes all
actions; the parameter rows are a view of ``params`` (a gather, cached until the next
individual finishes, once some have). Env threads and this thread take turns, so the
evaluator never keeps more than ``num_threads`` cores busy.

Fast path. An evaluation needs as many rounds as its longest episode, and most rounds of a
population with varied episode lengths step few envs, so the fixed cost of a round on this
thread bounds throughput. Where the policy has one (``Policy.actor``: the MLP on the CPU,
in NumPy), its parameters are prepared once per call and a round is: observations copied
into the actor's input grid, one ``actor()`` (a NumPy call per layer and per tanh), one
``send``, one ``recv`` and the accounting of returns in send order (EnvPool's sync mode
returns envs in the order sent). ``fast_actor=False`` uses ``policy.act`` every round
(bitwise torch results; the fast path agrees to float rounding). With ``overlap=True`` (for a
process that has one more core to spare) the population is split in two halves that
alternate: this thread computes one half's actions while the env threads step the other;
near the end, when fewer than ``merge_below`` slots are live, the halves merge (fewer
rounds).

EnvPool's autoreset: after an episode ends, the next ``send`` to that env ignores the
action, resets it and returns the first observation of the new episode (reward 0,
``elapsed_step`` 0). Those reset rounds are not counted as steps.

Common random numbers. EnvPool 1.2.5 seeds each env once, when the pool is built
(``reset(seed=...)`` is ignored), and draws each new episode's start from that env's own
generator. So all slots of one lane are built with the same seed: every individual's
``k``-th episode in lane ``i`` then starts from the same state, as long as each slot's
generator has been advanced identically. The scheduler keeps the slots of a lane in
lockstep: every slot resets exactly once per episode index per call (an individual dropped
for NaN gets its missing resets at the end of the call). Exactness therefore holds when the
env draws random numbers only at reset -- checked for CartPole, LunarLander (terrain and
initial push) and Atari with EnvPool's default ``repeat_action_probability=0`` (no-op
starts). Envs that also draw during steps (e.g. sticky actions) diverge after the first
episode of a slot; CRN is then exact only in the first call after the pool is built and
approximate afterwards -- pass ``reseed_each_call=True`` to rebuild the pool every call
(exact CRN everywhere, at the cost of building envs). Episodes change from call to call
because the generators advance; the call's ``seed`` picks the lane seeds only when the pool
is (re)built, so unlike the Gymnasium backend two calls with the same seed see different
episodes unless ``reseed_each_call=True``.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import numpy as np
import torch

from .common import (
    PopulationEvaluator,
    episode_seeds,
    gather_state,
    log,
    scatter_state,
    tree_map,
)
from .spaces import envpool_spaces, float_obs, has_envpool, spaces_to_policy_io, unknown_env_error

DEFAULT_MAX_ENVS = 256  # pool size cap: P * E slots up to this many (at least P)
DEFAULT_MERGE_BELOW = 16  # overlap mode: merge the halves when fewer slots are live
_RESERVED = ("num_envs", "batch_size", "num_threads", "seed", "env_seed", "max_episode_steps")
RUN, RESET = 1, 2  # slot status; 0 = idle (no more episodes this call)
_sum = np.add.reduce


_warned_threads = False


def _warn_thread_contention(device, env_threads: int, torch_threads: int | None) -> None:
    """Torch's intra-op threads next to EnvPool's on a machine without spare cores contend
    badly (inference 10x slower was measured on 2 cores); say so once per process."""
    global _warned_threads
    cores = len(os.sched_getaffinity(0))
    if (_warned_threads or device.type != "cpu" or torch_threads is not None
            or torch.get_num_threads() == 1 or torch.get_num_threads() + env_threads <= cores):
        return
    _warned_threads = True
    log.warning("torch uses %d threads beside %d EnvPool threads on %d cores: they contend; "
                "pass torch_threads=1 (or call torch.set_num_threads(1))",
                torch.get_num_threads(), env_threads, cores)


class _PoolIO:
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


class EnvPoolEvaluator(PopulationEvaluator):
    backend = "envpool"

    def __init__(self, env_id: str, *args: Any, max_envs: int = DEFAULT_MAX_ENVS,
                 reseed_each_call: bool = False, overlap: bool = False,
                 merge_below: int = DEFAULT_MERGE_BELOW, low_level_io: bool = True,
                 fast_actor: bool = True, **kwargs: Any) -> None:
        super().__init__(env_id, *args, **kwargs)
        if not has_envpool(env_id):
            raise unknown_env_error(env_id)
        bad = sorted(set(self.env_kwargs) & set(_RESERVED))
        if bad:
            raise ValueError(f"env_kwargs may not set {bad}: the evaluator sets them")
        if int(max_envs) < 1:
            raise ValueError(f"max_envs must be >= 1, got {max_envs}")
        import envpool

        self._envpool = envpool
        self.max_envs = int(max_envs)
        self.reseed_each_call = bool(reseed_each_call)
        self.overlap = bool(overlap)
        self.merge_below = int(merge_below)
        self.low_level_io = bool(low_level_io)
        self.fast_actor = bool(fast_actor)
        _warn_thread_contention(self.device, self.num_threads, kwargs.get("torch_threads"))
        self._make_kwargs = dict(self.env_kwargs)
        if self.max_episode_steps is not None:
            self._make_kwargs["max_episode_steps"] = self.max_episode_steps
        spec = envpool.make_spec(env_id, **self._make_kwargs)
        obs_space, act_space = envpool_spaces(spec)
        obs_shape, action = spaces_to_policy_io(obs_space, act_space, env_id)
        self._obs_dtype = np.dtype(obs_space.dtype)
        self._act_dtype = np.dtype(np.int32 if action.discrete else act_space.dtype)
        self.episode_limit = int(spec.config.max_episode_steps)
        self._init_policy(obs_shape, action)
        self._pool = None
        self._io: _PoolIO | None = None
        self._layout: tuple[int, int] | None = None
        self._dirty = True
        self.pools_built = 0

    # -- pool ---------------------------------------------------------------------------

    def lanes(self, P: int) -> int:
        """Slots per individual for a population of P."""
        return max(1, min(self.episodes, self.max_envs // P))

    def _ensure_pool(self, P: int, seed: int) -> None:
        m = self.lanes(P)
        if (self._pool is not None and self._layout == (P, m) and not self._dirty
                and not self.reseed_each_call):
            return
        self._close_pool()
        lane_seeds = episode_seeds(seed, m)
        self._pool = self._envpool.make(
            self.env_id, env_type="gymnasium", num_envs=P * m, batch_size=P * m,
            num_threads=self.num_threads, env_seed=np.tile(lane_seeds, P).tolist(),
            **self._make_kwargs,
        )
        self._io = _PoolIO(self._pool, self.low_level_io)
        self._layout = (P, m)
        self.pools_built += 1

    def _close_pool(self) -> None:
        if self._pool is not None:
            self._pool.close()
        self._pool, self._io, self._layout = None, None, None

    def close(self) -> None:
        self._close_pool()

    def restart_episodes(self) -> None:
        # the next call rebuilds the pool, seeding its lanes from that call's seed (a pool
        # build is milliseconds for Box2D / classic control, seconds for Atari)
        self._dirty = True

    # -- evaluation ---------------------------------------------------------------------

    @torch.inference_mode()
    def evaluate(self, params, seed: int):
        t0 = time.perf_counter()
        episode_seeds(seed, 1)  # validates seed before anything is built
        params_t, finite = self._params(params)
        P = params_t.shape[0]
        self._ensure_pool(P, seed)
        self._dirty = True  # stays set if this call does not finish: rebuild next time
        self._warn_bad_params(finite)
        run = _Rollout(self, params_t, finite)
        # Huge (finite) parameters may overflow inside the NumPy fast path: as in torch, the
        # outputs become inf/NaN quietly instead of warning every step.
        with np.errstate(all="ignore"):
            run.start()
            if self.overlap and P > 1:
                run.loop_halves(self.merge_below)
            elif run.actor is not None:
                run.loop_fast()
            else:
                run.loop(run.act(0, P))
        burned = run.restore_lockstep()
        self._dirty = False
        extra = {"num_envs": run.S, "lanes": run.m, "rounds": run.rounds,
                 "resets": run.n_resets, "burned_resets": burned,
                 "pools_built": self.pools_built, "low_level_io": self._io.fast,
                 "fast_actor": run.actor is not None, "pinned_obs": run.pinned}
        return self._result(run.returns, run.lengths, run.broken, run.steps, run.steps, t0,
                            run.moments, extra)


class _Plan:
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


class _Rollout:
    """The state of one ``evaluate`` call: slot bookkeeping, action computation, rounds."""

    def __init__(self, ev: EnvPoolEvaluator, params_t: torch.Tensor, finite: np.ndarray):
        self.ev, self.io, self.params_t = ev, ev._io, params_t
        P, m = ev._layout
        E = ev.episodes
        self.P, self.m, self.S = P, m, P * m
        self.pol, self.dev, self.act_dtype = ev.policy, ev.device, ev._act_dtype
        self.mean, self.std = ev._norm_tensors()
        self.moments = ev._moments()
        self.check_obs = float_obs(ev._obs_dtype)
        self.ind = np.repeat(np.arange(P), m)
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
        self.version = 0  # bumped whenever a slot goes idle: invalidates the plans
        self._cache: dict[tuple[int, int], _Plan] = {}
        self.ret = np.zeros(self.S)
        self.length = np.zeros(self.S, dtype=np.int64)
        self.new_ep = np.zeros(self.S, dtype=bool)
        self.obs_shape = ev.obs_shape
        self.on_cpu = self.dev.type == "cpu"
        # For CUDA inference the observation buffer lives in pinned (page-locked) host memory:
        # only from there does ``.to(cuda, non_blocking=True)`` copy by DMA without a staging
        # copy, and without blocking this thread. Reusing it next round is safe because each
        # round ends with the actions' device->host copy, which waits for the stream (and so
        # for the observation copy queued before the forward pass).
        self.pinned = self.dev.type == "cuda"
        if self.pinned:
            t_dtype = torch.from_numpy(np.empty(0, dtype=ev._obs_dtype)).dtype
            host = torch.zeros((self.S, *ev.obs_shape), dtype=t_dtype, pin_memory=True)
            self.obs_buf = host.numpy()
            # gathered rows (some individuals done) are staged here, pinned too
            self.stage = torch.empty((P, m, *ev.obs_shape), dtype=t_dtype, pin_memory=True)
        else:
            self.obs_buf = np.zeros((self.S, *ev.obs_shape), dtype=ev._obs_dtype)
        self.obs_np_grid = self.obs_buf.reshape(P, m, *ev.obs_shape)
        self.obs_grid = torch.from_numpy(self.obs_buf).view(P, m, *ev.obs_shape)
        self.pstate = self.pol.initial_state(P, m, self.dev)
        # The policy's fast path for this call's parameters (None: ``act`` every round).
        self.actor = (self.pol.actor(params_t, self.mean, self.std)
                      if self.pstate is None and ev.fast_actor else None)
        self.slot_ids = np.arange(self.S, dtype=np.int32)
        self.lane_ids = np.arange(m)
        self.steps = self.rounds = self.n_resets = 0

    # -- bookkeeping ----------------------------------------------------------------------

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
                self.ev._warn_broken(p, int(self.slot_ep[s]),
                                     "observation at reset" if rew is None else
                                     "reward/observation")
        return bad

    def start(self) -> None:
        """Every slot starts with one explicit reset (its first episode = its lane)."""
        ids, obs = self.io.reset(self.slot_ids)
        self.obs_buf[ids] = obs
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

    # -- actions ------------------------------------------------------------------------

    def _plan(self, a: int, b: int) -> _Plan:
        """The plan of individuals ``a..b-1`` for the current ``version`` (cached)."""
        hit = self._cache.get((a, b))
        if hit is not None and hit.version == self.version:
            return hit
        m = self.m
        active = self.status[a * m:b * m] != 0
        rows = active.reshape(b - a, m).any(axis=1)
        plan = _Plan(self.version, rows)
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
            live = self.status[plan.slots] != 0
            if live.all():
                plan.send_ids = plan.slots
            else:
                plan.keep = np.flatnonzero(live)
                plan.send_ids = plan.slots[plan.keep]
        self._cache[(a, b)] = plan
        return plan

    def _add_moments(self, plan: _Plan, obs: np.ndarray) -> None:
        """Observation statistics of the slots about to act on ``obs`` (in ``send_ids``
        order): those running an episode, not those about to be reset."""
        run = self.status[plan.send_ids] == RUN
        self.moments.add(obs if run.all() else obs[run])

    def act(self, a: int, b: int):
        """``(env_ids, actions)`` for the active slots of individuals ``a..b-1``, or None.
        Reads observations from ``obs_buf``."""
        plan = self._plan(a, b)
        if plan.first is None:
            return None
        m = self.m
        if self.moments is not None:
            self._add_moments(plan, self.obs_buf[plan.send_ids])
        first = plan.first
        if plan.actor is not None:  # the policy's fast path (stateless kinds)
            plan.grid[...] = (self.obs_buf[a * m:b * m] if isinstance(first, slice)
                              else self.obs_buf[plan.slots])
            acts = plan.actor()
        else:
            if self.pstate is not None:
                fresh = self.new_ep[a * m:b * m]
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

    # -- schedulers ---------------------------------------------------------------------

    def loop(self, job) -> None:
        """One batch for everybody per round."""
        io, P = self.io, self.P
        while job is not None:
            io.send(*job)
            ids, obs, rew, done = io.recv()
            self.obs_buf[ids] = obs
            self.process(ids, obs, rew, done)
            job = self.act(0, P)

    def loop_fast(self) -> None:
        """``loop`` for a policy with a fast path, lean: a round is one send, one recv, the
        accounting, the observations copied into the actor's input grid and one ``actor()``.
        EnvPool's sync mode returns envs in the order they were sent, so a batch lines up
        with the plan that sent it: no index lookups. While every slot sent steps a live
        episode (no resets pending), returns accumulate in send order and are written back,
        with the lengths, only when an episode ends or a NaN shows up."""
        send, recv, finite, moments = self.io.send, self.io.recv, self.finite, self.moments
        flat = (-1, *self.ev.action_spec.shape) if not self.ev.action_spec.discrete else (-1,)
        act_dtype = self.act_dtype
        ids = got = self.slot_ids
        obs = self.obs_buf  # start(): every slot's first observation
        plan = ret = actor = grid = keep = None
        t = rounds = steps = 0
        try:
            while True:
                if plan is not None and plan.version == self.version:
                    if keep is None:
                        grid[...] = obs
                    else:
                        grid[keep] = obs
                    if moments is not None:
                        self._add_moments(plan, obs)
                else:
                    plan = self._replan_fast(plan, ids, got, obs)
                    if plan is None:
                        return
                    actor, grid, keep = plan.actor, plan.grid, plan.keep
                acts = actor().reshape(flat)
                if keep is not None:
                    acts = acts[keep]
                ids = plan.send_ids
                send(ids, acts.astype(act_dtype, copy=False))
                if ret is None and not self.n_resetting:
                    ret, t = self.ret[ids], 0
                got, obs, rew, done = recv()
                if ret is None:
                    self.process(ids, obs, rew, done)
                    continue
                ret += rew
                t += 1
                rounds += 1
                steps += len(ids)
                if not finite(obs, rew) or done.any():
                    self.ret[ids] = ret
                    self.length[ids] += t
                    ret = None
                    self.ends(ids, obs, rew, done)
        finally:
            self.rounds += rounds
            self.steps += steps

    def _replan_fast(self, plan: _Plan | None, ids, got, obs) -> _Plan | None:
        """The plan after slots went idle, its grid holding the observations ``obs`` of the
        last batch (sent to ``ids``); None when nobody is left. Shrinks ``plan`` in place
        while every individual in it still has an active slot."""
        if not np.array_equal(got, ids):
            raise RuntimeError("EnvPool returned envs in another order than sent")
        live = None if plan is None else self.status[plan.slots] != 0
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
            plan.version = self.version
            now = obs[sent]
        else:
            plan = self._plan(0, self.P)
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
            self._add_moments(plan, now)
        return plan

    def loop_halves(self, merge_below: int) -> None:
        """Two halves alternate so inference overlaps env stepping; merge near the end."""
        io, h0 = self.io, (self.P + 1) // 2
        halves = [(0, h0), (h0, self.P)]
        pending = [self.act(*halves[0]), self.act(*halves[1])]
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
            merge = np.count_nonzero(self.status) < merge_below
            if not merge and pending[h] is not None:  # keep the env threads busy first
                io.send(*pending[h])
                pending[h], inflight = None, h
            self.obs_buf[batch[0]] = batch[1]
            self.process(*batch)
            job = self.act(*halves[g])
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
        deficit = self.n_jobs - self.resets
        for k in range(int(deficit.max(initial=0))):
            self.io.reset(np.flatnonzero(deficit > k).astype(np.int32))
        return int(deficit.sum())
