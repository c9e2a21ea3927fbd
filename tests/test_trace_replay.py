"""A real run replayed on the virtual runtime with the real run's own schedule is the same
run, row for row (benchmarks/trace_replay.py; virtual-time.md, stage 13, where a 2-island
Hopper run with merged observation statistics matched in all 461 rows): the two runtimes
share the island cores, the coordinator core, the loop and the tester, so what a virtual
run changes is only when each call ends. The real run is the session's CLI run (conftest
``cli_run``: two islands of CMA-ES and GA trading migrants every 2 generations, screened on
fresh episodes, restarts from the hall of fame); its replay runs in this process."""

from __future__ import annotations

import argparse
import sys

import pandas as pd
import pytest
from conftest import ROOT, virtual_options

sys.path.insert(0, str(ROOT / "benchmarks"))
import trace_replay  # noqa: E402


@pytest.mark.own_ray  # cli_run: an embedded launcher run, its own Ray
def test_a_real_run_replayed_on_its_own_schedule_is_the_same_run(cli_run, tmp_path):
    real, _ = cli_run
    rows = pd.read_parquet(real / "metrics.parquet")
    assert len(rows) == 40 and rows["immigrants"].max() > 0 and rows["restarts"].max() > 0
    opts = virtual_options(tmp_path, "CartPole-v1")  # the clock only past the real times
    args = argparse.Namespace(cluster=opts["cluster"], calibration=opts["calibration"])
    replay, summary, matched = trace_replay.replay(real, args, tmp_path / "replay")
    assert matched == {"calls": 40, "tests": 2}, matched  # every call and test on schedule
    same, diff = trace_replay.first_difference(rows, replay)
    # fitness, centers, step sizes, immigrants (taken, screened out), restarts, episodes
    assert diff is None and same == 40, diff
    real_summary = pd.read_json(real / "summary.json", typ="series")
    assert summary["runtime"] == "virtual"
    assert summary["total_episodes"] == real_summary["total_episodes"]
