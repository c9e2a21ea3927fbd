"""The asynchronous run loop; it runs in the launcher process.

Who does what:

- Each island evolves ``gens_per_call`` generations per call; :class:`.calls.IslandCalls`
  keeps exactly one call in flight per island, sent with the other calls due in its worker
  process as one batch (islands/runtime/calls.py).
- The runtime (``port.Runtime``: Ray's actors, or a virtual clock) hands back whatever
  finished; one handler per kind of event takes each:
  :meth:`RunLoop.on_island_result` forwards a batch to the coordinator through the
  :class:`.calls.CoordinatorOutbox` (the object ref, so the data go store-to-store), then
  per island records the report, offers its best to the
  :class:`~islands.candidates.CandidateQueue` and resubmits it at once with whatever its
  inbox holds; :meth:`RunLoop.on_coordinator_reply` puts the replies' migrants and
  statistics into the islands' inboxes for their next call; :meth:`RunLoop.on_test_result`
  records a candidate's test. Nobody blocks on anybody: a slow island is simply
  resubmitted less often, so it migrates less.
- Stop: per-island generation limit, time budget, a confirmed genome, or a signal. A
  candidate test (on ``test_episodes`` fresh episodes, on the tester actor) runs whenever
  one is queued and none is running; a passing one is confirmed on ``retest_episodes`` other
  fresh episodes before anything else runs (:class:`~islands.candidates.Validation`).
- Faults: a lost island call is resubmitted with the same arguments (no migrant is lost)
  once Ray has restarted the island from its checkpoint; reports the coordinator lost while
  it restarted are resent, with the best result seen so far.

Keeping the loop in the driver (not in the coordinator) means a dead coordinator can be
restarted without losing the islands' calls in flight.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import math
from typing import Any

from ..candidates import Candidate
from ..messages import EvolveResult, IslandInfo, RunStatus
from .calls import CoordinatorOutbox, IslandCalls
from .port import Runtime
from .testlane import TestLane

log = logging.getLogger("islands.driver")
LATENCY_SAMPLES = 100_000  # migration latencies kept for the summary's percentiles
REPLY_WAIT_S = 1.0  # longest an island's next call waits for its last report's reply


@dataclasses.dataclass
class RunResult:
    rows: list[dict[str, Any]]  # one per island report
    stop_reason: str
    wall_s: float
    best: Candidate | None  # the solution: confirmed genome, else the best tested/hof
    test: dict[str, Any] | None  # the test that selected ``best``: mean, std, episodes
    solved: bool  # ``best`` passed its test and its confirmation (where one runs)
    hof: dict[str, Any]  # fitness, island, generation
    coordinator_stats: dict[str, Any]
    tests: list[dict[str, Any]]  # every test and confirmation: role, island, generation, mean
    islands: list[IslandInfo]
    restarts: list[int] = dataclasses.field(default_factory=list)  # calls lost per island
    totals: dict[str, float] = dataclasses.field(default_factory=dict)  # evals, episodes...
    offers_rejected: int = 0  # candidates whose island's re-evaluation fell short
    # what failed without stopping the run (a dropped island, a failed coordinator report,
    # an incomplete final checkpoint, a final test): {"where", "message"}
    errors: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    # seconds from emigration to the receiving island's call taking the batch (the last
    # LATENCY_SAMPLES of them)
    migration_latency_s: list[float] = dataclasses.field(default_factory=list)
    # an elastic run's range, counts and events (runtime/elastic.py); None: fixed islands
    elastic: dict[str, Any] | None = None
    retest: dict[str, Any] | None = None  # ``best``'s confirmation on fresh episodes


def run_loop(runtime: Runtime, on_report=None,
             prior_rows: list[dict[str, Any]] | None = None) -> RunResult:
    """Drive ``runtime``'s islands until a stop condition, then wrap up (either runtime)."""
    loop = RunLoop(runtime, on_report, prior_rows)
    loop.run()
    return loop.wrap_up()


