"""The run loop's traffic: island calls, batched per host process, and reports to the
coordinator, batched the same way.

Islands that share a worker process (``planning.HostSpec``) are called together: one
``evolve_batch`` per process carries every one of its islands that is due, and its results
go to the coordinator as one ``report_batch``. A process serves its islands' calls one after
another anyway (or side by side, for evaluators that wait), so this changes no island's
work; what it saves is a Ray call and a driver event per island report, which at a thousand
islands was most of the driver's and the coordinator's CPU (docs/results/scale.md). A
process with one island makes batches of one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..messages import CoordinatorReply, Emigrants, EvolveResult, IslandCall, IslandFailure
from .port import CallFailed, CallLost, Runtime

log = logging.getLogger("islands.driver")

Batch = list[tuple[int, EvolveResult]]  # (island, result) of one host's call
MAX_LISTED = 50  # failures of one kind listed in summary.json's errors; the rest counted


class Failures:
    """Failures met during the run that did not stop it (a dropped island, a report the
    coordinator failed on), for summary.json's ``errors`` beside the log: the first
    :data:`MAX_LISTED`, then a count, so that a coordinator failing on every report cannot
    fill the summary."""

    def __init__(self, kind: str) -> None:
        self.kind, self.listed, self.unlisted = kind, [], 0

    def add(self, where: str, message: str) -> None:
        if len(self.listed) < MAX_LISTED:
            self.listed.append({"where": where, "message": message})
        else:
            self.unlisted += 1

    def entries(self) -> list[dict[str, str]]:
        more = [{"where": self.kind, "message": f"{self.unlisted} more not listed (see the "
                 "log)"}] if self.unlisted else []
        return self.listed + more


@dataclass
class IslandSlot:
    """One island as the loop calls it: its host, the mail for its next call, its call
    queued or in flight (kept to resend when lost) and what became of its calls."""

    host: int
    immigrants: list[Emigrants] = field(default_factory=list)
    obs_stats: dict[str, Any] | None = None  # merged statistics, the latest only
    call: IslandCall | None = None
    retry_at: float | None = None  # when to resubmit its lost call
    failures: int = 0  # consecutive lost calls
    lost: int = 0  # calls lost to a dead or restarting actor, over the run
    alive: bool = True
    retired: bool = False  # an elastic run let it go (not a failure)


class IslandCalls:
    """One call in flight per island (its host's batch), each island's mail for its next
    call, and the resubmission of calls lost to a dead or restarting process: one
    :class:`IslandSlot` per island, the batching per host process. ``runtime`` sends the
    batches and reads their results (``port.Runtime``)."""

    def __init__(self, runtime: Runtime, hosts: list[int], k: int, max_restarts: int) -> None:
        self.runtime, self.k, self.max_restarts = runtime, k, max_restarts
        self.slots: list[IslandSlot] = []
        self.queued: dict[int, list[int]] = {}  # host -> islands whose call waits for it
        self.busy_hosts: set[int] = set()
        self.pending: dict[Any, tuple[int, list[int]]] = {}  # batch -> (host, islands)
        self.dropped = Failures("islands dropped")  # islands that failed or died for good
        for h in hosts:
            self.add(h)
        # whether the run wants candidate offers now (RunLoop: the tester's queue has room)
        self.wants_offers: Callable[[], bool] = lambda: True

    def add(self, host: int) -> int:
        """One more island, served by process ``host``, numbered after the others; returns
        its index."""
        self.queued.setdefault(host, [])
        self.slots.append(IslandSlot(host))
        return len(self.slots) - 1

    def __len__(self) -> int:
        return len(self.slots)

    def host(self, i: int) -> int:
        return self.slots[i].host

    def alive(self) -> list[bool]:
        """Per island: still called (not failed, dropped or retired)."""
        return [s.alive for s in self.slots]

    def lost(self) -> list[int]:
        """Per island: calls lost to a dead or restarting actor (Ray restarted it)."""
        return [s.lost for s in self.slots]

    def islands_of(self, h: int) -> list[int]:
        return [i for i, s in enumerate(self.slots) if s.host == h and s.alive]

    def retire_host(self, h: int) -> list[int]:
        """Stop calling host ``h``'s islands (an elastic run retires them); returns them.
        A batch of theirs still in flight is taken and dropped."""
        islands = self.islands_of(h)
        for i in islands:
            slot = self.slots[i]
            slot.alive, slot.retired, slot.retry_at = False, True, None
        self.queued[h] = []
        return islands

    def submit(self, i: int, call: IslandCall | None = None) -> None:
        """Queue island ``i``'s next call, with its mail (or the given call again);
        :meth:`flush` sends it. A retired island is not called again."""
        slot = self.slots[i]
        if slot.retired:
            return
        if call is None:
            call = IslandCall(i, self.k, slot.immigrants or None, slot.obs_stats,
                              self.wants_offers())
            slot.immigrants, slot.obs_stats = [], None
        slot.call = call
        self.queued[slot.host].append(i)

    def flush(self) -> None:
        """Send each idle host one batch with every call queued for it."""
        for h, islands in self.queued.items():
            if islands and h not in self.busy_hosts:
                calls = [self.slots[i].call for i in islands]
                self.pending[self.runtime.evolve(h, calls)] = (h, islands)
                self.busy_hosts.add(h)
                self.queued[h] = []

    def deliver(self, i: int, reply: CoordinatorReply) -> None:
        self.slots[i].immigrants.extend(reply.immigrants)
        if reply.obs_stats is not None:
            self.slots[i].obs_stats = reply.obs_stats

    def set_obs_stats(self, i: int, obs_stats: dict[str, Any]) -> None:
        """Merged statistics for island ``i``'s next call (a joining island's first)."""
        self.slots[i].obs_stats = obs_stats

    def resubmit_due(self, now: float) -> None:
        for i, slot in enumerate(self.slots):
            if slot.retry_at is not None and now >= slot.retry_at:
                slot.retry_at = None
                self.submit(i, slot.call)  # the same migrants again: none are lost

    def take(self, ref) -> tuple[list[int], Batch]:
        """The islands of a finished batch, in order, and the (island, result) pairs of the
        calls that succeeded; an island whose call was lost is resubmitted later (or dropped
        when it keeps failing), one whose call raised is dropped."""
        h, islands = self.pending.pop(ref)
        self.busy_hosts.discard(h)
        if all(self.slots[i].retired for i in islands):
            return islands, []
        try:
            results = self.runtime.get(ref)
        except CallLost as e:
            for i in islands:
                self._lost(i, e)
            return islands, []
        except CallFailed as e:
            results = [IslandFailure(i, str(e)) for i in islands]
        out = []
        for i, r in zip(islands, results, strict=True):
            slot = self.slots[i]
            if slot.retired:
                continue
            if isinstance(r, IslandFailure):
                slot.alive = False
                log.error("island %d failed and is dropped from the run: %s", i, r.message)
                self.dropped.add(f"island {i}",
                                 f"failed and was dropped from the run: {r.message}")
            else:
                slot.failures = 0
                out.append((i, r))
        return islands, out

    def _lost(self, i: int, e: CallLost) -> None:
        # The island's process died: Ray restarts it (max_restarts) from its checkpoint;
        # resubmit its call until it answers again.
        slot = self.slots[i]
        slot.failures += 1
        slot.lost += 1
        if self.max_restarts == 0 or slot.failures > (5 if e.died else 60):
            slot.alive = False
            log.error("island %d died and is dropped from the run: %s", i, e)
            self.dropped.add(f"island {i}", f"died and was dropped from the run (calls "
                             f"lost in a row: {slot.failures}): {e}")
        else:
            log.warning("island %d is unavailable (%s); resubmitting its call", i, e)
            slot.retry_at = self.runtime.clock() + min(0.5 * slot.failures, 2.0)

    def busy(self) -> bool:
        return bool(self.pending or any(s.retry_at is not None for s in self.slots)
                    or any(self.queued.values()))


class CoordinatorOutbox:
    """Island results on their way to the coordinator, one ``report_batch`` per host batch
    (the batch's object ref: the coordinator reads it from the object store). Reports it
    lost while it was down (it restarts from its checkpoint) are resent, with the best
    result seen so far, so no emigrant and no hall-of-fame entry is lost."""

    def __init__(self, runtime: Runtime, max_restarts: int) -> None:
        self.runtime, self.max_restarts = runtime, max_restarts
        # reply -> (island per position of the batch, None where it failed; batch ref)
        self.in_flight: dict[Any, tuple[list[int | None], Any]] = {}
        self.retry: list[tuple[list[int | None], Any]] = []
        self.retry_at = 0.0
        self.best_seen: tuple[float, list[int | None], Any] | None = None
        self.failed = Failures("coordinator reports failed")

    def send(self, ids: list[int | None], ref, batch: Batch):
        """Report a host batch: ``ids`` names the island at each position of the batch
        ``ref`` holds (None: its call failed, nothing to report). Returns the reply's ref."""
        reply = self.runtime.report(ids, ref)
        self.in_flight[reply] = (ids, ref)
        fin = [float(x) for _, r in batch for x in r.emigrants.fitness if np.isfinite(x)]
        if fin and (self.best_seen is None or max(fin) > self.best_seen[0]):
            self.best_seen = (max(fin), ids, ref)
        return reply

    def resend_due(self, now: float) -> None:
        if self.retry and now >= self.retry_at:
            for ids, r in self.retry:
                self.in_flight[self.runtime.report(ids, r)] = (ids, r)
            self.retry = []

    def take(self, ref) -> list[tuple[int, CoordinatorReply]]:
        """(island, reply) for each island of a finished report (none: lost or failed)."""
        ids, batch_ref = self.in_flight.pop(ref)
        try:
            replies = self.runtime.get(ref)
        except CallLost as e:
            if self.max_restarts == 0:
                self._failed(ids, e)
            else:
                self._buffer(ids, batch_ref, e)
            return []
        except CallFailed as e:
            self._failed(ids, e)
            return []
        return [(i, r) for i, r in zip(ids, replies, strict=True) if i is not None]

    def _failed(self, ids: list[int | None], e: Exception) -> None:
        # The report's hall-of-fame update and migrants are lost (those of the batch's
        # islands before the one it failed on were taken; their reply, with their mail, not).
        log.error("coordinator report for islands %s failed: %s", _named(ids), e)
        self.failed.add(f"coordinator report of island {_named(ids)} during the run",
                        f"{e} (its hall-of-fame update and migrants are lost)")

    def _buffer(self, ids: list[int | None], batch_ref, e: Exception) -> None:
        if not self.retry:
            log.warning("the coordinator is unavailable (%s); buffering reports for it", e)
        self.retry.append((ids, batch_ref))
        best = self.best_seen
        if best is not None and all(r is not best[2] for _, r in self.retry):
            self.retry.append((best[1], best[2]))
        self.retry_at = self.runtime.clock() + 0.5


def _named(ids: list[int | None]) -> str:
    """``3`` or ``0,1,5``: the islands of a batch report."""
    return ",".join(str(i) for i in ids if i is not None)
