"""Evaluate a whole population on one device with torch-native environments.

``TorchEvaluator(env_id, ...)`` follows the :class:`envs.base.Evaluator` contract. Env ids
(see :data:`envs.torch_registry.TORCH_ENVS`):

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

import time
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from .base import EvalResult
from .common import ObsMoments, PopulationEvaluator, check_seed, log
from .torch_registry import TORCH_ENVS, register_torch_env

__all__ = ["TORCH_ENVS", "TorchEvaluator", "register_torch_env"]  # the registry re-exported

CHECK_EVERY = 16  # steps between host checks for "every episode has ended"
COMPILE_MODES = (False, True, "default", "reduce-overhead", "max-autotune")


def _clone(x):
    """``x`` with every tensor in its nested tuples copied (None stays None)."""
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, tuple):
        return tuple(_clone(v) for v in x)
    return x


def _rows(mask: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``mask (B,)`` shaped to broadcast against ``x (B, ...)``."""
    return mask.view(-1, *([1] * (x.dim() - 1)))


class TorchEvaluator(PopulationEvaluator):
    """Population evaluation on ``device`` with a torch-native env (see the module doc).

    Takes the evaluator keywords of :class:`envs.base.Evaluator` and ``compile`` (keyword
    only): ``True``/``"default"``/``"reduce-overhead"``/``"max-autotune"`` wraps one
    rollout step (policy forward + env step + bookkeeping) in ``torch.compile`` with that
    mode, fusing the env's elementwise ops into a few kernels; ``"reduce-overhead"`` also
    captures the step in a CUDA graph. Off by default: compiling takes tens of seconds per
    population shape (and raises dynamo's recompile limit to 64, since each instance and
    shape is a new specialization of the one step function). Compiled float math may round
    differently from eager, so long CartPole trajectories can differ slightly; Snake
    (integer arithmetic) is unaffected.
    """

    backend = "torch"

    def __init__(self, env_id: str, *args: Any, compile: bool | str = False,
                 **kwargs: Any) -> None:
        super().__init__(env_id, *args, **kwargs)
        if env_id not in TORCH_ENVS:
            raise ValueError(
                f"no torch-native env {env_id!r}; torch-native ids: {', '.join(sorted(TORCH_ENVS))}"
            )
        if compile not in COMPILE_MODES:
            raise ValueError(f"compile must be one of {COMPILE_MODES}, got {compile!r}")
        self.env = TORCH_ENVS[env_id](
            num_envs=1, device=self.device, max_episode_steps=self.max_episode_steps,
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
        check_seed(seed)
        params = self._on_device(self._population(params))
        with self._cpu_threads(), torch.no_grad():
            returns, lengths, bad, finite, steps_run, moments = self._rollout(params, seed)
        self._warn_bad_params(finite)
        for p in np.flatnonzero(bad.any(axis=1)):
            log.warning("%s (torch): individual %d has non-finite observations or rewards; "
                        "fitness -inf", self.env_id, int(p))
        P, E = returns.shape
        extra = {"device": str(self.device), "steps_run": steps_run}
        return self._result(returns, lengths, bad.any(axis=1) | ~finite, int(lengths.sum()),
                            P * E * steps_run, t0, moments, extra)

    @contextmanager
    def _cpu_threads(self):
        """``num_threads`` torch threads for the call on CPU, the caller's setting after."""
        if self.device.type != "cpu":
            yield
            return
        old_threads = torch.get_num_threads()
        torch.set_num_threads(self.num_threads)
        try:
            yield
        finally:
            torch.set_num_threads(old_threads)

    def _rollout(self, params: torch.Tensor, seed: int):
        """All ``N = P * E`` slots to the end of their episode. Returns host arrays:
        returns, lengths and non-finite steps ``(P, E)``, finite parameter rows ``(P,)``,
        the steps run and the observation moments (None without ``obs_norm``)."""
        env, dev = self.env, self.device
        P, E = params.shape[0], self.episodes
        N = P * E
        st = tuple(x.repeat(P, *([1] * (x.dim() - 1))) for x in env.initial_states(E, seed))
        obs = env.observe(st)
        # individuals with non-finite parameters do not play (as in the other evaluators;
        # checked here after the float32 cast, on the device, so the host waits for nothing)
        finite_params = torch.isfinite(params).all(dim=1)
        alive = finite_params.repeat_interleave(E)
        ret = torch.zeros(N, dtype=torch.float32, device=dev)
        length = torch.zeros(N, dtype=torch.int32, device=dev)
        bad = torch.zeros(N, dtype=torch.bool, device=dev)
        pstate = self.policy.initial_state(P, E, dev)
        norm, acc = self._frozen_norm(obs)
        steps_run = 0
        for t in range(self.max_episode_steps):
            graphs = self.compile == "reduce-overhead"
            if graphs:
                torch.compiler.cudagraph_mark_step_begin()
            out = self._step_fn(params, st, obs, alive, ret, length, bad, pstate, norm, acc)
            if graphs:
                # CUDA graphs reuse their output memory on the next replay; this step's
                # outputs are the next step's inputs, so they leave the graph's pool (the
                # H200 run without this: "accessing tensor output of CUDAGraphs that has
                # been overwritten by a subsequent run", docs/results/gpu.md)
                out = _clone(out)
            st, obs, alive, ret, length, bad, pstate, acc = out
            steps_run = t + 1
            # the only host syncs: stop as soon as every episode has ended
            if steps_run % CHECK_EVERY == 0 and not bool(alive.any()):
                break
        P_E = (P, E)
        return (ret.view(P_E).double().cpu().numpy(),
                length.view(P_E).cpu().numpy().astype(np.int64),
                bad.view(P_E).cpu().numpy(), finite_params.cpu().numpy(), steps_run,
                None if acc is None else ObsMoments.from_sums(*(a.cpu().numpy() for a in acc)))

    def _frozen_norm(self, obs: torch.Tensor):
        """The call's normalization ``(mean, std)`` (None before any statistics exist) and
        the device accumulator ``(n, sum d, sum d^2, shift)`` of the observations' moments
        (None without ``obs_norm``), with ``d = obs - shift`` in float64 so that ``M2 =
        sum(d^2) - sum(d)^2 / n`` does not cancel."""
        if self.obs_stats is None:
            return None, None
        mean, std = self._norm_tensors()
        if mean is not None:
            shift = mean.to(torch.float64).reshape(-1)
        else:  # no statistics yet: the first observations' mean is close enough
            shift = torch.nan_to_num(obs.reshape(len(obs), -1).to(torch.float64)).mean(0)
        zeros = torch.zeros_like(shift)
        n = torch.zeros((), dtype=torch.float64, device=self.device)
        return (None if mean is None else (mean, std)), (n, zeros, zeros.clone(), shift)
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