class RunLoop:
    """The state of one run, and one handler per event (see the module docstring). It
    drives the islands through ``runtime`` (``port.Runtime``: Ray's or a virtual clock's)
    and never names the runtime itself; ``prior_rows``: the metrics of the run being
    resumed."""

    def __init__(self, runtime: Runtime, on_report=None,
                 prior_rows: list[dict[str, Any]] | None = None) -> None:
        self.rt, self.cfg, self.on_report = runtime, runtime.cfg, on_report
        prior_rows = list(prior_rows or [])
        # A resumed run's clock and metrics go on from where it stopped.
        prior = max((r["wall_s"] for r in prior_rows), default=0.0)
        self.t_start = runtime.clock()
        self.t0 = self.t_start - prior
        self.rows: list[dict[str, Any]] = prior_rows
        self.latest = {int(r["island"]): r for r in self.rows}  # each island's last row
        for info in runtime.infos:  # a resumed island's checkpoint may be ahead of its rows
            row = self.latest.get(info.island)
            if row is None or row["generation"] < info.generation:
                self.latest[info.island] = {"generation": info.generation, **info.counters}
        self._totals = self._sum_latest()
        self.calls = IslandCalls(runtime, runtime.island_hosts(), self.cfg.gens_per_call,
                                 self.cfg.max_restarts)
        self.errors: list[dict[str, Any]] = []  # failures at the end that did not stop it
        self.lane = TestLane(runtime, self.cfg, lambda: self.rt.clock() - self.t0, self.errors)
        self.tests = self.lane.tests  # every test and confirmation, for the summary
        self.calls.wants_offers = self.lane.wants_offers
        self.outbox = CoordinatorOutbox(runtime, self.cfg.max_restarts)
        self.hof: dict[str, Any] = {"fitness": -math.inf, "island": None, "generation": None}
        self.hof.update(vars(runtime.start_hof))  # a resumed run's
        self.stop_reason = ""
        self.latencies: collections.deque = collections.deque(maxlen=LATENCY_SAMPLES)
        # coordinator reply -> (islands whose next call waits for it, until when)
        self.awaiting: dict[Any, tuple[list[int], float]] = {}
        self.elastic = runtime.plug_in(self.calls, (self.t0, self.t_start), self._joined)
        self.status = RunStatus(self.hof, self.cfg.fitness_target, self.rows, self.tests,
                                self.elastic.events, resumed_at=prior,
                                start_totals={f"total_{k}": v for k, v in self._totals.items()})

    # ---- the loop ----------------------------------------------------------------------
    def run(self) -> str:
        for i, info in enumerate(self.rt.infos):
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
        now = self.rt.clock()
        stop = self.rt.stop_reason()  # a signal ("interrupted") or a request
        if stop is not None:
            self.stop_reason = stop
            return True
        self.outbox.resend_due(now)
        self.elastic.poll(now)
        self._resubmit_overdue(now)
        self.calls.resubmit_due(now)
        budget = self.cfg.time_budget
        if budget is not None and now - self.t_start >= budget:
            self.stop_reason = "time budget"
            return True
        spent = self._over_budget()
        if spent:
            self.stop_reason = spent
            return True
        if self.lane.solved:
            self.stop_reason = "target"
            return True
        if not self.calls.busy() and not self.awaiting:
            self.stop_reason = "generations" if any(self.calls.alive()) else "all islands failed"
            return self.lane.ref is None  # a test still running may yet pass
        return False

    def _dispatch_one(self) -> None:
        """Handle whatever is ready (the runtime hands back every future done by then).
        Coordinator replies first: when a reply and its island's result are both ready,
        the migrants are queued before the island is resubmitted."""
        self.calls.flush()
        refs = list(self.outbox.in_flight) + list(self.calls.pending)
        refs += [self.lane.ref] if self.lane.ref is not None else []
        joining = self.elastic.joining
        refs += list(joining)
        budget = self.cfg.time_budget
        timeout = 1.0 if budget is None else max(
            0.0, min(1.0, budget - (self.rt.clock() - self.t_start)))
        if not refs:  # only lost calls waiting to be resubmitted
            self.rt.idle(min(timeout, 0.2))
            return
        ready = self.rt.wait(refs, timeout)
        if not ready:
            return
        replies = [r for r in ready if r in self.outbox.in_flight]
        for ref in replies + [r for r in ready if r not in self.outbox.in_flight]:
            if ref in self.calls.pending:
                self.on_island_result(ref)
            elif ref in self.outbox.in_flight:
                self.on_coordinator_reply(ref)
            elif self.lane.ref is not None and ref == self.lane.ref:
                self.on_test_result()
            elif ref in joining:
                self.elastic.on_joined(ref)
        self.lane.start_next()

    def _joined(self, i: int, counters: dict[str, Any]) -> None:
        """An elastic run's new island ``i`` answered: its counters start the totals' row."""
        self.latest[i] = counters

    # ---- handlers ----------------------------------------------------------------------
    def on_island_result(self, ref) -> None:
        """A host's batch: its reports go to the coordinator together, then one by one
        into the rows, the resubmissions and the candidate queue."""
        islands, batch = self.calls.take(ref)
        if not batch:
            return
        done = dict(batch)
        # the ref, not the values: the coordinator reads the batch from the object store
        reply = self.outbox.send([i if i in done else None for i in islands], ref, batch)
        for i, result in batch:
            self._on_result(i, result)
        # each island's next call carries this report's reply (the migrants posted to it
        # meanwhile, merged statistics); if the coordinator is slow or down, it goes
        # without after REPLY_WAIT_S
        due = [i for i, _ in batch if not self._at_generation_limit(self.latest[i]["generation"])]
        self.awaiting[reply] = (due, self.rt.clock() + REPLY_WAIT_S)

    def _on_result(self, i: int, result: EvolveResult) -> None:
        self.elastic.saw(i, result.node)
        row = result.report.row()
        row["wall_s"] = self.rt.clock() - self.t0
        self._add_to_totals(self.latest.get(i, {}), row)
        self.latest[i] = row
        row.update({f"total_{k}": v for k, v in self._totals.items()})
        self.rows.append(row)
        self.latencies.extend(result.migration_latency_s)
        self.lane.queue.offer(i, result, {**self._totals, "wall_s": row["wall_s"]})
        self.status.elapsed = row["wall_s"]
        if self.on_report is not None:
            self.on_report(row, self.status)

    def _add_to_totals(self, before: dict[str, Any], row: dict[str, Any]) -> None:
        """The totals move by island ``i``'s counters since its last row (they are
        cumulative per island): constant work per report, where summing every island's
        latest row cost O(islands) per report (docs/results/scale.md)."""
        for k in self._totals:
            self._totals[k] += int(row.get(k, 0)) - int(before.get(k, 0))

    def _sum_latest(self) -> dict[str, int]:
        """Evaluations, episodes, env steps and migrants accepted / screened out of all
        islands so far (counts are cumulative per island: the sum of each island's latest
        row)."""
        return {k: int(sum(r.get(k, 0) for r in self.latest.values()))
                for k in ("evals", "episodes", "env_steps", "immigrants", "screened_out",
                          "adopted")}

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
        for i, reply in self.outbox.take(ref):
            self.calls.deliver(i, reply)
            if reply.hof.fitness >= self.hof["fitness"]:  # monotone: a resent one is older
                self.hof.update(vars(reply.hof))
            if reply.stop and self.rt.stop_reason() is None:  # islands.status --stop
                self.rt.request_stop(reply.stop)
        self._resubmit(ref)

    def _resubmit(self, reply) -> None:
        """Submit the islands that waited for ``reply`` (answered, failed or overdue)."""
        for i in self.awaiting.pop(reply, ((), 0.0))[0]:
            self.calls.submit(i)

    def _resubmit_overdue(self, now: float) -> None:
        for reply in [r for r, (_, t) in self.awaiting.items() if now >= t]:
            self._resubmit(reply)

    def on_test_result(self) -> None:
        self.lane.on_result()

    # ---- after the loop ----------------------------------------------------------------
    def wrap_up(self) -> RunResult:
        """Final checkpoint of everything (an island writes its own after its call in
        flight), then the islands are not needed; the hall of fame is. The solution is the
        passing genome, else the best genome by a full test: the hall of fame gets one if
        it has none yet (not when interrupted: the user wants out now)."""
        rt, wall_s = self.rt, self.rt.clock() - self.t0
        hof, cstats, errors = rt.coordinator_final(self.outbox.in_flight, self.outbox.retry)
        starting = self.elastic.starting()
        errors += rt.final_checkpoint([i for i, a in enumerate(self.calls.alive())
                                       if a and i not in starting])
        rt.release_islands()
        if self.stop_reason != "interrupted":
            self.lane.finish(hof, self._found_at)
        v = self.lane.validation
        chosen = v.solution()
        return RunResult(
            rows=self.rows, stop_reason=self.stop_reason, wall_s=wall_s,
            best=None if chosen is None else chosen.cand,
            test=None if chosen is None else chosen.test, solved=v.solved,
            retest=None if chosen is None else chosen.retest,
            hof=vars(hof.summary()), coordinator_stats=cstats,
            tests=self.tests, islands=rt.infos, restarts=self.calls.lost(),
            totals=dict(self._totals), offers_rejected=self.lane.queue.rejected,
            errors=self.calls.dropped.entries() + self.outbox.failed.entries() + errors
            + self.errors, migration_latency_s=list(self.latencies),
            elastic=self.elastic.summary())

    def _found_at(self, island: int, generation: int) -> dict[str, float]:
        """The run's totals at the report in which ``island`` reached ``generation`` (where
        the hall of fame's genome came from); the last report's when none is recorded."""
        keys = ("evals", "episodes", "env_steps")
        for r in self.rows:
            if int(r["island"]) == island and int(r["generation"]) >= generation \
                    and "total_evals" in r:
                return {**{k: r[f"total_{k}"] for k in keys}, "wall_s": r["wall_s"]}
        return {**{k: self._totals[k] for k in keys},
                "wall_s": self.rt.clock() - self.t0}
