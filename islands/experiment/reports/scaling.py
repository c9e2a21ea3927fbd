"""The ``network-scaling`` and ``worker-scaling`` reports: the two scaling answers of the
research plan, stated with their uncertainty.

- 8.1 network scaling: N_max is the largest parameter count at which full CMA-ES solved in
  at least half its runs *at that size and at every smaller size tried* (a size that
  failed below it ends the count: "solved up to N" is never said past a failure). The
  answer gives the success rates with Wilson intervals at N_max and at the first size that
  failed, and says when that failure came from the clock rather than the evaluation budget.
  Another strategy overtakes CMA-ES at a size only where the intervals say so: success
  intervals that do not overlap, or equal success and Kaplan-Meier intervals of the
  evaluations to solve that do not overlap; with fewer than MIN_RUNS runs in a cell,
  nothing is claimed.
- 8.4 worker scaling: efficiency = A(k) x R(k), the algorithmic factor E(k0) / E(k)
  (evaluations to solve, counted on any machine) times the system factor r(k) / r(k0)
  (evaluations per second per island, measured only where each island had a core of its
  own and no other trial ran beside it); :func:`islands.experiment.cells.speedup_table`.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..cells import per_config, speedup_table
from ..figures import (
    EFFICIENCY_GOAL,
    evals_vs_params,
    s_per_gen_vs_params,
    speedup_vs_islands,
    success_vs_params,
    throughput_vs_islands,
)
from ..stats import overlap
from .common import (
    Context,
    evals_cell,
    few,
    fmt,
    footnotes,
    md_table,
    rate_cell,
    wall_cell,
    with_interval,
)

BASELINE = "cmaes"  # the strategy whose breakdown 8.1 looks for


# ---- 8.1 network scaling ---------------------------------------------------------------
def scaling_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per (parameter count, strategy), smallest network first."""
    return (per_config(results, ["num_params", "strategy"])
            .sort_values(["num_params", "strategy"], ignore_index=True))


def _success(r: pd.Series) -> tuple[float, float]:
    return r.success_low, r.success_high


def _overtakes(c: pd.Series, s: pd.Series) -> str | None:
    """Why strategy row ``s`` is shown to beat the baseline row ``c`` at one size, or
    None (intervals overlap, or too few runs)."""
    if few(c.runs, s.runs):
        return None
    if s.success_rate > c.success_rate and not overlap(_success(s), _success(c)):
        return f"success {rate_cell(s)} vs {rate_cell(c)}"
    same = overlap(_success(s), _success(c))
    if same and s.solved and not overlap((s.evals_low, s.evals_high),
                                               (c.evals_low, c.evals_high)) \
            and s.evals_to_solve < c.evals_to_solve:
        return (f"success not different, median evaluations to solve "
                f"{with_interval(s.evals_to_solve, s.evals_low, s.evals_high)} vs "
                f"{with_interval(c.evals_to_solve, c.evals_low, c.evals_high)}")
    return None


def _n_max(base: pd.DataFrame) -> tuple[pd.Series | None, pd.Series | None]:
    """(the N_max row, the first failing row) of the baseline's rows, smallest first."""
    last = None
    for _, r in base.iterrows():
        if not (r.runs and r.success_rate >= 0.5):
            return last, r
        last = r
    return last, None


def scaling_answer(results: pd.DataFrame) -> dict[str, Any]:
    """N_max (None if CMA-ES failed at the smallest size), the row where it broke, and the
    crossover: the smallest size at which another strategy is shown to beat CMA-ES."""
    t = scaling_table(results)
    base = t[t["strategy"] == BASELINE]
    top, broke = _n_max(base)
    crossover = None
    for _, c in base.iterrows():  # smallest size first
        rivals = t[(t["num_params"] == c.num_params) & (t["strategy"] != BASELINE)]
        for _, s in rivals.iterrows():
            why = _overtakes(c, s)
            if why and crossover is None:
                crossover = {"num_params": int(s.num_params), "strategy": s.strategy,
                             "hidden": s.hidden, "why": why}
    return {"table": t, "n_max": None if top is None else int(top.num_params),
            "n_max_hidden": None if top is None else top.hidden, "top": top, "broke": broke,
            "crossover": crossover, "runs": sorted(set(int(n) for n in t["runs"]))}


def _broke_clause(b: pd.Series) -> str:
    clause = (f"at {int(b.num_params):,} (hidden {b.hidden}) it solved {rate_cell(b)}")
    if b.stopped_by_clock:
        clause += (f", but {b.stopped_by_clock} of its {b.runs} runs were stopped by the "
                   "clock before the evaluation budget, so this failure is the clock's and "
                   "the answer at the evaluation budget is not known there")
    return clause


