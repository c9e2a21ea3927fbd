"""What a run's summary and an experiment's provenance say about what went wrong or went
uncounted, without Ray: migrant batches the coordinator's mailboxes dropped before delivery,
the cap on listed failures, and a GPU that could not be queried. The failures that need Ray
(islands dropped, a coordinator report that raised, an incomplete final checkpoint) are in
tests/test_faults.py."""

from __future__ import annotations

import numpy as np

from islands.coordinator import CoordinatorCore, CoordinatorSpec
from islands.messages import Emigrants, EvolveResult, IslandReport
from islands.output.summary import latency_summary
from islands.runtime.calls import MAX_LISTED, Failures


def _result(i: int, g: int, fitness: float, sent_at: float) -> EvolveResult:
    f = np.array([fitness])
    return EvolveResult(report=IslandReport(island=i, strategy="cmaes", generation=g),
                        emigrants=Emigrants(np.tile(f[:, None], (1, 3)), f, i, g, sent_at))


def test_batches_superseded_in_a_mailbox_are_counted_as_dropped():
    c = CoordinatorCore(CoordinatorSpec(n_islands=3, topology="ring", migrants=1,
                                        migration_interval=1))
    # island 0 emigrates three times to island 1 before island 1 reports: the first two
    # batches are replaced undelivered
    for g in (1, 2, 3):
        c.report(0, _result(0, g, float(g), sent_at=100.0 + g))
    mail = c.report(1, _result(1, 1, 0.0, sent_at=200.0)).immigrants
    assert [b.sent_at for b in mail] == [103.0]  # only the newest arrives
    c.report(2, _result(2, 1, 0.0, sent_at=300.0))  # takes island 1's batch
    c.report(0, _result(0, 4, 4.0, sent_at=104.0))  # takes island 2's batch
    st = c.stats()
    assert st["superseded"] == 2 and st["batches_delivered"] == 3
    # the latencies the islands measured cover the 3 delivered batches only; the summary
    # states the 2 dropped beside them
    lat = latency_summary([0.5, 0.1, 0.2], st)
    assert lat["n"] == 3 and lat["dropped"] == 2 and lat["dropped_share"] == 2 / 5
    assert latency_summary([], {})["dropped_share"] is None
    # the counts survive a coordinator checkpoint (and an old one without them loads)
    state = c.get_state()
    again = CoordinatorCore(CoordinatorSpec(n_islands=3, topology="ring"))
    again.set_state(state)
    assert again.stats()["superseded"] == 2 and again.stats()["batches_delivered"] == 3
    del state["superseded"], state["batches_delivered"]
    again.set_state(state)
    assert again.stats()["superseded"] == 0


def test_failures_past_the_cap_are_counted_not_listed():
    f = Failures("coordinator reports failed")
    for k in range(MAX_LISTED + 3):
        f.add(f"report {k}", "boom")
    entries = f.entries()
    assert len(entries) == MAX_LISTED + 1 and entries[0] == {"where": "report 0",
                                                             "message": "boom"}
    assert entries[-1] == {"where": "coordinator reports failed",
                           "message": "3 more not listed (see the log)"}
