"""Progress output: a live rich table on a terminal, a table updated in place in a Jupyter
notebook, plain log lines otherwise.

One row per island (strategy, generation, best so far, mean fitness of the last generation,
evaluations per second, immigrants received, restarts against stagnation, episodes per
evaluation, which grow under ``--episodes-cap``) and a title with the global best, elapsed
time and the latest test. When stdout is not a terminal (CI,
``ray job`` logs, pipes), the same numbers are printed as one line per island every
``log_interval`` seconds; ``--quiet`` prints nothing but the final summary line. In a
notebook (an IPython kernel's stdout) the same lines are one output that is redrawn every
second (IPython's ``display_id``), as tqdm's notebook bar is: no cursor codes, no scroll.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

from envs.objective import FITNESS, Scale

from ..messages import RunStatus
from ..planning import IslandSpec
from .progress import eta_text, progress


def _fmt(x: float) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    # a function's cost near its optimum (1e-6) is not "0.0"
    return f"{x:.1f}" if 0.1 <= abs(x) < 1e5 or x == 0 else f"{x:.3g}"


NOTEBOOK_REDRAW_S = 1.0  # a notebook's table redraws at most this often


def _in_notebook(stream) -> bool:
    """Whether ``stream`` is the stdout of a Jupyter kernel (an IPython ZMQ shell)."""
    if stream is not sys.stdout or "ipykernel" not in sys.modules:
        return False
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class Display:
    def __init__(self, plan: list[IslandSpec], env: str, quiet: bool = False,
                 log_interval: float = 5.0, stream=None, scale: Scale = FITNESS,
                 budgets: dict[str, float] | None = None) -> None:
        self.stream = stream or sys.stdout
        # values shown in the user's scale: a function's cost, not minus the cost
        self.scale = scale
        self.budgets = dict(budgets or {})  # for the progress and its ETA (output/progress.py)
        self.best_word = "best" if scale.sign > 0 else f"best {scale.word}"
        self.mode = "off" if quiet else ("live" if self.stream.isatty() else
                                          "notebook" if _in_notebook(self.stream) else "log")
        self.env = env
        self.log_interval = float(log_interval)
        self.rows: dict[int, dict[str, Any]] = {s.index: self._blank(s.strategy, s.episodes)
                                                for s in plan}
        self.status = RunStatus()
        self._live = None
        self._handle = None  # the notebook's output, redrawn in place
        self._last_log = time.monotonic()
        self._n_tests = 0
        self._n_events = 0  # an elastic run's events shown so far

    @staticmethod
    def _blank(strategy: str, episodes: int) -> dict[str, Any]:
        return {"strategy": strategy, "generation": 0, "best_so_far": -math.inf,
                "fitness_mean": math.nan, "evals_per_s": 0.0, "immigrants": 0,
                "restarts": 0, "episodes_per_eval": episodes}

    def __enter__(self) -> Display:
        if self.mode == "live":
            from rich.console import Console
            from rich.live import Live

            self._live = Live(get_renderable=self._table, console=Console(file=self.stream),
                              refresh_per_second=4, transient=False)
            self._live.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.mode == "log":  # the final state, however short the run was
            for line in self.lines():
                self.message(line)
        if self.mode == "notebook":
            self._redraw()
            self._handle = None
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
            self._live = None

    def update(self, rep: dict[str, Any], status: dict[str, Any]) -> None:
        # an island that joined an elastic run gets its row with its first report
        self.rows.setdefault(rep["island"], self._blank(
            rep.get("strategy", ""), rep.get("episodes_per_eval", 1))).update(
            {k: rep[k] for k in ("generation", "best_so_far", "fitness_mean", "evals_per_s",
                                 "immigrants")},
            # (rows of runs before restarts / the episode schedule lack them)
            restarts=rep.get("restarts", 0),
            episodes_per_eval=rep.get("episodes_per_eval", self.rows[rep["island"]]
                                      ["episodes_per_eval"]))
        self.status = status
        self._elastic_events(status.elastic)
        if self.mode == "notebook" and time.monotonic() - self._last_log >= NOTEBOOK_REDRAW_S:
            self._redraw()
        if self.mode != "log":
            return
        tests = status.tests
        for t in tests[self._n_tests:]:
            self.message(f"test of island {t['island']} gen {t['generation']}: mean "
                         f"{self._v(t['mean'])} over {t['episodes']} episodes")
        self._n_tests = len(tests)
        now = time.monotonic()
        if now - self._last_log >= self.log_interval:
            self._last_log = now
            for line in self.lines():
                self.message(line)

    def _elastic_events(self, events: list[dict[str, Any]]) -> None:
        """One line per new event of an elastic run; a retired island's row says so."""
        for e in events[self._n_events:]:
            node = f" on node {e['node'][:8]}" if e.get("node") else ""
            ids = ",".join(map(str, e["islands"]))
            self.message(f"elastic: island{'s' * (len(e['islands']) > 1)} {ids} "
                         f"{e['kind']}{node} ({e['why']}); {e['live']} live")
            if e["kind"] == "retired":
                for i in e["islands"]:
                    if i in self.rows:
                        self.rows[i]["strategy"] += " (retired)"
        self._n_events = len(events)

    def _redraw(self) -> None:
        """Draw the notebook's table: the first time below what the run printed so far (its
        plan line), then in place."""
        from IPython.display import Pretty, display

        self._last_log = time.monotonic()
        if self._handle is None:
            self._handle = display(Pretty(self._notebook_text()), display_id=True)
        else:
            self._handle.update(Pretty(self._notebook_text()))

    def _notebook_text(self) -> str:
        """The log lines, and the latest test (which the terminal table's title shows)."""
        tests = self.status.tests
        last = [f"last test: island {tests[-1]['island']} gen {tests[-1]['generation']}, mean "
                f"{self._v(tests[-1]['mean'])} over {tests[-1]['episodes']} episodes"
                ] if tests else []
        return "\n".join(self.lines() + last)

    def _global_best(self) -> float:
        return max((r["best_so_far"] for r in self.rows.values()), default=-math.inf)

    def _progress(self) -> str:
        """`` | 49,520 episodes, best tested 2,767.1, ETA 23 min (max episodes)``."""
        if not self.status.rows:
            return ""
        p = progress(self.status, self.budgets)
        parts = [f"{p.episodes:,} episodes"] if p.episodes else []
        if p.best_tested is not None:
            parts.append(f"best tested {self._v(p.best_tested)}")
        if p.eta_s is not None:
            parts.append(eta_text(p))
        return (" | " + ", ".join(parts)) if parts else ""

    def _v(self, fitness: float | None) -> str:
        """A fitness in the user's scale, formatted."""
        return _fmt(self.scale.user(fitness))

    def lines(self) -> list[str]:
        t = self.status.elapsed
        out = [f"[{t:7.1f}s] {self.env} global {self.best_word} {self._v(self._global_best())}"
               f"{self._progress()}"]
        for i, r in sorted(self.rows.items()):
            out.append(
                f"[{t:7.1f}s]   island {i:2d} {r['strategy']:9s} gen {r['generation']:5d} "
                f"best {self._v(r['best_so_far']):>8s} mean {self._v(r['fitness_mean']):>8s} "
                f"evals/s {r['evals_per_s']:7.1f} immigrants {r['immigrants']} "
                f"restarts {r['restarts']} ep/eval {r['episodes_per_eval']}")
        return out

    def message(self, text: str) -> None:
        if self.mode == "off":
            return
        if self._live is not None:
            self._live.console.print(text)
        else:
            print(text, file=self.stream, flush=True)

    def _table(self):
        from rich.table import Table

        t = self.status.elapsed
        tests = self.status.tests
        last = (f" | last test {self._v(tests[-1]['mean'])} (island {tests[-1]['island']})"
                if tests else "")
        target = self.status.target
        tgt = f" / target {self._v(target)}" if target is not None else ""
        events = self.status.elastic
        live = f" | {events[-1]['live']} islands live" if events else ""
        table = Table(title=f"{self.env}  {t:.0f}s  global {self.best_word} "
                      f"{self._v(self._global_best())}"
                      f"{tgt}{last}{live}{self._progress()}")
        for col in ("island", "strategy", "generation", "best", "mean", "evals/s",
                    "immigrants", "restarts", "ep/eval"):
            table.add_column(col, justify="left" if col == "strategy" else "right")
        for i, r in sorted(self.rows.items()):
            table.add_row(str(i), r["strategy"], str(r["generation"]),
                          self._v(r["best_so_far"]), self._v(r["fitness_mean"]),
                          f"{r['evals_per_s']:.0f}",
                          str(r["immigrants"]), str(r["restarts"]),
                          str(r["episodes_per_eval"]))
        return table