def scaling_sentence(ans: dict[str, Any], env: str) -> str:
    t = ans["table"]
    if t.empty:
        return "No finished runs yet."
    if BASELINE not in set(t["strategy"]):
        return f"No {BASELINE} runs, so no N_max (strategies run: {', '.join(t['strategy'])})."
    n = "/".join(str(x) for x in ans["runs"])
    top, broke = ans["top"], ans["broke"]
    if top is None:
        first = (f"Full CMA-ES did not solve {env} in at least half its runs at the smallest "
                 f"size tried: {_broke_clause(broke)}; N_max is below that size")
    else:
        first = (f"Full CMA-ES solved {env} in at least half its runs at every size up to "
                 f"N_max = {int(top.num_params):,} parameters (hidden {top.hidden}: "
                 f"{rate_cell(top)})")
        first += (f"; {_broke_clause(broke)}, so the breakdown lies between the two"
                  if broke is not None else "; it did not fail at any size tried, so N_max "
                  "is at least the largest size tried")
    first += f" (runs per cell: {n}; 95% intervals)"
    c = ans["crossover"]
    if c is None:
        return (first + ". No other strategy was shown to beat it at any size (its intervals "
                "overlap CMA-ES's, or a cell has fewer than 5 runs): no difference shown.")
    return (first + f". {c['strategy']} is shown to beat it from {c['num_params']:,} "
            f"parameters (hidden {c['hidden']}: {c['why']}).")


def network_scaling_report(ctx: Context) -> list[str]:
    r = ctx.done
    ans = scaling_answer(r)
    t = ans["table"]
    table = pd.DataFrame({
        "parameters": t["num_params"], "hidden": t["hidden"], "strategy": t["strategy"],
        "runs": t["runs"], "solved/runs [95% CI]": [rate_cell(x) for _, x in t.iterrows()],
        "median evals to solve [95% CI]": [evals_cell(x) for x in t.itertuples()],
        "median s/gen": t["s_per_gen"], "max peak mem (MB)": t["peak_mem_mb"],
        "clock-stopped": t["stopped_by_clock"], "failed": t["n_crashed"] + t["n_oom"]})
    env = ", ".join(map(str, r["env"].dropna().unique())) if len(r) else "the task"
    n_max = "none" if ans["n_max"] is None else format(ans["n_max"], ",")
    return ["## Network scaling (plan 8.1)", "", *md_table(table), "", *footnotes(r),
            f"**N_max** (largest network that full CMA-ES solved in >= half its runs, at that "
            f"size and every smaller one): {n_max}.", "",
            f"**Answer.** {scaling_sentence(ans, env)}", "",
            ctx.figure("success_vs_params", success_vs_params(r), "success rate"),
            ctx.figure("evals_vs_params", evals_vs_params(r), "evaluations to solve"),
            ctx.figure("s_per_gen_vs_params", s_per_gen_vs_params(r),
                       "seconds per generation"), ""]


# ---- 8.4 worker scaling ----------------------------------------------------------------
def _k_verdict(r: pd.Series, k0: float, cores: float | None) -> tuple[str, str]:
    """(kind, clause) of one k against the plan's 0.7: kind in meets / short / open /
    unmeasured."""
    if math.isnan(r.algorithmic) and not math.isnan(r.algorithmic_bound):
        return _bound_verdict(r, cores)
    if math.isnan(r.algorithmic) and not math.isnan(r.algorithmic_upper):
        return _upper_verdict(r, k0, cores)
    a = with_interval(r.algorithmic, r.algorithmic_low, r.algorithmic_high)
    if not r.system_measured:
        where = f" (this machine has {cores:g} cores)" if cores else ""
        return "unmeasured", (f"k = {r.islands:g}: algorithmic factor A = {a}; system factor "
                              f"not measured here{where}")
    eff = with_interval(r.efficiency, r.efficiency_low, r.efficiency_high)
    clause = f"k = {r.islands:g}: efficiency {eff} (A = {a}, R = {fmt(r.system, 3)})"
    goal = EFFICIENCY_GOAL
    if math.isnan(r.efficiency) or few(r.runs):
        return "open", clause + f"; no conclusion (n = {r.runs})"
    if r.efficiency_low > goal:
        return "meets", clause
    if r.efficiency_high < goal:
        return "short", clause
    return "open", clause + f"; its interval contains {goal:g}"


def _bound_verdict(r: pd.Series, cores: float | None) -> tuple[str, str]:
    """E(k0) not reached, E(k) reached: A(k) has a lower bound only."""
    a = f"A > {fmt(r.algorithmic_bound, 3)} (E(k0) not reached within its budget)"
    if not r.system_measured:
        where = f" (this machine has {cores:g} cores)" if cores else ""
        return "unmeasured", (f"k = {r.islands:g}: algorithmic factor {a}; system factor not "
                              f"measured here{where}")
    bound = r.algorithmic_bound * r.system
    clause = (f"k = {r.islands:g}: efficiency > {fmt(bound, 3)} ({a}, R = "
              f"{fmt(r.system, 3)})")
    if few(r.runs):
        return "open", clause + f"; no conclusion (n = {r.runs})"
    if bound > EFFICIENCY_GOAL:
        return "meets", clause
    return "open", clause + f"; the bound does not reach {EFFICIENCY_GOAL:g}"


