"""The asynchronous run loop; it runs in the launcher process.

Who does what:

- Each island actor evolves ``gens_per_call`` generations per ``evolve(k, immigrants,
  obs_stats)`` call. :class:`IslandCalls` keeps exactly one call in flight per island.
- ``ray.wait(num_returns=1)`` hands back whichever call finished first; one handler per
  kind of event takes it:
  :meth:`RunLoop.on_island_result` records the report, forwards the result to the
  coordinator through the :class:`CoordinatorOutbox` (the object ref, so the data go
  store-to-store), offers the island's best to the :class:`~islands.candidates.CandidateQueue`
  and resubmits the island at once with whatever its inbox holds;
  :meth:`RunLoop.on_coordinator_reply` puts the reply's migrants and statistics into the
  island's inbox for its next call; :meth:`RunLoop.on_test_result` records a candidate's
  test. Nobody blocks on anybody: a slow island is simply resubmitted less often, so it
  migrates less.
- Stop: per-island generation limit, time budget, a passing test, or a signal. A candidate
  test (on ``test_episodes`` fresh episodes, on the tester actor) runs whenever one is
  queued and none is running.
- Faults: a lost island call is resubmitted with the same arguments (no migrant is lost)
  once Ray has restarted the island from its checkpoint; reports the coordinator lost while
  it restarted are resent, with the best result seen so far.

Keeping the loop in the driver (not in the coordinator) means a dead coordinator can be
restarted without losing the islands' calls in flight.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import ray

from ..candidates import Candidate, CandidateQueue, choose_solution, passes, untested
from ..messages import CoordinatorReply, EvolveResult, IslandInfo
from .cluster import root_message

log = logging.getLogger("islands.driver")


@dataclasses.dataclass
class RunResult:
    rows: list[dict[str, Any]]  # one per island report
    stop_reason: str
    wall_s: float
    best: Candidate | None  # the solution: passing genome, else the best tested/hof
    test: dict[str, Any] | None  # test of ``best``: mean, std, episodes
    solved: bool
    hof: dict[str, Any]  # fitness, island, generation
    coordinator_stats: dict[str, Any]
    tests: list[dict[str, Any]]  # every validation run: fitness, island, generation, mean
    islands: list[IslandInfo]
    restarts: list[int] = dataclasses.field(default_factory=list)  # calls lost per island
    totals: dict[str, float] = dataclasses.field(default_factory=dict)  # evals, episodes...
    offers_rejected: int = 0  # candidates whose island's re-evaluation fell short
    # what failed at the end of the run without stopping it: {"where", "message"}
    errors: list[dict[str, Any]] = dataclasses.field(default_factory=list)


class IslandCalls:
    """One ``evolve`` call in flight per island, each island's inbox for its next call,
    and the resubmission of calls lost to a dead or restarting actor."""

    def __init__(self, handles: list[Any], k: int, max_restarts: int) -> None:
        self.handles, self.k, self.max_restarts = handles, k, max_restarts
        n = len(handles)
        self.inbox: list[dict[str, Any]] = [self._empty() for _ in range(n)]
        self.pending: dict[Any, int] = {}  # call in flight -> island
        self.sent: list[tuple] = [()] * n  # each island's call in flight: its arguments
        self.retry_at: dict[int, float] = {}  # island -> when to resubmit its lost call
        self.failures = [0] * n  # consecutive lost calls per island
        self.lost = [0] * n  # calls lost to a dead/restarting actor, per island
        self.alive = [True] * n
        # whether the run wants candidate offers now (RunLoop: the tester's queue has room)
        self.wants_offers: Callable[[], bool] = lambda: True

    @staticmethod
    def _empty() -> dict[str, Any]:
        return {"immigrants": [], "obs_stats": None}

    def submit(self, i: int, args: tuple | None = None) -> None:
        """Island ``i``'s next call, with its inbox (or the given arguments again)."""
        if args is None:
            box, self.inbox[i] = self.inbox[i], self._empty()
            args = (self.k, box["immigrants"] or None, box["obs_stats"],
                    self.wants_offers())
        self.sent[i] = args
        self.pending[self.handles[i].evolve(*args)] = i

    def deliver(self, i: int, reply: CoordinatorReply) -> None:
        self.inbox[i]["immigrants"].extend(reply.immigrants)
        if reply.obs_stats is not None:
            self.inbox[i]["obs_stats"] = reply.obs_stats

    def resubmit_due(self, now: float) -> None:
        for i in [i for i, t in self.retry_at.items() if now >= t]:
            del self.retry_at[i]
            self.submit(i, self.sent[i])  # the same migrants again: none are lost

    def take(self, ref) -> tuple[int, EvolveResult | None]:
        """The island and result of a finished call; None when the call was lost (the
        island is then resubmitted later, or dropped when it keeps failing)."""
        i = self.pending.pop(ref)
        try:
            result = ray.get(ref)
        except ray.exceptions.RayActorError as e:
            self._lost(i, e)
            return i, None
        except ray.exceptions.RayError as e:
            self.alive[i] = False
            log.error("island %d failed and is dropped from the run: %s", i, root_message(e))
            return i, None
        self.failures[i] = 0
        return i, result

    def _lost(self, i: int, e: Exception) -> None:
        # The island's process died: Ray restarts it (max_restarts) from its checkpoint;
        # resubmit its call until it answers again.
        self.failures[i] += 1
        self.lost[i] += 1
        died = isinstance(e, ray.exceptions.ActorDiedError)
        if self.max_restarts == 0 or self.failures[i] > (5 if died else 60):
            self.alive[i] = False
            log.error("island %d died and is dropped from the run: %s", i, root_message(e))
        else:
            log.warning("island %d is unavailable (%s); resubmitting its call", i,
                        type(e).__name__)
            self.retry_at[i] = time.monotonic() + min(0.5 * self.failures[i], 2.0)

    def busy(self) -> bool:
        return bool(self.pending or self.retry_at)


