"""One island: a strategy and an evaluator evolving k generations per call (no Ray).

``IslandCore.evolve(k, immigrants, obs_stats)`` first adopts merged observation statistics
and migrants, then runs ``k`` times ask -> evaluate -> tell, and returns an
:class:`~islands.messages.EvolveResult`: a report row, its emigrants (the best genomes it
evaluated in this call, with their fitness), the observation-moment delta since its
previous call and, once a sample reaches the candidate threshold, candidate offers (that
sample and the search center, re-evaluated on fresh episodes: ``_offers``). The Ray
actor around it (``islands.runtime.actors``) only sizes threads and picks the device.

Immigrant batches whose width is not this island's dimension are rejected, logged and
counted; the island carries on. Seeds: :mod:`islands.seeds`.

Restarts (``spec.restart``, :mod:`islands.island.restarts`): after each generation the island's
:class:`~islands.island.restarts.Restarter` may end the strategy's run (stagnation or the
strategy's own ``stop_reason()``); the island then builds a new strategy of the same kind
with the popsize, step size, seed and start the restarter plans. The island's generation
(reports, training seeds, checkpoint timing, ``--generations``) is the sum over its
strategies' runs, and its best (``best_so_far``, the hof restart's center) is the best over
all of them and the immigrants it received, so neither ever decreases.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import time
from typing import Any

import numpy as np

from ..messages import CandidateOffer, Emigrants, EvolveResult, IslandInfo, IslandReport
from ..persistence.checkpointing import CheckpointClock, CheckpointSpec
from ..planning import IslandSpec
from ..seeds import confirm_seed, probe_seed, strategy_seed, train_seed
from .resampling import EpisodeSchedule
from .restarts import Restarter, RestartSettings

log = logging.getLogger("islands.island")


def _peak_rss_mb() -> float:
    """Peak resident memory of this process (an island's actor process), in MiB."""
    try:
        import resource
    except ImportError:  # not on Windows
        return 0.0
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return kib / (1 << 20) if sys.platform == "darwin" else kib / 1024  # macOS: bytes


class _Elite:
    """The best ``n`` genomes seen during one call, by measured fitness."""

    def __init__(self, n: int, dim: int) -> None:
        self.n, self.x, self.f = n, np.zeros((0, dim)), np.zeros(0)

    def add(self, X: np.ndarray, fit: np.ndarray) -> None:
        ok = np.isfinite(fit)
        x, f = np.concatenate([self.x, X[ok]]), np.concatenate([self.f, fit[ok]])
        top = np.argsort(-f, kind="stable")[: self.n]
        self.x, self.f = x[top], f[top]


class IslandCore:
    """Owns one strategy and one evaluator; see the module docstring."""

    def __init__(self, spec: IslandSpec, eval_spec, *, run_seed: int = 0,
                 num_threads: int = 1, device: str = "cpu", evaluator=None,
                 checkpoint: CheckpointSpec | None = None, reconstructed: bool = False
                 ) -> None:
        self.spec, self.index = spec, int(spec.index)
        self.run_seed = int(run_seed)
        self.strategy_name = spec.strategy
        self.candidate_threshold = spec.candidate_threshold
        self.device, self.num_threads = device, int(num_threads)
        self.evaluator = evaluator or eval_spec.replace(episodes=spec.episodes).build(
            num_threads=self.num_threads, device=device)
        # re-evaluations (candidates, ranking probes): an evaluator per episode count, built
        # at its first use (none without an eval_spec)
        self._eval_spec, self._reevaluators = eval_spec, {}
        self.confirmations = 0
        self.dim = int(self.evaluator.num_params)
        seed = strategy_seed(self.run_seed, self.index)
        x0 = self.evaluator.policy.init_params(np.random.default_rng(seed))
        self._build_strategy(dict(popsize=spec.popsize, sigma=spec.sigma, seed=seed, x0=x0))
        self.restarter = Restarter(
            RestartSettings(spec.restart, spec.restart_patience),
            base_popsize=self.strategy.popsize,
            sigma0=spec.sigma if spec.sigma is not None else self.strategy.sigma, seed=seed)
        self.schedule = EpisodeSchedule(spec.episodes, spec.episodes_cap,
                                        spec.restart_patience, spec.probe_interval)
        self._gen_offset = 0  # generations of the strategies before the current one
        self._prev_best: tuple[np.ndarray | None, float] = (None, -np.inf)  # their best
        self._center_at_restart = None  # the ended run's center (candidates, see below)
        self.evals = self.episodes = self.env_steps = self.frames = 0
        self.immigrants = 0  # accepted migrant genomes, cumulative
        self.rejected = 0  # migrant genomes refused (wrong dimension), cumulative
        self.held_off = 0  # migrant genomes a fresh restart kept out (Restarter.isolated)
        self.calls = 0
        self._t0 = time.perf_counter()
        self._delta = None  # RunningMeanStd of observations since the last report
        self._last_fitness = np.zeros(0)
        self.reconstructed = bool(reconstructed)
        self.restored_generation = None  # generation of the checkpoint loaded, if any
        self._init_checkpoints(checkpoint)

    def _init_checkpoints(self, ck: CheckpointSpec | None) -> None:
        self.storage = None
        if ck is not None:
            from ..persistence.storage import Storage

            self.storage = Storage(ck.uri)
            if ck.load or self.reconstructed:
                self.restore()
        self.clock = CheckpointClock(0 if ck is None else ck.interval,
                                     0.0 if ck is None else ck.seconds,
                                     self.generation)

    # ---- the strategy and its restarts ---------------------------------------------------
    def _build_strategy(self, build: dict[str, Any]) -> None:
        """A new strategy of this island's kind from ``build`` (popsize, sigma, seed, x0);
        ``build`` is kept for the checkpoint (a restarted strategy is rebuilt alike)."""
        from .. import strategies

        self._build = build
        self.strategy = strategies.make(self.spec.strategy, self.dim, **build,
                                        **dict(self.spec.options))

    @property
    def generation(self) -> int:
        """Generations of this island over all its strategies' runs."""
        return self._gen_offset + int(self.strategy.generation)

    @property
    def best(self) -> tuple[np.ndarray | None, float]:
        """(params, fitness) of the best genome this island knows, over all its runs."""
        x, f = self.strategy.best
        return (x, f) if x is not None and f >= self._prev_best[1] else self._prev_best

    def _restart(self, reason: str) -> None:
        """End the strategy's run and start the next one as the restarter plans."""
        self._prev_best = self.best
        self._center_at_restart = self.strategy.center
        self._gen_offset += int(self.strategy.generation)
        plan = self.restarter.plan(reason, self._prev_best[0],
                                   self.evaluator.policy.init_params)
        self._build_strategy(dict(popsize=plan.popsize, sigma=plan.sigma, seed=plan.seed,
                                  x0=plan.x0))
        log.info("island %d: restart %d (%s) at generation %d: %s, popsize %d, sigma %.3g",
                 self.index, self.restarter.restarts, plan.regime, self.generation, reason,
                 self.strategy.popsize, plan.sigma)

    # ---- migration and statistics ----------------------------------------------------
    def accept(self, immigrants: list[Emigrants] | None) -> int:
        """Inject migrant batches; returns how many genomes were accepted."""
        n = 0
        for batch in immigrants or []:
            P = np.asarray(batch.params, dtype=np.float64)
            f = np.asarray(batch.fitness, dtype=np.float64).reshape(-1)
            if P.ndim == 1:
                P = P[None, :]
            if P.ndim != 2 or P.shape[1] != self.dim or len(f) != len(P):
                self.rejected += len(f)
                log.warning(
                    "island %d: rejected %d migrant(s) from island %s: shape %s, expected "
                    "(k, %d)", self.index, len(f), batch.source, P.shape, self.dim)
                continue
            if len(f) and self.restarter.isolated(int(self.strategy.generation)):
                self.held_off += len(f)  # a fresh restart explores on its own first
            elif len(f):
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
    def evolve(self, k: int = 1, immigrants: list[Emigrants] | None = None,
               obs_stats: dict[str, Any] | None = None, want_offers: bool = True
               ) -> EvolveResult:
        """Run ``k`` generations (see the module docstring). ``want_offers`` False: the run
        has candidates waiting for the tester, so no re-evaluation for an offer this call
        (its episodes would be spent on a genome the queue has no room for)."""
        t_call = time.perf_counter()
        self.set_obs_stats(obs_stats)
        accepted = self.accept(immigrants)
        elite = _Elite(int(self.spec.emigrants), self.dim)
        evals0, steps0 = self.evals, self.env_steps
        for _ in range(int(k)):
            self._maybe_debug_exit()
            X, fit = self._generation()
            elite.add(X, fit)
            if self.spec.slowdown_s > 0:  # debug option: make this island slow on purpose
                time.sleep(self.spec.slowdown_s)
        self.calls += 1
        offers = self._offers(elite) if want_offers else []
        report = self._report(accepted, time.perf_counter() - t_call, evals0, steps0)
        self.maybe_checkpoint()
        stats = self.evaluator.obs_stats
        return EvolveResult(
            report=report,
            emigrants=Emigrants(elite.x, elite.f, self.index, report.generation),
            offers=offers,
            obs_delta=self.take_obs_delta(),
            obs_stats=None if stats is None else stats.state_dict())

    def _generation(self) -> tuple[np.ndarray, np.ndarray]:
        """ask -> evaluate -> tell once; the population and its fitness. A probe generation
        (``schedule.probe_due``) is evaluated again on as many fresh episodes, and the
        strategy is told the mean of both (islands.island.resampling)."""
        X = self.strategy.ask()
        probe = self.schedule.probe_due(self.generation) and self._eval_spec is not None
        res = self.evaluator.evaluate(
            X, seed=train_seed(self.run_seed, self.index, self.generation))
        fit = np.asarray(res.fitness, dtype=np.float64).reshape(-1)
        halves = None
        if probe:
            R = self._reevaluate(X, self.schedule.episodes,
                                 probe_seed(self.run_seed, self.index, self.generation))
            halves = (fit, R.mean(axis=1))
            fit = (fit + halves[1]) / 2
        self.strategy.tell(fit)
        self.evals += len(fit)
        self.episodes += int(np.size(res.returns))
        self.env_steps += int(res.env_steps)
        self.frames += int(res.frames)
        self._add_obs_delta(res)
        self._last_fitness = fit
        self._grow_episodes(fit, halves)
        reason = self.restarter.check(fit, self.strategy)
        if reason:
            self._restart(reason)
        return X, fit

    def _grow_episodes(self, fit: np.ndarray, halves=None) -> None:
        """More episodes per evaluation when the schedule says so (islands.island.resampling); a
        stagnant island resamples before it restarts, so the restarter counts afresh."""
        n = self.schedule.update(fit, halves)
        if n is None:
            return
        self._set_episodes(n)
        self.restarter.stagnation.reset()
        log.info("island %d: %d episodes per evaluation from generation %d (%s)",
                 self.index, n, self.generation, self.schedule.why)

    def _set_episodes(self, n: int) -> None:
        self.evaluator.episodes = int(n)
        self.evaluator.restart_episodes()  # the pool's lanes follow the new count

    def _maybe_debug_exit(self) -> None:
        # Debug option for the fault tests: the process dies mid-run, once (a restarted
        # island has ``reconstructed`` set and carries on).
        g = self.spec.debug_exit_after_gen
        if g is not None and not self.reconstructed and self.generation >= g:
            log.warning("island %d: debug exit at generation %d", self.index,
                        self.generation)
            os._exit(1)

    # ---- candidates ------------------------------------------------------------------
    def _offers(self, elite: _Elite) -> list[CandidateOffer]:
        """Once the call's best sample reached the candidate threshold: that sample and the
        search center, each re-evaluated on ``spec.confirm_episodes`` fresh episodes where
        set. A best sample won among ``popsize`` evaluations on the same few episodes, so
        its training fitness is biased upwards; most such winners fail a test. The island
        re-evaluates them itself (two genomes, a few episodes), so the tester -- whose
        screen alone takes 20 episodes, on CPU the islands share -- only sees genomes that
        held up (the queue drops offers whose re-evaluation is below the target)."""
        t = self.candidate_threshold
        if t is None or not elite.f.size or elite.f.max() < t:
            return []
        center = self.strategy.center
        if self.strategy.generation == 0 and self._center_at_restart is not None:
            center = self._center_at_restart  # the run that just ended made the sample
        f = float(elite.f[0])
        offers = [CandidateOffer("sample", np.array(elite.x[0]), f),
                  CandidateOffer("center", np.array(center, dtype=np.float64), f)]
        n = int(self.spec.confirm_episodes)
        if n <= 0 or self._eval_spec is None:
            return offers
        means, ses = self._confirm(np.stack([o.params for o in offers]), n)
        return [dataclasses.replace(o, confirmed=float(m), confirmed_se=float(e),
                                    confirm_episodes=n)
                for o, m, e in zip(offers, means, ses, strict=True)]

    def _confirm(self, X: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Mean returns of the rows of ``X`` over ``n`` fresh training episodes and their
        standard errors (infinite for a single episode: nothing known)."""
        R = self._reevaluate(X, n, confirm_seed(self.run_seed, self.index, self.generation))
        self.confirmations += len(X)
        mean = R.mean(axis=1)
        se = (R.std(axis=1, ddof=1) / np.sqrt(R.shape[1]) if R.shape[1] > 1
              else np.full(len(X), np.inf))
        return mean, np.where(np.isfinite(mean), se, 0.0)

    def _reevaluate(self, X: np.ndarray, n: int, seed: int) -> np.ndarray:
        """Returns ``R[row, episode]`` of the rows of ``X`` over ``n`` episodes from
        ``seed`` (-inf rows for broken genomes), under the island's current observation
        statistics (frozen: these observations do not enter them). Its own evaluator, so
        the training episode streams -- and a resumed run's bit-identity -- are untouched;
        its episodes count in the island's ``episodes`` and ``env_steps``."""
        if n not in self._reevaluators:
            self._reevaluators[n] = self._eval_spec.replace(episodes=n).build(
                num_threads=self.num_threads, device=self.device)
        ev, stats = self._reevaluators[n], self.evaluator.obs_stats
        if stats is not None:
            ev.set_obs_stats(stats.state_dict())
        ev.restart_episodes()  # episodes from this call's seed alone
        res = ev.evaluate(X, seed=seed)
        self.episodes += int(np.size(res.returns))
        self.env_steps += int(res.env_steps)
        self.frames += int(res.frames)
        R = np.asarray(res.returns, dtype=np.float64).reshape(len(X), -1)
        fit = np.asarray(res.fitness, dtype=np.float64).reshape(-1)
        return np.where(np.isfinite(fit)[:, None], R, -np.inf)

    def _close_reevaluators(self) -> None:
        for ev in self._reevaluators.values():
            ev.close()
        self._reevaluators = {}

    def _report(self, accepted: int, call_s: float, evals0: int, steps0: int) -> IslandReport:
        fin = self._last_fitness[np.isfinite(self._last_fitness)]
        stats = self.evaluator.obs_stats
        return IslandReport(
            island=self.index, strategy=self.strategy_name,
            generation=self.generation, evals=int(self.evals),
            episodes=int(self.episodes), env_steps=int(self.env_steps),
            frames=int(self.frames),
            fitness_max=float(fin.max()) if fin.size else float("nan"),
            fitness_mean=float(fin.mean()) if fin.size else float("nan"),
            best_so_far=float(self.best[1]), immigrants=int(self.immigrants),
            immigrants_new=int(accepted), rejected=int(self.rejected), call_s=float(call_s),
            evals_per_s=float((self.evals - evals0) / max(call_s, 1e-9)),
            steps_per_s=float((self.env_steps - steps0) / max(call_s, 1e-9)),
            island_wall_s=float(time.perf_counter() - self._t0),
            # observations behind this island's normalization (its own plus merged ones)
            obs_count=float(stats.count) if stats is not None else 0.0,
            restarts=int(self.restarter.restarts), confirmations=int(self.confirmations),
            episodes_per_eval=int(self.schedule.episodes),
            rank_agreement=(self.schedule.agreements[-1] if self.schedule.agreements
                            else None),
            peak_rss_mb=_peak_rss_mb(), sigma=float(self.strategy.sigma),
            center_norm=float(np.linalg.norm(self.strategy.center)))

    # ---- state (for checkpoints) -------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """Plain-data state: strategy state dict and how it was built, restarts,
        observation statistics, counters."""
        from ..persistence.storage import CHECKPOINT_FORMAT

        stats = self.evaluator.obs_stats
        return {
            "format": CHECKPOINT_FORMAT, "kind": "island", "dim": self.dim,
            "index": self.index, "strategy": self.strategy.state_dict(),
            "obs_stats": None if stats is None else stats.state_dict(),
            "obs_delta": None if self._delta is None else self._delta.state_dict(),
            "counters": {"evals": self.evals, "episodes": self.episodes,
                         "env_steps": self.env_steps,
                         "frames": self.frames, "immigrants": self.immigrants,
                         "rejected": self.rejected, "calls": self.calls,
                         "confirmations": self.confirmations, "held_off": self.held_off},
            "build": dict(self._build), "restarter": self.restarter.state_dict(),
            "episode_schedule": self.schedule.state_dict(),
            "generation_offset": self._gen_offset,
            "prev_best": {"x": self._prev_best[0], "f": self._prev_best[1]},
        }

    def set_state(self, state: dict[str, Any]) -> None:
        from policies.obsnorm import RunningMeanStd

        if state.get("index", self.index) != self.index or "strategy" not in state:
            raise ValueError(f"the state is not island {self.index}'s")
        self._load_runs(state)
        self.strategy.load_state_dict(state["strategy"])
        if state.get("obs_stats") is not None:
            self.set_obs_stats(state["obs_stats"])
        d = state.get("obs_delta")
        self._delta = None if d is None else RunningMeanStd.from_state_dict(d)
        for k, v in state["counters"].items():
            setattr(self, k, int(v))

    def _load_runs(self, state: dict[str, Any]) -> None:
        """The restart bookkeeping of ``state``; a strategy built other than this one (a
        restarted run: another popsize, step size, seed) is rebuilt before it is loaded.
        States written before restarts existed hold none of it: nothing restarted."""
        build = state.get("build")
        key = ("popsize", "sigma", "seed")
        if build is not None and any(build[k] != self._build[k] for k in key):
            self._build_strategy({k: build[k] for k in (*key, "x0")})
        if state.get("restarter") is not None:
            self.restarter.load_state_dict(state["restarter"])
        # Older states have no schedule (fixed episodes); a resume that sets other
        # --episodes than the run had starts the schedule afresh from them.
        sched = state.get("episode_schedule")
        if sched is not None and int(sched["base"]) == self.schedule.base:
            self.schedule.load_state_dict(sched)
            self._set_episodes(self.schedule.episodes)
        self._gen_offset = int(state.get("generation_offset", 0))
        prev = state.get("prev_best") or {"x": None, "f": -np.inf}
        self._prev_best = (None if prev["x"] is None else np.array(prev["x"], np.float64),
                           float(prev["f"]))

    def checkpoint(self, restart_episodes: bool = False) -> int:
        """Write the state now; returns the generation written (-1: no storage). With
        ``restart_episodes`` the evaluator's episode streams restart here (see
        ``maybe_checkpoint``)."""
        if self.storage is None:
            return -1
        from ..persistence.storage import island_file

        self.storage.save(island_file(self.index), self.get_state())
        if restart_episodes:
            self.evaluator.restart_episodes()
        self.clock.mark(self.generation)
        return self.clock.count

    def maybe_checkpoint(self) -> None:
        due = None if self.storage is None else self.clock.due(self.generation)
        if due is not None:
            # A resumed island builds its evaluator afresh; at a checkpoint that falls on a
            # generation this one restarts its episode streams too, so both see the same
            # episodes from here on (EnvPool episodes otherwise depend on every call since
            # the pool was built). Not at wall-clock checkpoints: resuming from those is not
            # exact anyway, and an Atari pool takes seconds to rebuild.
            self.checkpoint(restart_episodes=due == "count")

    def restore(self) -> bool:
        """Load this island's last checkpoint, if there is one (ValueError naming the file
        when it is corrupt or belongs to another island / strategy / dimension)."""
        from ..persistence.storage import island_file

        if not self.storage.restore(island_file(self.index), self.set_state,
                                    f"island {self.index}"):
            return False
        self.restored_generation = self.generation
        log.warning("island %d: restored from its checkpoint at generation %d", self.index,
                    self.restored_generation)
        return True

    def info(self) -> IslandInfo:
        return IslandInfo(
            island=self.index, strategy=self.strategy_name, dim=self.dim,
            popsize=int(self.strategy.popsize), device=self.device,
            num_threads=self.num_threads, backend=self.evaluator.backend,
            policy_spec=self.evaluator.policy.spec(),
            generation=self.generation,
            restored_generation=self.restored_generation,
            counters={"evals": int(self.evals), "episodes": int(self.episodes),
                      "env_steps": int(self.env_steps)})

    def close(self) -> None:
        self.evaluator.close()
        self._close_reevaluators()
