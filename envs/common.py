"""What every backend's evaluator shares: arguments, the policy, parameter and seed checks,
episode seeds, observation statistics and the EvalResult they build."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
import torch

import policies
from policies import ActionSpec, Policy, RunningMeanStd

from .base import EvalResult, Evaluator, check_seed
from .spaces import import_env_module, is_image

log = logging.getLogger("envs")


def episode_seeds(seed: int, episodes: int) -> np.ndarray:
    """``episodes`` int32-range seeds drawn from ``seed`` (one per episode index; every
    individual meets the same ones: common random numbers)."""
    check_seed(seed)
    state = np.random.SeedSequence(int(seed)).generate_state(int(episodes), dtype=np.uint32)
    return (state & 0x7FFFFFFF).astype(np.int64)  # EnvPool seeds are int32


def tree_map(fn, *trees):
    """Apply ``fn`` to matching tensors of nested dict/list/tuple policy states."""
    first = trees[0]
    if first is None:
        return None
    if isinstance(first, torch.Tensor):
        return fn(*trees)
    if isinstance(first, dict):
        return {k: tree_map(fn, *(t[k] for t in trees)) for k in first}
    if isinstance(first, (list, tuple)):
        return type(first)(tree_map(fn, *parts) for parts in zip(*trees, strict=True))
    raise TypeError(f"unsupported policy state element {type(first).__name__}")


def gather_state(state, idx: torch.Tensor):
    """Rows ``idx`` (first dimension) of every tensor in a policy state."""
    return tree_map(lambda x: x.index_select(0, idx), state)


def scatter_state(state, idx: torch.Tensor, rows) -> None:
    """Write ``rows`` back into rows ``idx`` of ``state`` in place."""
    tree_map(lambda full, new: full.index_copy_(0, idx, new), state, rows)


class ObsMoments:
    """Count, mean and M2 of the observations one evaluation fed to the policy.

    Sums are taken around a fixed shift (the frozen running mean, or the first batch's mean)
    so ``M2 = sum(d^2) - sum(d)^2 / n`` does not cancel catastrophically."""

    def __init__(self, dim: int, shift: np.ndarray | None) -> None:
        self.dim = dim
        self.shift = None if shift is None else np.asarray(shift, np.float64).reshape(dim)
        self.n = 0
        self.s1 = np.zeros(dim)
        self.s2 = np.zeros(dim)

    @classmethod
    def from_sums(cls, n: float, s1: np.ndarray, s2: np.ndarray, shift: np.ndarray
                  ) -> ObsMoments:
        """Moments accumulated elsewhere (e.g. on a device) around ``shift``."""
        out = cls(len(shift), shift)
        out.n, out.s1, out.s2 = float(n), np.asarray(s1, np.float64), np.asarray(s2, np.float64)
        return out

    def add(self, x: np.ndarray) -> None:
        """Rows ``x (n, *obs_shape)``, all finite (callers drop broken rows)."""
        if len(x) == 0:
            return
        d = np.asarray(x, dtype=np.float64).reshape(len(x), self.dim)
        if self.shift is None:
            self.shift = d.mean(axis=0)
        d = d - self.shift
        self.n += len(d)
        self.s1 += d.sum(axis=0)
        self.s2 += np.einsum("ij,ij->j", d, d)

    def moments(self) -> tuple[float, np.ndarray, np.ndarray]:
        if self.n == 0:
            return 0.0, np.zeros(self.dim), np.zeros(self.dim)
        mean_d = self.s1 / self.n
        m2 = np.maximum(self.s2 - self.s1 * mean_d, 0.0)
        return float(self.n), self.shift + mean_d, m2


class PopulationEvaluator(Evaluator):
    """Common constructor and helpers; subclasses own the environments and the scheduler.

    Keyword arguments are the project's evaluator signature (docs/DEVELOPING.md) plus
    ``torch_threads``: when given, ``torch.set_num_threads(torch_threads)`` is called (a
    process-wide setting, so it is never changed unless asked)."""

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
        torch_threads: int | None = None,
    ) -> None:
        if not isinstance(env_id, str) or not env_id:
            raise ValueError(f"env_id must be a non-empty string, got {env_id!r}")
        if int(episodes) < 1:
            raise ValueError(f"episodes must be >= 1, got {episodes}")
        if max_episode_steps is not None and int(max_episode_steps) < 1:
            raise ValueError(f"max_episode_steps must be >= 1 or None, got {max_episode_steps}")
        if int(num_threads) < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads}")
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device {device!r} requested but CUDA is not available")
        if torch_threads is not None:
            torch.set_num_threads(int(torch_threads))
        import_env_module(env_module)
        self.env_id = env_id
        self.episodes = int(episodes)
        self.max_episode_steps = None if max_episode_steps is None else int(max_episode_steps)
        self.num_threads = int(num_threads)
        self.env_kwargs = dict(env_kwargs or {})
        self.env_module = env_module
        self._policy_arg = policy
        self.policy_options = dict(policy_options or {})
        self.obs_norm = bool(obs_norm)
        self.obs_stats: RunningMeanStd | None = None
        self.policy: Policy

    # -- set-up -------------------------------------------------------------------------

    def _init_policy(self, obs_shape: tuple[int, ...], action: ActionSpec) -> None:
        self.obs_shape = tuple(int(s) for s in obs_shape)
        self.action_spec = action
        if isinstance(self._policy_arg, Policy):
            pol = self._policy_arg
            if pol.obs_shape != self.obs_shape or pol.action != action:
                raise ValueError(
                    f"policy built for obs {pol.obs_shape} / {pol.action} but {self.env_id} "
                    f"has obs {self.obs_shape} / {action}"
                )
            self.policy = pol
        else:
            self.policy = policies.make(self._policy_arg, self.obs_shape, action,
                                        **self.policy_options)
        if self.obs_norm and is_image(self.obs_shape):
            # Pixel policies scale their inputs themselves (see policies/cnn.py).
            log.warning("%s: obs_norm ignored for image observations %s", self.env_id,
                        self.obs_shape)
            self.obs_norm = False
        self.obs_stats = RunningMeanStd(self.obs_shape) if self.obs_norm else None
        self._obs_dim = int(np.prod(self.obs_shape))

    def set_obs_stats(self, state_dict: dict[str, Any] | None) -> None:
        """Replace the normalization statistics (e.g. the island's merged ones)."""
        if not self.obs_norm:
            if state_dict is not None:
                raise ValueError(f"{self.env_id}: set_obs_stats needs obs_norm=True")
            return
        stats = RunningMeanStd.from_state_dict(state_dict)
        if stats.shape != self.obs_shape:
            raise ValueError(f"obs stats have shape {stats.shape}, env gives {self.obs_shape}")
        self.obs_stats = stats

    # -- per call -----------------------------------------------------------------------

    def _population(self, params) -> torch.Tensor:
        """``params`` as a ``(P, D)`` tensor (one vector is a population of one), checked
        against the policy, in its own dtype and on its own device."""
        p = torch.as_tensor(params)
        if p.dim() == 1:
            p = p.unsqueeze(0)
        if p.dim() != 2 or p.shape[1] != self.num_params or p.shape[0] < 1:
            raise ValueError(
                f"params must have shape (P, {self.num_params}) for policy "
                f"{self.policy.kind!r} on {self.env_id}, got {tuple(p.shape)}"
            )
        return p

    def _on_device(self, p: torch.Tensor) -> torch.Tensor:
        """What the policy consumes: float32, contiguous, on the evaluator's device."""
        return p.to(device=self.device, dtype=torch.float32).contiguous()

    def _params(self, params) -> tuple[torch.Tensor, np.ndarray]:
        """``params`` as float32 ``(P, D)`` on the device, and which rows are finite (as
        given, before the cast)."""
        p = self._population(params)
        finite = torch.isfinite(p).all(dim=1).cpu().numpy()
        return self._on_device(p), finite

    def _norm_tensors(self) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Frozen normalization for this call (None while nothing has been seen)."""
        if self.obs_stats is None or self.obs_stats.count <= 0:
            return None, None
        mean = torch.as_tensor(self.obs_stats.mean, dtype=torch.float32, device=self.device)
        std = torch.as_tensor(self.obs_stats.std, dtype=torch.float32, device=self.device)
        return mean, std

    def _moments(self) -> ObsMoments | None:
        if self.obs_stats is None:
            return None
        shift = self.obs_stats.mean if self.obs_stats.count > 0 else None
        return ObsMoments(self._obs_dim, shift)

    def _warn_broken(self, p: int, e: int, what: str) -> None:
        log.warning("%s (%s): individual %d produced non-finite %s in episode %d; "
                    "fitness -inf, its remaining episodes skipped",
                    self.env_id, self.backend, p, what, e)

    def _warn_bad_params(self, finite: np.ndarray) -> None:
        for p in np.flatnonzero(~finite):
            log.warning("%s (%s): individual %d has non-finite parameters; fitness -inf",
                        self.env_id, self.backend, int(p))

    def _result(
        self,
        returns: np.ndarray,
        lengths: np.ndarray,
        broken: np.ndarray,
        env_steps: int,
        frames: int,
        t0: float,
        moments: ObsMoments | None,
        extra: dict[str, Any],
    ) -> EvalResult:
        with np.errstate(invalid="ignore"):
            fitness = np.where(broken, -np.inf, returns.mean(axis=1))
        res = EvalResult(
            fitness=fitness, returns=returns, lengths=lengths, env_steps=int(env_steps),
            frames=int(frames), broken=broken, wall_s=time.perf_counter() - t0, extra=extra,
        )
        if moments is not None:
            n, mean, m2 = moments.moments()
            shape = self.obs_shape
            res.obs_count, res.obs_mean, res.obs_m2 = n, mean.reshape(shape), m2.reshape(shape)
            self.obs_stats.merge_moments(n, res.obs_mean, res.obs_m2)
        return res
