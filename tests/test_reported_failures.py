"""What a run's summary and an experiment's provenance say about what went wrong or went
uncounted, without Ray: migrant batches the coordinator's mailboxes dropped before delivery,
the cap on listed failures, and a GPU that could not be queried. The failures that need Ray
(islands dropped, a coordinator report that raised, an incomplete final checkpoint) are in
tests/test_faults.py."""

from __future__ import annotations

import json
import resource
import subprocess
import sys

from conftest import ROOT, subprocess_env
from fakes import island_result

from islands.coordinator import CoordinatorCore, CoordinatorSpec
from islands.experiment.provenance import gpu_line, gpus, record
from islands.messages import EvolveResult
from islands.output.summary import latency_summary
from islands.runtime.calls import MAX_LISTED, Failures


def _result(i: int, g: int, fitness: float, sent_at: float) -> EvolveResult:
    return island_result(i, g, fitness, sent_at=sent_at)


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


# provenance.py loaded on its own (the islands package imports torch), its gpus()
QUERY = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("provenance", sys.argv[1])
p = importlib.util.module_from_spec(spec)
spec.loader.exec_module(p)
print(json.dumps([*p.gpus(), "torch" in sys.modules]))
"""


def _query(limit_bytes: int | None = None) -> list:
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    proc = subprocess.run([sys.executable, "-c", QUERY,
                           str(ROOT / "islands" / "experiment" / "provenance.py")],
                          cwd=ROOT, env=subprocess_env(),
                          capture_output=True, text=True, timeout=120,
                          preexec_fn=None if limit_bytes is None else limit)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_gpu_that_cannot_be_queried_is_not_reported_as_none():
    # Address space for Python but not for torch's libraries: torch fails to load for real,
    # so the GPUs cannot be asked for (as when its CUDA libraries do not match the driver).
    names, err, _ = _query(260 * 2**20)
    assert names == []
    assert err.startswith("ImportError: ") and "libtorch" in err, err
    assert gpu_line({"gpus": [], "gpu_error": err}) == f"could not query the GPU: {err}"
    # Unrestricted, this machine's answer: its GPUs, or none (a CPU build or no device),
    # with no error either way.
    here, here_err = gpus()
    assert here_err is None and _query() == [here, None, True]
    rec = record({})
    assert rec["gpus"] == here and rec["gpu_error"] is None
    assert gpu_line({"gpus": here, "gpu_error": None}) == (", ".join(here) or "none")
    assert gpu_line({"gpus": []}) == "none"  # provenance recorded before gpu_error existed


def test_the_report_states_a_gpu_query_error(tmp_path):
    import pandas as pd

    from islands.experiment.reports.common import Context, provenance_lines

    err = "RuntimeError: CUDA driver initialization failed"
    p = {"date": "2026-11-27", "commit": "abc", "cpus": 2, "memory_gb": 1, "gpus": [],
         "gpu_error": err, "versions": {}, "env_table": {}, "platform": "Linux"}
    results = pd.DataFrame({"started_at": [], "ended_at": []})
    ctx = Context(tmp_path, {"provenance": p}, results, pd.DataFrame())
    lines = provenance_lines(ctx)
    assert f"- machine: 2 CPUs, 1 GiB, GPU: could not query the GPU: {err} (Linux)" in lines
    p["gpu_error"] = None
    assert "- machine: 2 CPUs, 1 GiB, GPU: none (Linux)" in provenance_lines(ctx)
    p["cpu"] = {"model": "AMD EPYC (cpu family 25, model 17, stepping 1)", "simd": "avx512f",
                "flags": "30614b81"}
    assert ("- machine: 2 CPUs (AMD EPYC (cpu family 25, model 17, stepping 1), avx512f, "
            "flags 30614b81), 1 GiB, GPU: none (Linux)") in provenance_lines(ctx)
