"""One island: a strategy and an evaluator evolving k generations per call.

:class:`IslandCore` is plain Python (usable and testable without Ray): ``evolve(k,
immigrants, obs_stats)`` first adopts merged observation statistics and migrants, then runs
``k`` times ask -> evaluate -> tell, and returns a compact report, its emigrants (the best
genomes it evaluated in this call, with their fitness) and the observation-moment delta
since its previous report. :class:`IslandActor` is the thin Ray wrapper: it sizes torch
and EnvPool threads from the actor's CPU share and picks CUDA when Ray gave it a GPU.

Wire formats (plain dicts of numpy arrays and numbers):

- immigrants: a list of batches ``{"params": (m, D), "fitness": (m,), "source": int}``; a
  batch whose width is not this island's D is rejected, logged and counted; the island
  carries on.
- obs statistics: ``RunningMeanStd.state_dict()``; deltas: ``{"count", "mean", "m2"}``.

Seeds: generation g of island i evaluates with ``train_seed(run_seed, i, g)``, a 30-bit
number; tests use seeds from ``TEST_SEED_BASE`` up (>= 2**30), so test episodes never
reuse a training episode seed.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import numpy as np

log = logging.getLogger("islands.island")

# Training evaluation seeds live in [0, 2**30); tests start here (see evaluate.py).
TEST_SEED_BASE = 2**30 + 12345
_SEED_SPAN = 2**30


def train_seed(run_seed: int, island: int, generation: int) -> int:
    """Evaluation seed of ``generation`` on ``island``: different per island and generation
    (islands never share episodes), reproducible from the run seed, below 2**30."""
    base = int(np.random.SeedSequence([int(run_seed), int(island)]).generate_state(1)[0])
    # Steps of 9973 (prime) keep consecutive generations' seeds far apart, so evaluators
    # that use seed, seed+1, ... for their episodes never overlap between generations.
    return (base + 9973 * int(generation)) % _SEED_SPAN


def strategy_seed(run_seed: int, island: int) -> int:
    return int(np.random.SeedSequence([int(run_seed), int(island), 1]).generate_state(1)[0])


class IslandCore:
    """Owns one strategy and one evaluator; see the module docstring."""

    def __init__(
        self,
        index: int,
        spec: dict[str, Any],
        eval_kwargs: dict[str, Any],
        *,
        run_seed: int = 0,
        num_threads: int = 1,
        device: str = "cpu",
        evaluator=None,
        checkpoint: dict[str, Any] | None = None,
        reconstructed: bool = False,
    ) -> None:
        import envs
        from islands import strategies

        self.index = int(index)
        self.spec = dict(spec)
        self.run_seed = int(run_seed)
        self.strategy_name = spec["strategy"]
        self.n_emigrants = max(1, int(spec.get("emigrants", 1)))
        t = spec.get("candidate_threshold")
        self.candidate_threshold = None if t is None else float(t)
        self.slowdown_s = float(spec.get("slowdown_s", 0.0) or 0.0)
        kw = dict(eval_kwargs)
        kw["episodes"] = int(spec.get("episodes") or kw.get("episodes") or 1)
        self.device = device
        self.num_threads = int(num_threads)
        self.evaluator = evaluator or envs.make_evaluator(
            **kw, num_threads=self.num_threads, device=device
        )
        self.dim = int(self.evaluator.num_params)
        seed = strategy_seed(self.run_seed, self.index)
        x0 = self.evaluator.policy.init_params(np.random.default_rng(seed))
        self.strategy = strategies.make(
            self.strategy_name, self.dim, popsize=spec.get("popsize"), sigma=spec.get("sigma"),
            seed=seed, x0=x0, **dict(spec.get("options") or {}),
        )
        self.evals = 0
        self.env_steps = 0
        self.frames = 0
        self.immigrants = 0  # accepted migrant genomes, cumulative
        self.rejected = 0  # migrant genomes refused (wrong dimension), cumulative
        self.calls = 0
        self._t0 = time.perf_counter()
        self._delta = None  # RunningMeanStd of observations since the last report
        self._last_fitness = np.zeros(0)
        # Checkpoints: {"uri", "interval" (generations), "seconds", "load"}; see storage.py.
        ck = dict(checkpoint or {})
        self.ckpt_interval = int(ck.get("interval") or 0)
        self.ckpt_seconds = float(ck.get("seconds") or 0.0)
        self.storage = None
        if ck.get("uri"):
            from .storage import Storage

            self.storage = Storage(ck["uri"])
        self.reconstructed = bool(reconstructed)
        self.restored_generation = None  # generation of the checkpoint loaded, if any
        if self.storage is not None and (ck.get("load") or self.reconstructed):
            self.restore()
        self._ckpt_gen = int(self.strategy.generation)
        self._ckpt_t = time.monotonic()
        d = spec.get("debug_exit_after_gen")
        self.debug_exit_after_gen = None if d is None else int(d)

    # ---- migration and statistics ----------------------------------------------------
    def accept(self, immigrants: list[dict[str, Any]] | None) -> int:
        """Inject migrant batches; returns how many genomes were accepted."""
        n = 0
        for batch in immigrants or []:
            P = np.asarray(batch["params"], dtype=np.float64)
            f = np.asarray(batch["fitness"], dtype=np.float64).reshape(-1)
            if P.ndim == 1:
                P = P[None, :]
            if P.ndim != 2 or P.shape[1] != self.dim or len(f) != len(P):
                self.rejected += len(f)
                log.warning(
                    "island %d: rejected %d migrant(s) from island %s: shape %s, expected "
                    "(k, %d)", self.index, len(f), batch.get("source"), P.shape, self.dim)
                continue
            if len(f) == 0:
                continue
            self.strategy.inject(P, f)
            n += len(f)
        self.immigrants += n
        return n

    def set_obs_stats(self, state: dict[str, Any] | None) -> None:
        """Adopt merged (global) observation statistics; ignored when obs_norm is off."""
        if state is not None and self.evaluator.obs_stats is not None:
            self.evaluator.set_obs_stats(state)

    def _add_obs_delta(self, res) -> None:
        if self.evaluator.obs_stats is None or not res.obs_count or res.obs_mean is None:
            return
        from policies.obsnorm import RunningMeanStd

        if self._delta is None:
            self._delta = RunningMeanStd(tuple(np.shape(res.obs_mean)))
        self._delta.merge_moments(float(res.obs_count), res.obs_mean, res.obs_m2)

    def take_obs_delta(self) -> dict[str, Any] | None:
        d, self._delta = self._delta, None
        if d is None or d.count <= 0:
            return None
        return {"count": d.count, "mean": d.mean, "m2": d.m2}

    # ---- evolution -------------------------------------------------------------------
    def evolve(
        self,
        k: int = 1,
        immigrants: list[dict[str, Any]] | None = None,
        obs_stats: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run ``k`` generations; returns ``{"report", "emigrants", "center", "obs_delta",
        "obs_stats"}`` (see the module docstring)."""
        t_call = time.perf_counter()
        self.set_obs_stats(obs_stats)
        accepted = self.accept(immigrants)
        elite_x = np.zeros((0, self.dim))
        elite_f = np.zeros(0)
        evals0, steps0 = self.evals, self.env_steps
        for _ in range(int(k)):
            if (self.debug_exit_after_gen is not None and not self.reconstructed
                    and self.strategy.generation >= self.debug_exit_after_gen):
                # Debug option for the fault tests: the process dies mid-run, once (a
                # restarted island has ``reconstructed`` set and carries on).
                log.warning("island %d: debug exit at generation %d", self.index,
                            self.strategy.generation)
                os._exit(1)
            X = self.strategy.ask()
            res = self.evaluator.evaluate(X, seed=train_seed(self.run_seed, self.index,
                                                             self.strategy.generation))
            fit = np.asarray(res.fitness, dtype=np.float64).reshape(-1)
            self.strategy.tell(fit)
            self.evals += len(fit)
            self.env_steps += int(res.env_steps)
            self.frames += int(res.frames)
            self._add_obs_delta(res)
            self._last_fitness = fit
            ok = np.isfinite(fit)
            # Emigrants: the best genomes evaluated during this call, by measured fitness.
            elite_x = np.concatenate([elite_x, X[ok]])
            elite_f = np.concatenate([elite_f, fit[ok]])
            top = np.argsort(-elite_f, kind="stable")[: self.n_emigrants]
            elite_x, elite_f = elite_x[top], elite_f[top]
            if self.slowdown_s > 0:  # debug option: make this island slow on purpose
                time.sleep(self.slowdown_s)
        self.calls += 1
        call_s = time.perf_counter() - t_call
        fin = self._last_fitness[np.isfinite(self._last_fitness)]
        _, best_f = self.strategy.best
        report = {
            "island": self.index,
            "strategy": self.strategy_name,
            "generation": int(self.strategy.generation),
            "evals": int(self.evals),
            "env_steps": int(self.env_steps),
            "frames": int(self.frames),
            "fitness_max": float(fin.max()) if fin.size else float("nan"),
            "fitness_mean": float(fin.mean()) if fin.size else float("nan"),
            "best_so_far": float(best_f),
            "immigrants": int(self.immigrants),
            "immigrants_new": int(accepted),
            "rejected": int(self.rejected),
            "call_s": float(call_s),
            "evals_per_s": float((self.evals - evals0) / max(call_s, 1e-9)),
            "steps_per_s": float((self.env_steps - steps0) / max(call_s, 1e-9)),
            "island_wall_s": float(time.perf_counter() - self._t0),
        }
        stats = self.evaluator.obs_stats
        # Observations behind this island's normalization (its own plus merged ones).
        report["obs_count"] = float(stats.count) if stats is not None else 0.0
        self.maybe_checkpoint()
        # The search center goes along only once the best sample reaches the threshold (it
        # is then a candidate for testing; a large network's center is megabytes).
        center = None
        if (self.candidate_threshold is not None and elite_f.size
                and elite_f.max() >= self.candidate_threshold):
            center = self.strategy.center
        return {
            "report": report,
            "center": center,
            "emigrants": {"params": elite_x, "fitness": elite_f, "source": self.index,
                          "generation": report["generation"]},
            "obs_delta": self.take_obs_delta(),
            "obs_stats": None if stats is None else stats.state_dict(),
        }

    # ---- state (for checkpoints) -------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """Plain-data state: strategy state dict, observation statistics, counters."""
        from .storage import CHECKPOINT_FORMAT

        stats = self.evaluator.obs_stats
        return {
            "format": CHECKPOINT_FORMAT,
            "kind": "island",
            "dim": self.dim,
            "index": self.index,
            "strategy": self.strategy.state_dict(),
            "obs_stats": None if stats is None else stats.state_dict(),
            "obs_delta": None if self._delta is None else self._delta.state_dict(),
            "counters": {"evals": self.evals, "env_steps": self.env_steps,
                         "frames": self.frames, "immigrants": self.immigrants,
                         "rejected": self.rejected, "calls": self.calls},
        }

    def set_state(self, state: dict[str, Any]) -> None:
        from policies.obsnorm import RunningMeanStd

        if state.get("index", self.index) != self.index or "strategy" not in state:
            raise ValueError(f"the state is not island {self.index}'s")
        self.strategy.load_state_dict(state["strategy"])
        if state.get("obs_stats") is not None:
            self.set_obs_stats(state["obs_stats"])
        d = state.get("obs_delta")
        self._delta = None if d is None else RunningMeanStd.from_state_dict(d)
        for k, v in state["counters"].items():
            setattr(self, k, int(v))

    def checkpoint(self, restart_episodes: bool = False) -> int:
        """Write the state now; returns the generation written (-1: no storage). With
        ``restart_episodes`` the evaluator's episode streams restart here (see
        ``maybe_checkpoint``)."""
        if self.storage is None:
            return -1
        from .storage import island_file

        self.storage.save(island_file(self.index), self.get_state())
        if restart_episodes:
            self.evaluator.restart_episodes()
        self._ckpt_gen = int(self.strategy.generation)
        self._ckpt_t = time.monotonic()
        return self._ckpt_gen

    def maybe_checkpoint(self) -> None:
        if self.storage is None:
            return
        g = int(self.strategy.generation)
        by_generation = bool(self.ckpt_interval and g - self._ckpt_gen >= self.ckpt_interval)
        if by_generation or (self.ckpt_seconds
                             and time.monotonic() - self._ckpt_t >= self.ckpt_seconds):
            # A resumed island builds its evaluator afresh; at a checkpoint that falls on a
            # generation this one restarts its episode streams too, so both see the same
            # episodes from here on (EnvPool episodes otherwise depend on every call since
            # the pool was built). Not at wall-clock checkpoints: resuming from those is not
            # exact anyway, and an Atari pool takes seconds to rebuild.
            self.checkpoint(restart_episodes=by_generation)

    def restore(self) -> bool:
        """Load this island's last checkpoint, if there is one (ValueError naming the file
        when it is corrupt or belongs to another island / strategy / dimension)."""
        from .storage import island_file

        name = island_file(self.index)
        state = self.storage.load(name)
        if state is None:
            return False
        try:
            self.set_state(state)
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"checkpoint {self.storage.path(name)} does not fit island "
                             f"{self.index}: {e}") from None
        self.restored_generation = int(self.strategy.generation)
        log.warning("island %d: restored from its checkpoint at generation %d", self.index,
                    self.restored_generation)
        return True

    def info(self) -> dict[str, Any]:
        return {"island": self.index, "strategy": self.strategy_name, "dim": self.dim,
                "popsize": int(self.strategy.popsize), "device": self.device,
                "num_threads": self.num_threads, "backend": self.evaluator.backend,
                "policy_spec": self.evaluator.policy.spec(),
                "generation": int(self.strategy.generation),
                "restored_generation": self.restored_generation}

    def close(self) -> None:
        self.evaluator.close()


