"""Evaluate a whole population on one device with torch-native environments.

``TorchEvaluator(env_id, ...)`` follows the :class:`envs.base.Evaluator` contract. Env ids
(see :data:`TORCH_ENVS`):

* ``"CartPole-v1"``: :class:`envs.torch_cartpole.TorchCartPole` (Gymnasium's dynamics);
* ``"Snake-v0"``: :class:`envs.torch_snake.TorchSnake` (``env_kwargs``: ``size``,
  ``start_length``, ``hunger_limit``, ``obs="features"|"board"``).

How one ``evaluate(params, seed)`` runs: ``params (P, D)`` goes to the device once; there are
``N = P * E`` env slots, slot ``n = p * E + e`` playing episode ``e`` of individual ``p``.
The E episode starts come from ``torch.Generator(seed)`` (on the CPU, so they are the same on
every device) and are tiled across the P individuals: common random numbers. Each step is
``policy.act`` on observations viewed as ``(P, E, *obs_shape)``, one batched env step, and
masked bookkeeping: a slot whose episode ended is frozen (its state no longer changes) and
earns nothing, so every slot plays exactly one episode. The host only synchronizes every
``CHECK_EVERY`` steps, to stop once every episode has ended. ``env_steps`` counts the live
steps (the sum of the episode lengths) and ``frames`` every slot-step computed
(``N * steps run``).

Other torch-native envs can be added with :func:`register_torch_env`, e.g. from a module
named by ``env_module``, which is imported before the env id is looked up.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
import torch

from policies.base import Policy

from .base import EvalResult
from .common import PopulationEvaluator
from .torch_cartpole import TorchCartPole
from .torch_snake import TorchSnake

log = logging.getLogger("envs")

TORCH_ENVS: dict[str, type] = {"CartPole-v1": TorchCartPole, "Snake-v0": TorchSnake}
CHECK_EVERY = 16  # steps between host checks for "every episode has ended"
COMPILE_MODES = (False, True, "default", "reduce-overhead", "max-autotune")


def register_torch_env(env_id: str, cls: type) -> None:
    """Make ``cls`` available as ``env_id``. The class takes ``(num_envs, device,
    max_episode_steps, **env_kwargs)`` and provides ``obs_shape``, ``action`` (ActionSpec),
    ``max_episode_steps``, ``initial_states(count, seed)``, ``observe(st)`` and
    ``step_state(st, action) -> (st, reward, terminated, truncated)`` on tuples of tensors
    whose first dimension is the batch (see TorchCartPole)."""
    TORCH_ENVS[str(env_id)] = cls


def _rows(mask: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``mask (B,)`` shaped to broadcast against ``x (B, ...)``."""
    return mask.view(-1, *([1] * (x.dim() - 1)))


