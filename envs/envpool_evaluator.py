"""EnvPool backend: C++ environments stepped by ``num_threads`` threads, no wasted steps.

Layout. The pool has ``S = P * m`` env slots: slot ``p * m + i`` belongs to individual ``p``
and *lane* ``i`` (``m = min(E, max_envs // P)``, at least 1); lane ``i`` runs episodes ``i,
i + m, i + 2m, ...`` of its individual, so with ``P * E <= max_envs`` every slot runs one
episode per call. Built on the first ``evaluate`` (its size depends on P), reused for the same P.

No wasted steps. In EnvPool's synchronous mode (``batch_size == num_envs``) ``send(actions,
env_ids)`` may name any subset of envs and the next ``recv`` returns exactly those (async
``recv`` waits for a full batch, which at the end of an evaluation would force stepping
finished envs). Only slots with a live episode, or one that must reset to start its next,
are sent an action: ``frames == env_steps``. Each round one batched ``policy.act`` over the
(individual, lane) grid computes all actions (parameter rows: a view of ``params``, a
gather cached until the next individual finishes). Env threads and this thread take turns,
so the evaluator keeps at most ``num_threads`` cores busy. EnvPool's autoreset rounds (the
``send`` after an episode ends resets the env, reward 0, ``elapsed_step`` 0) are no steps.

Fast path. An evaluation needs as many rounds as its longest episode, so the fixed cost of a
round on this thread bounds throughput. With ``Policy.actor`` (the MLP on the CPU, in NumPy)
a round is: observations copied into the actor's input grid, one ``actor()``, one ``send``,
one ``recv`` and the returns accounted in send order (the order sync mode returns them).
``fast_actor=False`` calls ``policy.act`` every round (bitwise torch results; the fast path
agrees to float rounding). ``overlap=True`` (a process with one more core to spare) splits
the population in two halves: this thread computes one half's actions while the env threads
step the other; when fewer than ``merge_below`` slots are live, the halves merge.

Common random numbers. EnvPool 1.2.5 seeds each env once, when the pool is built, and draws
each new episode's start from that env's own generator. All slots of a lane are built with
one seed and kept in lockstep (each resets exactly once per episode index per call; one
dropped for NaN gets its missing resets at the end), so every individual's ``k``-th episode
in lane ``i`` starts from the same state. Exact where the env draws only at reset (checked:
CartPole, LunarLander, Atari with ``repeat_action_probability=0``); envs that also draw
during steps (sticky actions) get exact CRN only in a pool's first call, unless
``reseed_each_call=True`` rebuilds the pool every call. The call's ``seed`` picks the lane
seeds only when the pool is (re)built, so unlike the Gymnasium backend two calls with the
same seed see different episodes (the generators advance).

This module owns the pool; one call's work: :mod:`envs.envpool_rollout` (rounds, schedulers),
``envpool_slots`` (slots), ``envpool_actions`` (plans, buffers, policy calls), ``envpool_io``.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
import torch

from .common import PopulationEvaluator, episode_seeds, log
from .envpool_io import PoolIO
from .envpool_rollout import Rollout
from .spaces import envpool_spaces, has_envpool, spaces_to_policy_io, unknown_env_error

DEFAULT_MAX_ENVS = 256  # pool size cap: P * E slots up to this many (at least P)
DEFAULT_MERGE_BELOW = 16  # overlap mode: merge the halves when fewer slots are live
_RESERVED = ("num_envs", "batch_size", "num_threads", "seed", "env_seed", "max_episode_steps")


_warned_threads = False


def _warn_thread_contention(device, env_threads: int, torch_threads: int | None) -> None:
    """Torch's intra-op threads next to EnvPool's on a machine without spare cores contend
    badly (docs/results/eval-throughput.md); say so once per process."""
    global _warned_threads
    cores = len(os.sched_getaffinity(0))
    if (_warned_threads or device.type != "cpu" or torch_threads is not None
            or torch.get_num_threads() == 1 or torch.get_num_threads() + env_threads <= cores):
        return
    _warned_threads = True
    log.warning("torch uses %d threads beside %d EnvPool threads on %d cores: they contend; "
                "pass torch_threads=1 (or call torch.set_num_threads(1))",
                torch.get_num_threads(), env_threads, cores)


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
        from .spaces import import_envpool

        self._envpool = import_envpool()
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
        spec = self._envpool.make_spec(env_id, **self._make_kwargs)
        obs_space, act_space = envpool_spaces(spec)
        obs_shape, action = spaces_to_policy_io(obs_space, act_space, env_id)
        self._obs_dtype = np.dtype(obs_space.dtype)
        self._act_dtype = np.dtype(np.int32 if action.discrete else act_space.dtype)
        self.episode_limit = int(spec.config.max_episode_steps)
        self._init_policy(obs_shape, action)
        self._pool = None
        self._io: PoolIO | None = None
        self._layout: tuple[int, int] | None = None
        self._dirty = True
        self.pools_built = 0

    @property
    def pinned(self) -> bool:
        """Whether observations are staged in pinned host memory (CUDA inference: copies to
        the device by DMA, without blocking; see envs/envpool_actions.py)."""
        return self.device.type == "cuda"

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
        self._io = PoolIO(self._pool, self.low_level_io)
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
        run = Rollout(self, params_t, finite)
        # Huge (finite) parameters may overflow inside the NumPy fast path: as in torch, the
        # outputs become inf/NaN quietly instead of warning every step.
        with np.errstate(all="ignore"):
            burned = run.run(self.overlap, self.merge_below)
        self._dirty = False
        book = run.book
        extra = {"num_envs": book.S, "lanes": book.m, "rounds": book.rounds,
                 "resets": book.n_resets, "burned_resets": burned,
                 "pools_built": self.pools_built, "low_level_io": self._io.fast,
                 "fast_actor": run.actions.actor is not None,
                 "pinned_obs": run.actions.buffers_pinned()}
        return self._result(book.returns, book.lengths, book.broken, book.steps, book.steps,
                            t0, run.actions.moments, extra)
