"""One island: a strategy and an evaluator evolving k generations per call (no Ray).

``IslandCore.evolve(k, immigrants, obs_stats)`` is the algorithm: adopt merged observation
statistics, accept migrants, then ``k`` times ask -> evaluate -> tell, and return an
:class:`~islands.messages.EvolveResult`: a report row, its emigrants (the best genomes it
evaluated in this call), the observation-moment delta since its previous call and any
candidate offers. Everything else attaches as hooks (:mod:`islands.island.hooks`), run in
this order: a debug exit, the episode schedule and its ranking probes
(:mod:`~islands.island.resampling`), restarts (:mod:`~islands.island.restarts`), a debug
slowdown, candidate re-evaluation (:mod:`~islands.island.reeval`). Its counts are one
:class:`~islands.island.counters.Counters` (report row, checkpoint, info); its state and
checkpoints: :mod:`~islands.island.checkpoints`. The Ray actor around it
(``islands.runtime.actors``) only sizes threads and picks the device.

Immigrant batches whose width is not this island's dimension are rejected, logged and
counted; the island carries on. Seeds: :mod:`islands.seeds`. A restart starts a new strategy
run (:class:`~islands.island.restarts.Runs`): the island's generation (reports, training
seeds, checkpoint timing, ``--generations``) and best (``best_so_far``, the hof restart's
center) are over all its runs and the immigrants it received, so neither ever decreases.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Any

import numpy as np

from .. import strategies
from ..messages import Emigrants, EvolveResult, IslandInfo, IslandReport
from ..persistence.checkpointing import CheckpointSpec
from ..seeds import strategy_seed, train_seed
from .adopt import Adoption
from .checkpoints import Checkpointing
from .counters import Counters, ObsDelta, peak_rss_mb
from .hooks import Call, DebugExit, DebugSlowdown, Elite, Generation, Hook
from .reeval import Reevaluation, Reevaluator
from .resampling import EpisodeSchedule, ResamplingHook
from .restarts import Restarter, RestartHook, RestartSettings, Runs
from .screen import screen
from .spec import IslandSpec
from .spread import limits_of, make_spread

log = logging.getLogger("islands.island")


class IslandCore(Checkpointing):
    """Owns one strategy and one evaluator; see the module docstring."""

    def __init__(self, spec: IslandSpec, eval_spec, *, run_seed: int = 0,
                 num_threads: int = 1, device: str = "cpu", evaluator=None,
                 checkpoint: CheckpointSpec | None = None, reconstructed: bool = False
                 ) -> None:
        self.spec, self.index, self.run_seed = spec, int(spec.index), int(run_seed)
        self.candidate_threshold = spec.run.candidate_threshold  # reeval.Reevaluation
        self.device, self.num_threads = device, int(num_threads)
        if eval_spec is not None and spec.backend:
            eval_spec = eval_spec.replace(backend=spec.backend)  # this island's own backend
        self.evaluator = evaluator or eval_spec.replace(episodes=spec.episodes).build(
            num_threads=self.num_threads, device=device)
        # re-evaluations (candidates, ranking probes); none without an eval_spec
        self.reevaluator = (None if eval_spec is None
                            else Reevaluator(eval_spec, self.num_threads, device))
        self.dim = int(self.evaluator.num_params)
        seed = strategy_seed(self.run_seed, self.index)
        x0 = (self.evaluator.policy.init_params(np.random.default_rng(seed))
              if spec.x0 is None else np.asarray(spec.x0, dtype=np.float64))
        make = functools.partial(make_spread, spec.hp_factors, spec.strategy, self.dim,
                                 **self._strategy_options())
        self.runs = Runs(make, dict(popsize=spec.popsize, sigma=spec.sigma, seed=seed, x0=x0))
        # where adopted settings may walk (--hp-spread): from the settings as built, unspread
        self.hp_limits = limits_of(self.strategy, spec.hp_factors, spec.run.hp_spread)
        self.restarter = Restarter(  # its sigma0 unspread: each run's build spreads it
            RestartSettings(spec.restart, spec.run.restart_patience),
            base_popsize=self.strategy.popsize,
            sigma0=(spec.sigma if spec.sigma is not None
                    else self.strategy.sigma / spec.hp_factors.get("sigma", 1.0)), seed=seed)
        self.schedule = EpisodeSchedule(spec.episodes, spec.run.episodes_cap,
                                        spec.run.restart_patience, spec.run.probe_interval)
        self.reconstructed = bool(reconstructed)
        self.hooks = self._hooks()
        self.counters, self.obs_delta = Counters(), ObsDelta()
        self._t0 = time.perf_counter()
        self._last_fitness = np.zeros(0)
        self._latencies: list[float] = []  # this call's immigrants: seconds since emigration
        self.restored_generation = None  # generation of the checkpoint loaded, if any
        self._init_checkpoints(checkpoint)

    def _strategy_options(self) -> dict[str, Any]:
        """The spec's options, plus the island's device for a strategy that computes on one
        (openai-es-nt): per island, so GPU and CPU islands share a run (config/checks.py
        refuses ``device`` as an option)."""
        options = dict(self.spec.options)
        if "device" in getattr(strategies.STRATEGIES[self.spec.strategy], "OPTIONS", {}):
            options["device"] = self.device
        return options

    def _hooks(self) -> list[Hook]:
        """The hooks, in the order they run (islands.island.hooks)."""
        spec, hooks = self.spec, []
        if spec.debug_exit_after_gen is not None and not self.reconstructed:
            hooks.append(DebugExit(spec.debug_exit_after_gen))  # once: not once Ray restarted it
        hooks += [ResamplingHook(self.schedule, self.restarter), RestartHook(self.restarter)]
        if spec.slowdown_s > 0:
            hooks.append(DebugSlowdown(spec.slowdown_s))
        self.adoption = Adoption() if spec.run.adopt else None
        if self.adoption is not None:
            hooks.append(self.adoption)
        return hooks + [Reevaluation(spec.run.reeval_episodes, spec.run.candidate_kinds)]

    # ---- the strategy and its runs ---------------------------------------------------------
    @property
    def strategy(self):
        """The current run's strategy."""
        return self.runs.strategy

    @property
    def generation(self) -> int:
        """Generations of this island over all its strategies' runs."""
        return self.runs.generation

    @property
    def best(self) -> tuple[np.ndarray | None, float]:
        """(params, fitness) of the best genome this island knows, over all its runs."""
        return self.runs.best

    def set_episodes(self, n: int) -> None:
        """Episodes per training evaluation from now on (islands.island.resampling)."""
        self.evaluator.episodes = int(n)
        self.evaluator.restart_episodes()  # the pool's lanes follow the new count

    def reevaluate(self, X: np.ndarray, n: int, seed: int, shifted: bool = True
                   ) -> np.ndarray:
        """``R[row, episode]``: the rows of ``X`` over ``n`` fresh episodes from ``seed``
        (reeval.Reevaluator), as training fitness (``shifted``: less the reward shift) or
        as the task's own returns; they count in the island's episodes and env steps."""
        R, res = self.reevaluator(X, n, seed, self.evaluator.obs_stats)
        self.counters.count(res)
        if shifted and self.spec.run.reward_shift:
            R = R - self.spec.run.reward_shift * np.asarray(res.lengths).reshape(R.shape)
        return R

    # ---- migration and statistics ----------------------------------------------------
    def accept(self, immigrants: list[Emigrants] | None) -> int:
        """Inject migrant batches; returns how many genomes were accepted."""
        n, c, now = 0, self.counters, time.time()
        self._latencies = [now - b.sent_at for b in immigrants or [] if b.sent_at > 0]
        for batch in immigrants or []:
            P = np.asarray(batch.params, dtype=np.float64)
            f = np.asarray(batch.fitness, dtype=np.float64).reshape(-1)
            if P.ndim == 1:
                P = P[None, :]
            if P.ndim != 2 or P.shape[1] != self.dim or len(f) != len(P):
                c.rejected += len(f)
                log.warning(
                    "island %d: rejected %d migrant(s) from island %s: shape %s, expected "
                    "(k, %d)", self.index, len(f), batch.source, P.shape, self.dim)
                continue
            if len(f) and self.restarter.isolated(int(self.strategy.generation)):
                c.held_off += len(f)  # a fresh restart explores on its own first
            elif len(f):
                n += self._inject(P, f, batch)
        c.immigrants += n
        return n

    def _inject(self, P: np.ndarray, f: np.ndarray, batch: Emigrants) -> int:
        """Inject the migrants of ``batch`` that pass the screen (island.screen), with the
        fitness it measured; returns how many."""
        screened = screen(self, P, batch.source)
        if screened is not None:
            keep = np.isfinite(screened)
            self.counters.screened_out += int((~keep).sum())
            P, f = P[keep], screened[keep]
        carried = batch.hyperparameters if self.spec.run.hp_travel else None
        if len(f) and not (self.adoption and self.adoption.offer(self, P, f, carried)):
            self.strategy.inject(P, f)
        return len(f)

    def set_obs_stats(self, state: dict[str, Any] | None) -> None:
        """Adopt merged (global) observation statistics; ignored when obs_norm is off."""
        if state is not None and self.evaluator.obs_stats is not None:
            self.evaluator.set_obs_stats(state)

    # ---- evolution -------------------------------------------------------------------
    def evolve(self, k: int = 1, immigrants: list[Emigrants] | None = None,
               obs_stats: dict[str, Any] | None = None, want_offers: bool = True
               ) -> EvolveResult:
        """Run ``k`` generations (see the module docstring). ``want_offers`` False: the run
        has candidates waiting for the tester, so no re-evaluation for an offer this call
        (its episodes would be spent on a genome the queue has no room for)."""
        t_call = time.perf_counter()
        self.set_obs_stats(obs_stats)
        call = Call(self.accept(immigrants), Elite(int(self.spec.run.emigrants), self.dim),
                    want_offers, self.counters.evals, self.counters.env_steps)
        for _ in range(int(k)):
            self._run_hooks("before_generation")
            gen = self._evaluate(self._ask())
            self._run_hooks("evaluated", gen)
            self.strategy.tell(gen.fitness)
            self._count(gen)
            self._run_hooks("after_generation", gen)
            call.elite.add(gen.X, gen.fitness, gen.returns)
        self.counters.calls += 1
        self._run_hooks("after_call", call)
        report = self._report(call, time.perf_counter() - t_call)
        self.maybe_checkpoint()
        stats = self.evaluator.obs_stats
        return EvolveResult(
            report=report, offers=call.offers, obs_delta=self.obs_delta.take(),
            emigrants=Emigrants(call.elite.x, call.elite.f, self.index, report.generation,
                                sent_at=time.time(),
                                hyperparameters=self.strategy.hyperparameters()),
            obs_stats=None if stats is None else stats.state_dict(),
            migration_latency_s=self._latencies)

    def _run_hooks(self, point: str, *args) -> None:
        for hook in self.hooks:
            getattr(hook, point)(self, *args)

    def _ask(self):
        """The next population: as the strategy builds it when the evaluator runs on the
        strategy's device (openai-es-nt's tensor straight into a torch evaluator: no host
        round trip of the population; only fitness and the call's elite come back), else
        float64 numpy."""
        dev = getattr(self.strategy, "device", None)  # a torch device (openai-es-nt)
        if dev is not None and self.evaluator.backend == "torch":
            from ..strategies.noise_table import resolve_device  # torch, loaded by now

            if resolve_device(self.evaluator.device) == dev:
                return self.strategy.ask_native()
        return self.strategy.ask()

    def _evaluate(self, X) -> Generation:
        """The training evaluation of population ``X`` (seeded by the island's generation)."""
        res = self.evaluator.evaluate(
            X, seed=train_seed(self.run_seed, self.index, self.generation))
        f = np.asarray(res.fitness, dtype=np.float64).reshape(-1)
        if not self.spec.run.reward_shift:
            return Generation(X, f, res)
        # ARS's survival bonus removed: S per step of the genome's mean episode
        steps = np.asarray(res.lengths, dtype=np.float64).reshape(len(f), -1).mean(1)
        return Generation(X, f - self.spec.run.reward_shift * steps, res, returns=f)

    def _count(self, gen: Generation) -> None:
        self.counters.count(gen.result, evals=len(gen.fitness))
        if self.evaluator.obs_stats is not None:
            self.obs_delta.add(gen.result)
        self._last_fitness = gen.fitness

    def _report(self, call: Call, call_s: float) -> IslandReport:
        fin = self._last_fitness[np.isfinite(self._last_fitness)]
        stats, c = self.evaluator.obs_stats, self.counters
        from_hooks = {k: v for hook in self.hooks for k, v in hook.report().items()}
        return IslandReport(
            island=self.index, strategy=self.spec.strategy, generation=self.generation,
            **c.reported(), **from_hooks,
            fitness_max=float(fin.max()) if fin.size else float("nan"),
            fitness_mean=float(fin.mean()) if fin.size else float("nan"),
            best_so_far=float(self.best[1]), immigrants_new=int(call.accepted),
            call_s=float(call_s),
            evals_per_s=float((c.evals - call.evals0) / max(call_s, 1e-9)),
            steps_per_s=float((c.env_steps - call.steps0) / max(call_s, 1e-9)),
            island_wall_s=float(time.perf_counter() - self._t0),
            # observations behind this island's normalization (its own plus merged ones)
            obs_count=float(stats.count) if stats is not None else 0.0,
            peak_rss_mb=peak_rss_mb(), sigma=float(self.strategy.sigma),
            lr=float(self.strategy.hyperparameters().get("lr", np.nan)),
            center_norm=float(np.linalg.norm(self.strategy.center)))

    def info(self) -> IslandInfo:
        return IslandInfo(
            island=self.index, strategy=self.spec.strategy, dim=self.dim,
            popsize=int(self.strategy.popsize), device=self.device,
            num_threads=self.num_threads, backend=self.evaluator.backend,
            policy_spec=self.evaluator.policy.spec(), generation=self.generation,
            restored_generation=self.restored_generation,
            counters=self.counters.state_dict())

    def close(self) -> None:
        self.evaluator.close()
        if self.reevaluator is not None:
            self.reevaluator.close()