def _actor_class():
    import ray

    @ray.remote
    class IslandActor:
        """Ray wrapper around :class:`IslandCore` (named ``island-NN``)."""

        def __init__(self, index: int, spec: dict[str, Any], eval_kwargs: dict[str, Any],
                     run_seed: int = 0, device: str = "auto",
                     checkpoint: dict[str, Any] | None = None) -> None:
            import torch

            logging.basicConfig(level=logging.INFO, format="%(message)s")
            # Ray sets OMP_NUM_THREADS from the CPU share, but be explicit: fractional
            # shares still get one thread, 2 CPUs get 2 (torch and EnvPool alike).
            threads = max(1, round(float(spec.get("num_cpus") or 1)))
            torch.set_num_threads(threads)
            if device == "auto":
                gpus = ray.get_gpu_ids()
                device = "cuda" if gpus and torch.cuda.is_available() else "cpu"
                if gpus and device == "cpu":
                    log.warning("island %d: Ray assigned GPU %s but torch sees no CUDA; "
                                "using the CPU", index, gpus)
            # A restart after a crash reloads the last checkpoint (see IslandCore).
            rec = was_reconstructed()
            self.core = IslandCore(index, spec, eval_kwargs, run_seed=run_seed,
                                   num_threads=threads, device=device, checkpoint=checkpoint,
                                   reconstructed=rec)
            from .metrics import IslandMetrics

            self.metrics = IslandMetrics(index, spec["strategy"], eval_kwargs.get("env_id", ""))

        def evolve(self, k=1, immigrants=None, obs_stats=None):
            out = self.core.evolve(k, immigrants, obs_stats)
            self.metrics.record(out["report"], int(k))  # Ray metrics (islands.metrics)
            return out

        def get_state(self):
            return self.core.get_state()

        def set_state(self, state):
            self.core.set_state(state)

        def checkpoint(self):
            return self.core.checkpoint()

        def info(self):
            d = self.core.info()
            d["node"] = ray.get_runtime_context().get_node_id()
            d["gpu_ids"] = [str(g) for g in ray.get_gpu_ids()]
            return d

    return IslandActor


_ACTOR = None


def island_actor_class():
    """The Ray actor class (built on first use, so importing this module needs no Ray)."""
    global _ACTOR
    if _ACTOR is None:
        _ACTOR = _actor_class()
    return _ACTOR


def was_reconstructed() -> bool:
    """Inside an actor: True when Ray restarted it after a death (reload the checkpoint)."""
    import warnings

    import ray

    with warnings.catch_warnings():  # Ray 2.60 warns about an internal deprecated call here
        warnings.simplefilter("ignore", DeprecationWarning)
        return bool(ray.get_runtime_context().was_current_actor_reconstructed)


def island_name(index: int) -> str:
    return f"island-{index:02d}"
