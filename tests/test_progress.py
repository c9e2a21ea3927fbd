"""A long run's progress (islands/output/progress.py): its episodes, the best return on fresh
episodes and an ETA to its budget, in the terminal's live table, the log lines and
TensorBoard."""

from __future__ import annotations

import io

import pytest

from islands.config import from_dict, resolve
from islands.messages import RunStatus
from islands.output.display import Display
from islands.output.progress import budgets_of, eta_text, progress
from islands.output.scalars import ScalarLog
from islands.planning import plan_islands


def status(episodes: int, elapsed: float, tests=(), resumed_at: float = 0.0) -> RunStatus:
    row = {"island": 0, "generation": 7, "best_so_far": 2766.8, "fitness_mean": 2500.0,
           "evals_per_s": 20.0, "immigrants": 0, "total_episodes": episodes,
           "total_evals": episodes, "total_env_steps": 1000 * episodes, "wall_s": elapsed}
    return RunStatus(rows=[row], tests=list(tests), elapsed=elapsed, resumed_at=resumed_at)


def test_the_eta_is_the_first_budget_at_the_rate_so_far_and_the_best_is_a_full_tests():
    tests = [{"mean": 3000.0, "screened_out": True}, {"mean": 2500.0}, {"mean": 2700.0}]
    p = progress(status(36_000, 1_800.0, tests), {"max_episodes": 72_000.0})
    assert (p.episodes, p.best_tested, p.budget) == (36_000, 2700.0, "max_episodes")
    assert p.eta_s == pytest.approx(1_800.0) and eta_text(p) == "ETA 30 min (max episodes)"
    # a time budget counts this session's clock: a resumed run began 1,000 s into it
    p = progress(status(36_000, 1_800.0, resumed_at=1_000.0),
                 {"max_episodes": 72_000.0, "time_budget": 900.0})
    assert p.budget == "time_budget" and p.eta_s == pytest.approx(100.0)
    assert progress(status(10, 5.0), {}).eta_s is None
    cfg = resolve(from_dict({"env": "CartPole-v1", "max_episodes": 500, "time_budget": 60}),
                  check_env=False)
    assert budgets_of(cfg) == {"time_budget": 60.0, "max_episodes": 500.0}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("stream", [io.StringIO, Terminal])
def test_the_live_table_and_the_log_lines_say_episodes_best_and_eta(stream):
    from rich.console import Console

    cfg = resolve(from_dict({"env": "CartPole-v1", "islands": 1}), check_env=False)
    out = stream()
    with Display(plan_islands(cfg, [1.0]), "Walker2d-v4", stream=out, log_interval=0,
                 budgets={"max_episodes": 72_000.0}) as d:
        st = status(36_000, 1_800.0, [{"mean": 2700.0, "island": 0, "generation": 5,
                                       "episodes": 100}])
        d.update(st.rows[0], st)
        if d.mode == "live":  # the table a terminal shows, drawn as rich draws it
            table = d._table()
            Console(file=io.StringIO(), width=120).print(table)
            shown = str(table.title)
        else:
            shown = out.getvalue()
    assert "36,000 episodes, best tested 2700.0, ETA 30 min (max episodes)" in shown, shown


def test_tensorboard_gets_the_eta_and_the_best_tested_mean(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log = ScalarLog(tmp_path, 1, budgets={"max_episodes": 72_000.0})
    st = status(36_000, 1_800.0, [{"mean": 2700.0}])
    log.log(st.rows[0], st)
    log.close()
    acc = EventAccumulator(str(tmp_path / "tb" / "archipelago")).Reload()
    assert acc.Scalars("budget/eta_s")[0].value == pytest.approx(1_800.0)
    assert acc.Scalars("test/best_mean")[0].value == pytest.approx(2700.0)