def _upper_verdict(r: pd.Series, k0: float, cores: float | None) -> tuple[str, str]:
    """E(k) not reached, E(k0) reached: A(k) has an upper bound only."""
    goal = EFFICIENCY_GOAL
    a = (f"A < {fmt(r.algorithmic_upper, 3)} (E({r.islands:g}) not reached within its "
         "budget)")
    if r.system_measured:
        bound = r.algorithmic_upper * r.system
        clause = f"k = {r.islands:g}: efficiency < {fmt(bound, 3)} ({a}, R = {fmt(r.system, 3)})"
        if bound < goal and not few(r.runs):
            return "short", clause
        return "open", clause + f"; the bound does not fall below {goal:g}"
    need = goal / r.algorithmic_upper if r.algorithmic_upper > 0 else math.inf
    where = f" (this machine has {cores:g} cores)" if cores else ""
    return "unmeasured", (f"k = {r.islands:g}: algorithmic factor {a}; system factor not "
                          f"measured here{where}; efficiency > {goal:g} would need R > "
                          f"{fmt(need, 3)}")


def speedup_sentence(t: pd.DataFrame, cores: float | None = None) -> str:
    """The verdict against the plan's > 0.7x linear speedup, k by k."""
    if t.empty:
        return "No finished runs yet."
    k0 = t["islands"].iloc[0]
    if not math.isfinite(t["evals_to_solve"].iloc[0]) and t["algorithmic_bound"].isna().all():
        return (f"No speedup can be stated: more than half the runs did not solve at k = "
                f"{k0:g} nor at any other k (E(k) not reached).")
    verdicts = [_k_verdict(r, k0, cores) for _, r in t.iloc[1:].iterrows()]
    if not verdicts:
        return f"Only k = {k0:g} ran: no speedup to state."
    kinds = {"meets": [], "short": [], "open": [], "unmeasured": []}
    for kind, clause in verdicts:
        kinds[kind].append(clause)
    names = {"meets": "meets the plan's > 0.7x linear", "short": "falls short of 0.7x linear",
             "open": "no difference from 0.7x linear shown",
             "unmeasured": "efficiency not known here"}
    parts = [f"{names[k]}: " + "; ".join(v) for k, v in kinds.items() if v]
    return (f"Against k = {k0:g} (n = {'/'.join(str(n) for n in t['runs'])} runs per k): "
            + ". ".join(parts) + ".")


def _a_cell(r: Any) -> str:
    if math.isnan(r.algorithmic) and not math.isnan(r.algorithmic_bound):
        return f"> {fmt(r.algorithmic_bound, 3)}"
    if math.isnan(r.algorithmic) and not math.isnan(r.algorithmic_upper):
        return f"< {fmt(r.algorithmic_upper, 3)}"
    return with_interval(r.algorithmic, r.algorithmic_low, r.algorithmic_high)


def worker_scaling_report(ctx: Context) -> list[str]:
    t = speedup_table(ctx.results)
    cores = (ctx.meta.get("provenance") or {}).get("cpus")
    table = pd.DataFrame({
        "islands k": t["islands"], "solved/runs [95% CI]": [rate_cell(r) for _, r in t.iterrows()],
        "E(k): median evals to solve [95% CI]": [evals_cell(r) for r in t.itertuples()],
        "A(k) = E(1)/E(k)": [_a_cell(r) for r in t.itertuples()],
        "r(k): evals/s per island": t["rate"], "R(k) = r(k)/r(1)": t["system"],
        "env steps/s per island (ratio)": [
            "—" if math.isnan(x) else f"{fmt(x)} ({x / t['step_rate'].iloc[0]:.3g})"
            for x in t["step_rate"]],
        "efficiency A x R": [with_interval(r.efficiency, r.efficiency_low, r.efficiency_high)
                             for r in t.itertuples()],
        "speedup": t["speedup"],
        "T(k): median wall to solve, s [95% CI]": [wall_cell(r) for r in t.itertuples()],
        "trials at once": t["concurrency"], "shared CPUs": t["shared_cpus"]}) \
        if len(t) else pd.DataFrame()
    r = ctx.done
    lines = ["## Worker scaling (plan 8.4)", ""]
    lines += md_table(table) if len(t) else ["No finished runs yet."]
    lines += ["", "E(k): Kaplan-Meier median of the evaluations (all islands) to a passing test, "
              "unsolved runs censored at their budget. A(k): the algorithmic factor; its "
              "interval takes every ratio the two medians' intervals allow (wider than 95%). "
              "r(k): median evaluations per second per island over runs whose islands each "
              "had a core and that ran alone (— where none did: \"shared CPUs\" or other "
              "trials beside them); R(k) its ratio to k = 1; efficiency = A(k) x R(k) "
              "(= S(k)/k), whose interval is A's times R (R's own noise left out); the "
              "plan asks for > 0.7. Env steps per second per island is the hardware's "
              "part alone: evaluations of better policies run longer episodes, so r(k) also "
              "moves with how far the runs got. T(k): where R(k) was measured.", "",
              *footnotes(r, t)]
    return lines + [f"**Answer.** {speedup_sentence(t, cores)}", "",
                    ctx.figure("speedup_vs_islands", speedup_vs_islands(r), "speedup"),
                    ctx.figure("throughput_vs_islands", throughput_vs_islands(r),
                               "throughput"), ""]
