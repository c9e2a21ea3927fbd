"""How the experiment runner sizes and spaces trials (fast: pure functions of the runner,
no Ray started).

A trial whose islands each ask for a CPU that the cluster cannot give falls back to equal
shares (and says so); a trial keeps the cores it uses to itself, so on a 2-core machine
trials run one at a time; a run that raised is recorded with why.
"""

from __future__ import annotations

import pytest

from islands.config import from_dict, resolve
from islands.runtime.sweep import _plan_one, exclusive_concurrency, exclusive_cpus, failure_of

LAPTOP = [{"CPU": 2.0, "memory": 8e9}]


def cfg(**kw):
    return resolve(from_dict({"env": "CartPole-v1", **kw}), check_env=False)


@pytest.mark.parametrize("islands, share, shared", [(1, 1.0, False), (2, 1.0, False),
                                                     (4, 0.5, True), (16, 0.125, True)])
def test_one_cpu_per_island_where_the_machine_has_them(islands, share, shared):
    got, bundles, was_shared = _plan_one(cfg(islands=islands, cpus_per_island=1), LAPTOP)
    assert (got, was_shared) == (share, shared)
    assert sum(b["CPU"] for b in bundles) == pytest.approx(min(islands, 2))


def test_trials_keep_their_cores_to_themselves():
    one = [{"CPU": 1.0}]
    assert exclusive_cpus(one) == 2  # its island's core + coordinator, tester, driver
    assert exclusive_cpus([{"CPU": 0.25}] * 4) == 5  # a 0.25 share still runs a thread
    plans = {"a": type("P", (), {"exclusive_cpus": 2})(),
             "b": type("P", (), {"exclusive_cpus": 3})()}
    assert exclusive_concurrency(plans, 2.0) == 1  # a laptop: one at a time
    assert exclusive_concurrency(plans, 16.0) == 5
    assert exclusive_concurrency({}, 2.0) == 2


def test_a_failed_run_is_recorded_with_its_reason():
    assert failure_of(MemoryError("cannot allocate 10 GB")) == {
        "status": "oom", "reason": "MemoryError: cannot allocate 10 GB"}
    assert failure_of(ValueError("bad\nthe last line says why")) == {
        "status": "crashed", "reason": "the last line says why"}


def test_a_virtual_trial_keeps_its_share_and_books_one_node_whole():
    """Its islands live on its cluster file's nodes (8-CPU islands on a 2-core laptop), and
    it runs in the trial's process with its evaluators on all the cores: one at a time."""
    c = cfg(runtime="virtual", cluster="cluster/virtual/c64.yaml", islands="fill",
            cpus_per_island=8)
    assert c.islands == 8
    share, bundles, shared = _plan_one(c, LAPTOP)
    assert (share, bundles, shared) == (8, [{"CPU": 2.0}], False)
    assert exclusive_concurrency({"t": type("P", (), {"exclusive_cpus":
                                                      exclusive_cpus(bundles)})()}, 2.0) == 1
