"""An island's hooks and counters (islands.island.hooks, islands.island.counters) without
Ray: the points at which hooks run, what they may change, their checkpointed state, one
set of counts for the report row, the checkpoint and the island's info, the debug exit.
CartPole through the Gymnasium backend (tests/island_core.py), CMA-ES, popsize 8."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
from island_core import island, island_cfg, row

from islands.island.counters import Counters
from islands.island.hooks import Hook
from islands.messages import Emigrants
from islands.persistence.checkpointing import CheckpointSpec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Recorder(Hook):
    """Records the points it runs at, and the fitness the strategy is told."""

    state_key = "recorder"

    def __init__(self) -> None:
        self.points: list[str] = []
        self.told: list[np.ndarray] = []
        self.loaded = "never"

    def before_generation(self, island) -> None:
        self.points.append(f"before {island.generation}")

    def evaluated(self, island, gen) -> None:
        self.points.append(f"evaluated {island.generation}")

    def after_generation(self, island, gen) -> None:
        self.points.append(f"after {island.generation}")
        self.told.append(np.array(gen.fitness))

    def after_call(self, island, call) -> None:
        self.points.append(f"call {island.generation}")

    def state_dict(self):
        return {"points": len(self.points)}

    def load_state(self, island, d) -> None:
        self.loaded = d


class Shift(Hook):
    """Tells the strategy every fitness plus 1000 (what a ranking probe's mean may do)."""

    def evaluated(self, island, gen) -> None:
        gen.fitness = gen.fitness + 1000.0


def test_hooks_run_at_their_points_in_order_once_per_generation_and_call():
    a = island(island_cfg())
    try:
        rec = Recorder()
        a.hooks.append(rec)
        a.evolve(2)
        a.evolve(1)
        assert rec.points == ["before 0", "evaluated 0", "after 1",
                              "before 1", "evaluated 1", "after 2", "call 2",
                              "before 2", "evaluated 2", "after 3", "call 3"]
        # after_generation sees the fitness the strategy was told: the report's last one
        assert a.evolve(1).report.fitness_max == rec.told[-1].max()
    finally:
        a.close()


def test_a_hook_that_changes_the_fitness_before_tell_changes_what_the_strategy_learns():
    plain, shifted = island(island_cfg()), island(island_cfg())
    try:
        shifted.hooks.insert(0, Shift())
        p, s = row(plain), row(shifted)
        # the same episodes, told 1000 more: the rows and the best say so, the counts agree
        assert s["fitness_max"] == p["fitness_max"] + 1000.0
        assert s["best_so_far"] == p["best_so_far"] + 1000.0
        assert (s["evals"], s["episodes"], s["env_steps"]) == (
            p["evals"], p["episodes"], p["env_steps"])
    finally:
        plain.close()
        shifted.close()


def checkpointing(tmp_path):
    """(config, checkpoint directory, an island checkpointing there every generation)."""
    cfg, ck = island_cfg(), str(tmp_path / "ck")
    return cfg, ck, island(cfg, CheckpointSpec(ck, interval=1))


def test_a_hooks_state_goes_into_the_checkpoint_and_comes_back(tmp_path):
    cfg, ck, a = checkpointing(tmp_path)
    try:
        a.hooks.append(Recorder())
        a.evolve(2)
        assert a.get_state()["recorder"] == {"points": 7}
        b = island(cfg, CheckpointSpec(ck))  # a's checkpoints, not loaded yet
        rec = Recorder()
        b.hooks.append(rec)
        assert b.restore() and rec.loaded == {"points": 7} and b.generation == 2
        b.hooks.append(fresh := Recorder())
        b.set_state({k: v for k, v in a.get_state().items() if k != "recorder"})
        assert fresh.loaded is None  # a checkpoint written without that hook
        b.close()
    finally:
        a.close()


def test_one_set_of_counters_feeds_the_report_the_checkpoint_and_the_info(tmp_path):
    cfg, ck, a = checkpointing(tmp_path)
    try:
        good = Emigrants(np.full((2, a.dim), 0.1), np.array([50.0, 40.0]), source=1)
        bad = Emigrants(np.zeros((3, a.dim + 1)), np.zeros(3), source=2)
        a.evolve(1)
        rep = a.evolve(2, [good, bad]).report
        c = a.counters
        assert (c.evals, c.episodes, c.immigrants, c.rejected, c.calls) == (24, 24, 2, 3, 2)
        assert {k: getattr(rep, k) for k in c.reported()} == c.reported()
        assert set(c.reported()) == {"evals", "episodes", "env_steps", "frames", "immigrants",
                                     "rejected", "reevaluations", "screened_out",
                                     "adopted"}
        assert a.get_state()["counters"] == a.info().counters == c.state_dict()
        b = island(cfg, CheckpointSpec(ck, load=True))
        try:
            assert b.counters == a.counters and b.info().counters == a.info().counters
            assert row(b) == row(a)  # and it counts on alike
        finally:
            b.close()
    finally:
        a.close()


def test_counters_missing_from_an_older_checkpoint_start_at_zero():
    old = {"evals": 16, "episodes": 16, "env_steps": 300, "frames": 300, "immigrants": 1,
           "rejected": 0, "calls": 2}  # before held_off, reevaluations, screened_out,
    c = Counters.from_state_dict(old)  # adopted and rounds
    assert c.held_off == c.reevaluations == c.screened_out == c.adopted == c.rounds == 0
    assert c.state_dict() == {**old, "held_off": 0, "reevaluations": 0, "screened_out": 0,
                              "adopted": 0, "rounds": 0}


def test_counters_of_a_checkpoint_written_under_their_older_names_load():
    c = Counters.from_state_dict({"evals": 4, "confirmations": 3})  # before the rename
    assert (c.evals, c.reevaluations) == (4, 3) and "confirmations" not in c.state_dict()


def _debug_exit_script(reconstructed: bool) -> str:
    return textwrap.dedent(f"""
        import dataclasses, sys
        sys.path.insert(0, "tests")
        from island_core import island_cfg
        from islands.island.core import IslandCore
        from islands.planning import plan_islands
        cfg = island_cfg()
        spec = dataclasses.replace(plan_islands(cfg, [2.0])[0], debug_exit_after_gen=2)
        core = IslandCore(spec, cfg.eval_spec(), run_seed=cfg.seed,
                          reconstructed={reconstructed})
        for _ in range(4):
            core.evolve(1)
            print("generation", core.generation, flush=True)
    """)


def test_the_debug_exit_kills_the_process_at_its_generation_once():
    runs = {r: subprocess.run([sys.executable, "-c", _debug_exit_script(r)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
            for r in (False, True)}
    died, carried_on = runs[False], runs[True]
    assert died.returncode == 1, died.stderr
    assert died.stdout.split("\n")[:-1] == ["generation 1", "generation 2"]
    assert "debug exit at generation 2" in died.stderr
    assert carried_on.returncode == 0, carried_on.stderr  # a restarted island carries on
    assert carried_on.stdout.split("\n")[-2] == "generation 4"

