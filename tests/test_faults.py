"""Dying islands: a crashed or killed island actor is restarted by Ray, reloads its last
checkpoint, the run loop resubmits its lost call, and the run finishes."""

from __future__ import annotations

import os
import re

import numpy as np
import ray
from test_archipelago import cfg_of, drive

from islands.output.summary import summarize
from islands.persistence.storage import island_file
from islands.planning import plan_islands
from islands.runtime.archipelago import Archipelago


def test_dying_islands_restart_from_their_checkpoints(ray_session, tmp_path):
    # Island 1 exits its own process at generation 5 (debug hook); island 2 is killed from
    # outside (ray.kill with restart) when it reports generation 3.
    cfg = cfg_of(islands=3, generations=10, namespace="t-faults", out=str(tmp_path / "run"),
                 checkpoint_interval=2, checkpoint_seconds=0, debug_exit_island=1,
                 debug_exit_after_gen=5, strategy="cmaes,openai-es,ga")
    plan = plan_islands(cfg, [2.0])
    arch = Archipelago(cfg, plan)
    hof_seen: list[float] = []
    killed = []

    def on_report(rep, status):
        hof_seen.append(status.hof["fitness"])
        if rep["island"] == 2 and rep["generation"] >= 3 and not killed:
            killed.append(rep["generation"])
            ray.kill(arch.islands[2].actor, no_restart=False)

    result = drive(arch, on_report)
    assert result.stop_reason == "generations"
    assert result.restarts[0] == 0 and result.restarts[1] >= 1 and result.restarts[2] >= 1
    for i in range(3):
        gens = [r["generation"] for r in result.rows if r["island"] == i]
        assert gens[-1] == 10, (i, gens)
    # Island 1 died before generation 6: it goes on from its checkpoint at 4, not from 0.
    g1 = [r["generation"] for r in result.rows if r["island"] == 1]
    assert g1[:5] == [1, 2, 3, 4, 5] and g1[5] == 5 and g1 == sorted(g1)
    g2 = [r["generation"] for r in result.rows if r["island"] == 2]
    k = g2.index(killed[0])
    assert min(g2[k + 1:]) >= 3  # resumed from a checkpoint at >= 2, so reports go on at 3+
    assert len(hof_seen) == len(result.rows)
    h = np.array(hof_seen)
    h = h[np.isfinite(h)]  # (-inf until the coordinator's first reply)
    assert len(h) and np.all(np.diff(h) >= 0)  # the global best never decreases
    assert result.hof["fitness"] == max(hof_seen)


def test_a_dying_coordinator_restarts_and_no_emigrant_or_best_is_lost(ray_session, tmp_path):
    cfg = cfg_of(islands=2, generations=14, namespace="t-coord", out=str(tmp_path / "run"),
                 checkpoint_interval=4, checkpoint_seconds=0, migration_interval=1,
                 strategy="cmaes,ga")
    arch = Archipelago(cfg, plan_islands(cfg, [2.0]))
    hof_seen: list[float] = []
    killed: list[int] = []

    def on_report(rep, status):
        hof_seen.append(status.hof["fitness"])
        if len(status.rows) >= 8 and not killed:
            killed.append(len(status.rows))
            ray.kill(arch.coordinator, no_restart=False)

    result = drive(arch, on_report)
    assert killed and result.stop_reason == "generations"
    for i in range(2):  # the islands kept evolving to the end
        assert max(r["generation"] for r in result.rows if r["island"] == i) == 14
    # Every report reached the coordinator, before or after its restart, except at most
    # those it had taken since its last checkpoint (every 4 generations x 2 islands).
    assert result.coordinator_stats["reports"] >= len(result.rows) - 8
    h = np.array(hof_seen)
    h = h[np.isfinite(h)]
    assert np.all(np.diff(h) >= 0)
    # No best is lost: the hall of fame is the best genome any island ever reported.
    assert result.hof["fitness"] == max(r["fitness_max"] for r in result.rows)


# A node that dies mid-run, its islands restarted on other nodes from their checkpoints: in
# test_scale.py's 16-node cluster (a quarter of the nodes lost), which shares one Cluster
# with the placement checks instead of starting a head of its own here.