class TorchEvaluator(PopulationEvaluator):
    """Population evaluation on ``device`` with a torch-native env (see the module doc).

    ``compile`` (extra, keyword only): ``True``/``"default"``/``"reduce-overhead"``/
    ``"max-autotune"`` wraps one rollout step (policy forward + env step + bookkeeping) in
    ``torch.compile`` with that mode, fusing the env's elementwise ops into a few kernels;
    ``"reduce-overhead"`` also captures the step in a CUDA graph. Off by default: compiling
    takes tens of seconds per population shape (and raises dynamo's recompile limit to 64,
    since each instance and shape is a new specialization of the one step function).
    Compiled float math may round differently from eager, so long CartPole trajectories can
    differ slightly; Snake (integer arithmetic) is unaffected.
    """

    backend = "torch"

    def __init__(
        self,
        env_id: str,
        policy: str | Policy = "mlp",
        policy_options: dict[str, Any] | None = None,
        episodes: int = 1,
        max_episode_steps: int | None = None,
        num_threads: int = 1,
        device: str | torch.device = "cpu",
        obs_norm: bool = False,
        env_kwargs: dict[str, Any] | None = None,
        env_module: str | None = None,
        *,
        compile: bool | str = False,
    ) -> None:
        # Shared argument checks, env_module import and bookkeeping (envs/common.py).
        super().__init__(env_id, policy, policy_options, episodes, max_episode_steps,
                         num_threads, device, obs_norm, env_kwargs, env_module)
        if env_id not in TORCH_ENVS:
            raise ValueError(
                f"no torch-native env {env_id!r}; torch-native ids: {', '.join(sorted(TORCH_ENVS))}"
            )
        if compile not in COMPILE_MODES:
            raise ValueError(f"compile must be one of {COMPILE_MODES}, got {compile!r}")
        self.env = TORCH_ENVS[env_id](
            num_envs=1, device=self.device, max_episode_steps=max_episode_steps,
            **self.env_kwargs,
        )
        self.max_episode_steps = int(self.env.max_episode_steps)
        self._init_policy(tuple(self.env.obs_shape), self.env.action)
        self.compile = compile
        self._step_fn = self._step
        if compile:
            mode = None if compile in (True, "default") else compile
            # every evaluator instance and population size is another specialization of the
            # same code object; past dynamo's default limit of 8 it would silently run eager
            cfg = torch._dynamo.config
            cfg.recompile_limit = max(int(cfg.recompile_limit), 64)
            self._step_fn = torch.compile(self._step, mode=mode, dynamic=False)

    def initial_states(self, seed: int) -> tuple[torch.Tensor, ...]:
        """The E episode starts of ``evaluate(..., seed)`` (state tuple with batch E)."""
        return self.env.initial_states(self.episodes, seed)

    def evaluate(self, params, seed: int) -> EvalResult:
        t0 = time.perf_counter()
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        params = torch.as_tensor(params)
        if params.dim() == 1:
            params = params.unsqueeze(0)
        if params.dim() != 2 or params.shape[1] != self.num_params or params.shape[0] < 1:
            raise ValueError(
                f"params must have shape (P, {self.num_params}) for policy "
                f"{self.policy.kind!r} on {self.env_id}, got {tuple(params.shape)}"
            )
        params = params.to(device=self.device, dtype=torch.float32).contiguous()
        P, E = params.shape[0], self.episodes
        old_threads = torch.get_num_threads()
        if self.device.type == "cpu":
            torch.set_num_threads(self.num_threads)
        try:
            with torch.no_grad():
                out = self._rollout(params, P, E, seed)
        finally:
            if self.device.type == "cpu":
                torch.set_num_threads(old_threads)
        returns, lengths, bad, bad_params, steps_run, moments = out
        fitness = returns.mean(axis=1)
        broken = bad.any(axis=1) | bad_params
        fitness[broken] = -np.inf
        for p in np.flatnonzero(broken):
            log.warning("%s (torch): individual %d has non-finite %s; fitness -inf", self.env_id,
                        int(p), "parameters" if bad_params[p] else "observations or rewards")
        res = EvalResult(
            fitness=fitness,
            returns=returns,
            lengths=lengths,
            env_steps=int(lengths.sum()),
            frames=int(P * E * steps_run),
            broken=broken,
            extra={"device": str(self.device), "steps_run": steps_run},
        )
        if moments is not None:
            res.obs_count, res.obs_mean, res.obs_m2 = moments
            self.obs_stats.merge_moments(*moments)  # after the call: stats stayed frozen
        res.wall_s = time.perf_counter() - t0
        return res

    def _rollout(self, params: torch.Tensor, P: int, E: int, seed: int):
        env, dev = self.env, self.device
        N = P * E
        st = tuple(x.repeat(P, *([1] * (x.dim() - 1))) for x in env.initial_states(E, seed))
        obs = env.observe(st)
        # individuals with non-finite parameters do not play (as in the other evaluators)
        finite_params = torch.isfinite(params).all(dim=1)
        alive = finite_params.repeat_interleave(E)
        ret = torch.zeros(N, dtype=torch.float32, device=dev)
        length = torch.zeros(N, dtype=torch.int32, device=dev)
        bad = torch.zeros(N, dtype=torch.bool, device=dev)
        pstate = self.policy.initial_state(P, E, dev)
        norm = acc = shift = None
        if self.obs_stats is not None:
            # statistics are frozen for the whole call, and not applied before any exist
            if self.obs_stats.count > 0:
                mean = torch.as_tensor(self.obs_stats.mean, dtype=torch.float32, device=dev)
                std = torch.as_tensor(self.obs_stats.std, dtype=torch.float32, device=dev)
                norm = (mean, std)
                shift = mean.to(torch.float64).reshape(-1)
            else:
                shift = torch.nan_to_num(obs.reshape(N, -1).to(torch.float64)).mean(0)
            # sums around a shift (float64) so M2 = sum(d^2) - sum(d)^2 / n does not cancel
            zeros = torch.zeros_like(shift)
            acc = (torch.zeros((), dtype=torch.float64, device=dev), zeros, zeros.clone(), shift)
        steps_run = 0
        for t in range(self.max_episode_steps):
            if self.compile == "reduce-overhead":
                torch.compiler.cudagraph_mark_step_begin()
            st, obs, alive, ret, length, bad, pstate, acc = self._step_fn(
                params, st, obs, alive, ret, length, bad, pstate, norm, acc
            )
            steps_run = t + 1
            # the only host syncs: stop as soon as every episode has ended
            if steps_run % CHECK_EVERY == 0 and not bool(alive.any()):
                break
        P_E = (P, E)
        returns = ret.view(P_E).double().cpu().numpy()
        lengths = length.view(P_E).cpu().numpy().astype(np.int64)
        bad = bad.view(P_E).cpu().numpy()
        bad_params = ~finite_params.cpu().numpy()
        moments = None
        if acc is not None:
            n, s1, s2, shift = (a.cpu().numpy() for a in acc)
            n = float(n)
            if n > 0:
                d = s1 / n
                moments = (n, (shift + d).reshape(self.obs_shape),
                           np.maximum(s2 - s1 * d, 0.0).reshape(self.obs_shape))
            else:
                moments = (0.0, np.zeros(self.obs_shape), np.zeros(self.obs_shape))
        return returns, lengths, bad, bad_params, steps_run, moments

    def _step(self, params, st, obs, alive, ret, length, bad, pstate, norm, acc):
        """One step of all N slots; pure function of tensors (torch.compile-able)."""
        P = params.shape[0]
        N = obs.shape[0]
        E = N // P
        finite = torch.isfinite(obs.reshape(N, -1)).all(dim=1)
        if acc is not None:
            # moments of the observations the policy acts on in live episodes
            m = (alive & finite).to(torch.float64)
            x = torch.nan_to_num(obs.reshape(N, -1).to(torch.float64)) - acc[3]
            xm = x * m[:, None]
            acc = (acc[0] + m.sum(), acc[1] + xm.sum(0), acc[2] + (xm * x).sum(0), acc[3])
        mean, std = norm if norm is not None else (None, None)
        action, pstate = self.policy.act(
            params, obs.view(P, E, *self.obs_shape), pstate, mean, std
        )
        action = action.reshape(N, *action.shape[2:])
        new_st, reward, terminated, truncated = self.env.step_state(st, action)
        # slots whose episode already ended keep their state: they are only along for the ride
        st = tuple(torch.where(_rows(alive, n), n, o) for n, o in zip(new_st, st, strict=True))
        obs = self.env.observe(st)
        bad = bad | (alive & ~(finite & torch.isfinite(reward)))
        ret = ret + torch.where(alive, reward, 0.0)
        length = length + alive.to(length.dtype)
        alive = alive & ~(terminated | truncated)
        return st, obs, alive, ret, length, bad, pstate, acc