class CoordinatorOutbox:
    """Island results on their way to the coordinator. Reports it lost while it was down
    (it restarts from its checkpoint) are resent, with the best result seen so far, so no
    emigrant and no hall-of-fame entry is lost."""

    def __init__(self, coordinator, max_restarts: int) -> None:
        self.coordinator, self.max_restarts = coordinator, max_restarts
        self.in_flight: dict[Any, tuple[int, Any]] = {}  # reply -> (island, result ref)
        self.retry: list[tuple[int, Any]] = []
        self.retry_at = 0.0
        self.best_seen: tuple[float, int, Any] | None = None  # (fitness, island, result)

    def send(self, i: int, result_ref, result: EvolveResult) -> None:
        self.in_flight[self.coordinator.report.remote(i, result_ref)] = (i, result_ref)
        fin = [float(x) for x in result.emigrants.fitness if np.isfinite(x)]
        if fin and (self.best_seen is None or max(fin) > self.best_seen[0]):
            self.best_seen = (max(fin), i, result_ref)

    def resend_due(self, now: float) -> None:
        if self.retry and now >= self.retry_at:
            for i, r in self.retry:
                self.in_flight[self.coordinator.report.remote(i, r)] = (i, r)
            self.retry = []

    def take(self, ref) -> tuple[int, CoordinatorReply | None]:
        """The island a finished reply is for, and the reply (None: lost or failed)."""
        i, result_ref = self.in_flight.pop(ref)
        try:
            return i, ray.get(ref)
        except ray.exceptions.RayActorError as e:
            if self.max_restarts == 0:
                log.error("coordinator report for island %d failed: %s", i, root_message(e))
            else:
                self._buffer(i, result_ref, e)
        except ray.exceptions.RayError as e:
            log.error("coordinator report for island %d failed: %s", i, root_message(e))
        return i, None

    def _buffer(self, i: int, result_ref, e: Exception) -> None:
        if not self.retry:
            log.warning("the coordinator is unavailable (%s); buffering reports for it",
                        type(e).__name__)
        self.retry.append((i, result_ref))
        best = self.best_seen
        if best is not None and all(r is not best[2] for _, r in self.retry):
            self.retry.append((best[1], best[2]))
        self.retry_at = time.monotonic() + 0.5