def test_failures_at_the_end_are_reported_not_swallowed(ray_session, tmp_path):
    """The final candidate test that raised and a report the coordinator failed on at
    shutdown are logged and returned as errors (summary.json's ``errors``); the reports in
    flight beside them still reach the hall of fame."""
    from islands.candidates import Candidate
    from islands.runtime.loop import RunLoop

    @ray.remote
    def broken_test():
        raise RuntimeError("tester out of memory")

    cfg = cfg_of(islands=2, generations=3, namespace="t-end-errors", out=str(tmp_path / "run"))
    arch = Archipelago(cfg, plan_islands(cfg, [2.0]))
    try:
        arch.start()
        arch.wait_ready()
        loop = RunLoop(arch)
        loop.run()
        dim = arch.infos[0].dim
        loop.lane.ref = broken_test.remote()
        loop.lane.job = ("test", Candidate(np.zeros(dim), 1.0, 0, 3, None))
        bad = ray.put("not an EvolveResult")
        loop.outbox.in_flight[arch.coordinator.report_batch.remote([1], bad)] = ([1], bad)
        result = loop.wrap_up()
    finally:
        arch.shutdown()
    errors = {e["where"]: e["message"] for e in result.errors}
    assert errors["final test of island 0's generation-3 sample"] == (
        "RuntimeError: tester out of memory")
    assert "coordinator report of island 1 at shutdown" in errors
    # every island report was taken, and the malformed one counted before it failed
    assert result.coordinator_stats["reports"] == len(result.rows) + 1


def test_islands_that_fail_or_die_for_good_are_dropped_and_reported(ray_session, tmp_path):
    """Island 1's checkpoint cannot be written (a directory stands where its file goes), so
    its call raises at its first checkpoint; island 2's process is killed for good
    (``no_restart``) mid-run. Both are dropped, island 0 runs to the end, and summary.json's
    errors name both with why."""
    cfg = cfg_of(islands=3, generations=8, namespace="t-dropped", out=str(tmp_path / "run"),
                 checkpoint_interval=2, checkpoint_seconds=0, migration_interval=1)
    os.makedirs(os.path.join(cfg.checkpoint_uri, island_file(1)))
    plan = plan_islands(cfg, [2.0])
    arch = Archipelago(cfg, plan)
    killed: list[int] = []

    def on_report(rep, status):
        if rep["island"] == 2 and rep["generation"] >= 3 and not killed:
            killed.append(rep["generation"])
            ray.kill(arch.islands[2].actor, no_restart=True)

    result = drive(arch, on_report)
    assert killed and result.stop_reason == "generations"
    assert max(r["generation"] for r in result.rows if r["island"] == 0) == 8
    assert max(r["generation"] for r in result.rows if r["island"] == 1) == 1
    errors = {e["where"]: e["message"] for e in result.errors}
    assert errors["island 1"].startswith(
        "failed and was dropped from the run: IsADirectoryError"), errors
    # Ray's max_restarts is unlimited, so the loop tried again before it gave up on it
    assert re.match(r"died and was dropped from the run \(calls lost in a row: \d+\): ",
                    errors["island 2"]), errors
    assert "killed" in errors["island 2"], errors
    summary = summarize(cfg, plan, arch.infos, result, 0.0)
    assert summary["errors"] == result.errors
    lat = summary["migration"]["latency_s"]
    # island 1's and 2's mailboxes kept receiving after they were gone: dropped batches
    assert lat["dropped"] > 0 and 0 < lat["dropped_share"] < 1, lat
    assert lat["dropped"] == result.coordinator_stats["superseded"]


def test_a_failed_coordinator_report_and_an_incomplete_final_checkpoint_are_reported(
        ray_session, tmp_path):
    """A report the coordinator raises on mid-run loses its hall-of-fame update and
    migrants: the run goes on, and the summary's errors say where and why. An island whose
    process is gone by the final checkpoint leaves its previous checkpoint: also an error,
    not only a warning in the log."""
    from islands.runtime.loop import RunLoop

    cfg = cfg_of(islands=2, generations=6, namespace="t-run-errors", out=str(tmp_path / "run"),
                 checkpoint_interval=2, checkpoint_seconds=0)
    plan = plan_islands(cfg, [2.0])
    arch = Archipelago(cfg, plan)
    sent: list[int] = []
    try:
        arch.start()
        arch.wait_ready()

        def on_report(rep, status):
            if rep["island"] == 0 and rep["generation"] >= 2 and not sent:
                sent.append(rep["generation"])
                bad = ray.put(["not an EvolveResult"])
                loop.outbox.send([0], bad, [])

        loop = RunLoop(arch, on_report)
        loop.run()
        ray.kill(arch.islands[1].actor, no_restart=True)
        result = loop.wrap_up()
    finally:
        arch.shutdown()
    assert sent and result.stop_reason == "generations"
    for i in range(2):  # the failed report stopped nothing
        assert max(r["generation"] for r in result.rows if r["island"] == i) == 6
    errors = {e["where"]: e["message"] for e in result.errors}
    msg = errors["coordinator report of island 0 during the run"]
    assert msg.startswith("AttributeError: ") and "hall-of-fame update and migrants" in msg
    assert errors["final checkpoint of island 1"].startswith(
        "incomplete (its previous checkpoint stays): "), errors
    assert "final checkpoint of island 0" not in errors
    assert "final checkpoint of the coordinator" not in errors
    assert summarize(cfg, plan, arch.infos, result, 0.0)["errors"] == result.errors
