"""How far a long run has got: its totals, the best return measured on fresh episodes, and
when its budget will be spent at the rate so far.

A Walker2d or Humanoid run takes hours on 2 cores; its live table, log lines and TensorBoard
say how many training episodes it has spent, the best mean of any full test on fresh
episodes (a selecting test or a confirmation: the training fitness is the maximum of noisy
evaluations, not a return the policy holds), and an ETA to the first budget it will reach
(``--max-episodes``, ``--max-evals``, ``--max-env-steps`` at the run's average rate so far;
``--time-budget`` by the clock of this session, as the loop counts it). A resumed run's rate
is this session's: its totals at the start (``RunStatus.start_totals``) over its seconds
since (``RunStatus.resumed_at``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..candidates import stopped_early
from ..messages import RunStatus

# budget field -> the row's total it bounds
COUNTED = {"max_episodes": "total_episodes", "max_evals": "total_evals",
           "max_env_steps": "total_env_steps"}


@dataclass(frozen=True)
class Progress:
    episodes: int = 0
    best_tested: float | None = None  # best mean of a full test on fresh episodes
    eta_s: float | None = None  # seconds until the first budget is spent; None: no budget
    budget: str | None = None  # the budget that ends first ("max_episodes", ...)


def budgets_of(cfg) -> dict[str, float]:
    """The run's budgets that are set: ``time_budget`` and the ``COUNTED`` ones."""
    names = ("time_budget", *COUNTED)
    return {n: float(getattr(cfg, n)) for n in names if getattr(cfg, n, None) is not None}


def progress(status: RunStatus, budgets: dict[str, float]) -> Progress:
    """The run's progress after its latest report (``status.rows[-1]``)."""
    row = status.rows[-1] if status.rows else {}
    full = [t["mean"] for t in status.tests
            if not stopped_early(t) and math.isfinite(t.get("mean", math.nan))]
    etas = {}
    session = float(status.elapsed) - float(status.resumed_at)  # seconds of this session
    for name, limit in budgets.items():
        if name == "time_budget":
            etas[name] = limit - session
            continue
        done = float(row.get(COUNTED[name], 0) or 0)
        since = done - float(status.start_totals.get(COUNTED[name], 0) or 0)
        if since > 0 and session > 0:
            etas[name] = (limit - done) / (since / session)
    first = min(etas, key=etas.get) if etas else None
    return Progress(int(row.get("total_episodes", 0) or 0), max(full) if full else None,
                    None if first is None else max(0.0, etas[first]), first)


def eta_text(p: Progress) -> str:
    """``ETA 23 min (max_episodes)``, or "" without a budget."""
    if p.eta_s is None:
        return ""
    s = p.eta_s
    when = f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"
    return f"ETA {when} ({p.budget.replace('_', ' ')})"


def scalars(p: Progress) -> dict[str, Any]:
    """What TensorBoard gets of it (the archipelago's writer)."""
    return {"budget/eta_s": p.eta_s, "test/best_mean": p.best_tested}