class RunLoop:
    """The state of one run, and one handler per event (see the module docstring)."""

    def __init__(self, arch, on_report=None) -> None:
        self.arch, self.cfg, self.on_report = arch, arch.cfg, on_report
        # A resumed run's clock and metrics go on from where it stopped.
        prior = max((r["wall_s"] for r in arch.prior_rows), default=0.0)
        self.t_start = time.monotonic()
        self.t0 = self.t_start - prior
        self.rows: list[dict[str, Any]] = list(arch.prior_rows)
        self.latest = {int(r["island"]): r for r in self.rows}  # each island's last row
        for info in arch.infos:  # a resumed island's checkpoint may be ahead of its rows
            row = self.latest.get(info.island)
            if row is None or row["generation"] < info.generation:
                self.latest[info.island] = {"generation": info.generation, **info.counters}
        self._totals = self._sum_latest()
        self.calls = IslandCalls(arch.islands, self.cfg.gens_per_call, self.cfg.max_restarts)
        self.calls.wants_offers = self._wants_offers
        self.outbox = CoordinatorOutbox(arch.coordinator, self.cfg.max_restarts)
        self.hof: dict[str, Any] = {"fitness": -math.inf, "island": None, "generation": None}
        self.hof.update(vars(ray.get(arch.coordinator.hof_summary.remote())))  # resumed
        self.queue = CandidateQueue(self.cfg.target)
        self.test_ref, self.test_cand = None, None
        self.tests: list[dict[str, Any]] = []  # every test, for the summary
        self.tested: list[tuple[Candidate, dict[str, Any]]] = []
        self.passed = False
        self.stop_reason = ""
        self.errors: list[dict[str, Any]] = []  # failures at the end that did not stop it
        self.status = {"hof": self.hof, "elapsed": 0.0, "tests": self.tests,
                       "target": self.cfg.target, "rows": self.rows}

    # ---- the loop ----------------------------------------------------------------------
    def run(self) -> str:
        for i, info in enumerate(self.arch.infos):
            # a resumed island may have reached the limit already (its checkpoint can be
            # ahead of the metrics the run wrote before it was killed)
            if not self._at_generation_limit(info.generation):
                self.calls.submit(i)
        try:
            while not self._should_stop():
                self._dispatch_one()
        except KeyboardInterrupt:
            self.stop_reason = "interrupted"
        return self.stop_reason

    def _at_generation_limit(self, generation: int) -> bool:
        """Whether an island at ``generation`` has run ``--generations``."""
        g = self.cfg.generations
        return g is not None and generation >= g

    def _should_stop(self) -> bool:
        now = time.monotonic()
        if self.arch.stop_signal is not None:
            self.stop_reason = "interrupted"
            return True
        self.outbox.resend_due(now)
        self.calls.resubmit_due(now)
        budget = self.cfg.time_budget
        if budget is not None and now - self.t_start >= budget:
            self.stop_reason = "time budget"
            return True
        spent = self._over_budget()
        if spent:
            self.stop_reason = spent
            return True
        if self.passed:
            self.stop_reason = "target"
            return True
        if not self.calls.busy():
            self.stop_reason = "generations" if any(self.calls.alive) else "all islands failed"
            return self.test_ref is None  # a test still running may yet pass
        return False

    def _dispatch_one(self) -> None:
        # Coordinator replies first: when a reply and its island's result are both ready,
        # the migrants are queued before the island is resubmitted.
        refs = list(self.outbox.in_flight) + list(self.calls.pending)
        refs += [self.test_ref] if self.test_ref is not None else []
        budget = self.cfg.time_budget
        timeout = 1.0 if budget is None else max(
            0.0, min(1.0, budget - (time.monotonic() - self.t_start)))
        if not refs:  # only lost calls waiting to be resubmitted
            time.sleep(min(timeout, 0.2))
            return
        ready, _ = ray.wait(refs, num_returns=1, timeout=timeout)
        if not ready:
            return
        ref = ready[0]
        if ref in self.calls.pending:
            self.on_island_result(ref)
        elif ref in self.outbox.in_flight:
            self.on_coordinator_reply(ref)
        else:
            self.on_test_result()
        self._maybe_start_test()

    # ---- handlers ----------------------------------------------------------------------
    def on_island_result(self, ref) -> None:
        i, result = self.calls.take(ref)
        if result is None:
            return
        row = result.report.row()
        row["wall_s"] = time.monotonic() - self.t0
        self.latest[i] = row
        self._totals = self._sum_latest()  # once per report, not once per loop pass
        row.update({f"total_{k}": v for k, v in self._totals.items()})
        self.rows.append(row)
        # The ref, not the value: the coordinator reads it from the object store.
        self.outbox.send(i, ref, result)
        if not self._at_generation_limit(row["generation"]):
            self.calls.submit(i)
        self.queue.offer(i, result, {**self._totals, "wall_s": row["wall_s"]})
        self.status["elapsed"] = row["wall_s"]
        if self.on_report is not None:
            self.on_report(row, self.status)

    def _sum_latest(self) -> dict[str, int]:
        """Evaluations, episodes, env steps and migrants accepted / screened out of all
        islands so far (counts are cumulative per island: the sum of each island's latest
        row)."""
        return {k: int(sum(r.get(k, 0) for r in self.latest.values()))
                for k in ("evals", "episodes", "env_steps", "immigrants", "screened_out")}

    def _over_budget(self) -> str | None:
        """The budget (--max-evals, --max-episodes, --max-env-steps) that is spent."""
        t = self._totals
        for limit, key, name in ((self.cfg.max_evals, "evals", "evaluation budget"),
                                 (self.cfg.max_episodes, "episodes", "episode budget"),
                                 (self.cfg.max_env_steps, "env_steps", "env-step budget")):
            if limit is not None and t[key] >= limit:
                return name
        return None

    def on_coordinator_reply(self, ref) -> None:
        i, reply = self.outbox.take(ref)
        if reply is None:
            return
        self.calls.deliver(i, reply)
        if reply.hof.fitness >= self.hof["fitness"]:  # monotone: a resent report is older
            self.hof.update(vars(reply.hof))

    def on_test_result(self) -> None:
        res, self.test_ref = ray.get(self.test_ref), None
        self.passed = self._record_test(self.test_cand, res)

    def _wants_offers(self) -> bool:
        """Islands re-evaluate candidates for an offer only while the queue has room: with
        a test running and a candidate of every kind waiting, an offer's re-evaluation
        (2 genomes x --confirm-episodes, on the island's CPU) would mostly be discarded.
        BipedalWalker with the population at the target: an offer nearly every generation,
        20 episodes beside a generation of 48."""
        return not self.passed and not (self.test_ref is not None and self.queue.full())

    def _maybe_start_test(self) -> None:
        if self.test_ref is None and not self.passed:
            cand = self.queue.next()
            if cand is not None:
                self.test_cand = cand
                self.test_ref = self.arch.submit_test(cand, len(self.tests))

    def _record_test(self, cand: Candidate, res: dict[str, Any], final: bool = False) -> bool:
        """Log a finished test; True when it passes the target."""
        self.tests.append({"fitness": cand.fitness, "confirmed": cand.confirmed,
                           "confirmed_se": cand.confirmed_se,
                           "island": cand.island,
                           "generation": cand.generation, "kind": cand.kind, **res,
                           "wall_s": time.monotonic() - self.t0, "final": final})
        self.tested.append((cand, res))
        log.info("test of island %d's %s (generation %d, training fitness %.1f, "
                 "re-evaluated %s): mean %.1f over %d episodes%s", cand.island, cand.kind,
                 cand.generation, cand.fitness,
                 "-" if cand.confirmed is None else f"{cand.confirmed:.1f}",
                 res["mean"], res["episodes"],
                 " (screened out)" if res.get("screened_out") else "")
        return passes(res, self.cfg.target)

    # ---- after the loop ----------------------------------------------------------------
    def wrap_up(self) -> RunResult:
        """Final checkpoint of everything (an island writes its own after its call in
        flight), then the islands are not needed; the hall of fame is. The solution is the
        passing genome, else the best genome by a full test: the hall of fame gets one if
        it has none yet (not when interrupted: the user wants out now)."""
        arch, wall_s = self.arch, time.monotonic() - self.t0
        hof, cstats, errors = arch.coordinator_final(self.outbox.in_flight, self.outbox.retry)
        arch.final_checkpoint([h for h, a in zip(arch.islands, self.calls.alive, strict=True)
                               if a])
        for actor in arch.actors:
            ray.kill(actor, no_restart=True)
        interrupted = self.stop_reason == "interrupted"
        if not interrupted:
            self._finish_running_test()
            if not self.passed and hof.params is not None:
                self._test_hall_of_fame(hof)
        best, test = choose_solution(self.tested, self.cfg.target)
        solved = bool(self.cfg.target is not None and test is not None
                      and test["mean"] >= self.cfg.target)
        return RunResult(
            rows=self.rows, stop_reason=self.stop_reason, wall_s=wall_s, best=best,
            test=test, solved=solved, hof=vars(hof.summary()), coordinator_stats=cstats,
            tests=self.tests, islands=arch.infos, restarts=list(self.calls.lost),
            totals=dict(self._totals), offers_rejected=self.queue.rejected,
            errors=errors + self.errors)

    def _finish_running_test(self) -> None:
        if self.test_ref is None or self.passed:
            return
        try:
            self.passed = self._record_test(self.test_cand, ray.get(self.test_ref,
                                                                    timeout=600))
        except (ray.exceptions.RayError, TimeoutError) as e:
            c = self.test_cand
            where = f"final test of island {c.island}'s generation-{c.generation} candidate"
            log.warning("%s: %s", where, root_message(e))
            self.errors.append({"where": where, "message": root_message(e)})

    def _test_hall_of_fame(self, hof) -> None:
        hc = Candidate(np.array(hof.params), float(hof.fitness), int(hof.island),
                       int(hof.generation), hof.obs_stats)
        if untested(hc, self.tested):
            res = ray.get(self.arch.submit_test(hc, len(self.tests), screen=False))
            self._record_test(hc, res, final=True)
