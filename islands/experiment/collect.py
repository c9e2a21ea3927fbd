"""Reading an experiment directory into two tables: ``results`` (one row per planned
trial, with what became of it) and ``curves`` (one row per island report, with the
archipelago's best so far). :mod:`.store` writes them to parquet and reads them back.

Reads only what the launcher leaves in ``runs/<trial>/`` (``summary.json``,
``metrics.parquet``, ``config.yaml``) plus the runner's ``trial.json``, Tune's ``error.txt``
and the experiment's ``experiment.json``, as plain files: no Ray, and nothing from the spec
module, so a report can be rendered anywhere the directory is copied to.

Every trial is a row with a ``status`` (:data:`.cells.STATUSES`) and its ``reason``
(:func:`status_of`): a run that crashed or ran out of memory stays in its cell as a
failure, and times to solve are survival data: ``evals_used`` / ``episodes_used`` /
``wall_used`` are the time to solve of a solved run and, for the others, the budget they
stopped on (censored there). A run is solved when its selecting test *and* its confirmation
on fresh episodes reached the target (``confirmed``; None: solved on its test alone, in a
summary written before confirmations). Columns that mix Python types are stored as strings
(:func:`_parquet_safe`), so the table collected here and the one read back from
``results.parquet`` render the same report.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..candidates import stopped_early
from ..output.segments import read as read_segments
from ..output.segments import where_ran
from .cells import FAILED, complete
from .names import EXPERIMENT_JSON, RUNS_DIR, TRIAL_JSON, TUNE_DIR

# Per-run columns after ``trial, label, seed, config`` and the grid fields. ``test_mean``:
# the selecting test's mean (the first test to reach the target, or the best: biased
# upwards); ``confirmation_mean``: its re-test on fresh episodes (unbiased); ``confirmed``:
# True / False, None for a run solved without one (``solved_of``); ``solved_at_total``: a
# solved run without a count to solve, its *_used at its totals (an upper bound).
# ``cluster_cpus`` / ``cluster_mixed``: a virtual run's cluster file, its CPUs and whether
# its nodes differ (speeds, stragglers, failures).
RUN_COLUMNS = (
    "status", "reason", "runtime", "cluster_cpus", "cluster_mixed", "env", "target",
    "strategy", "policy", "hidden", "islands",
    "popsize", "episodes", "num_params", "solved", "confirmed", "test_mean",
    "confirmation_mean", "best_fitness",
    "evals_to_solve", "episodes_to_solve", "env_steps_to_solve", "wall_to_solve",
    "total_evals", "total_episodes", "total_env_steps", "wall_s", "evals_used",
    "episodes_used", "wall_used", "solved_at_total",
    "stopped_by_clock", "s_per_gen", "peak_mem_mb", "env_steps_per_s", "evals_per_s_island",
    "stop_reason", "cpus_per_island", "shared_cpus", "started_at", "ended_at", "concurrency",
    # where and when it ran, over its segments (output.segments: one per start or resume)
    "segments", "machines", "days", "run_hours", "first_start", "last_end",
)
ID_COLUMNS = ("trial", "label", "seed", "config")
CURVE_COLUMNS = ("trial", "seed", "wall_s", "total_evals", "total_env_steps", "best_fitness")
TO_SOLVE = ("evals_to_solve", "episodes_to_solve", "env_steps_to_solve", "wall_to_solve")
_TOTALS = ("total_evals", "total_episodes", "total_env_steps", "wall_s")


# ---- small readers ---------------------------------------------------------------------
def read_meta(exp_dir: str | os.PathLike) -> dict[str, Any]:
    """``experiment.json`` (``{"spec": {}, "trials": []}`` when it is absent)."""
    path = Path(exp_dir) / EXPERIMENT_JSON
    meta = json.loads(path.read_text()) if path.exists() else {}
    meta.setdefault("spec", {})
    meta.setdefault("trials", [])
    return meta


def grid_fields(meta: dict[str, Any]) -> list[str]:
    """The grid's field names, in the experiment's order."""
    return list((meta.get("spec") or {}).get("grid") or {})


def param_value(v: Any) -> Any:
    """A grid value as a table cell: lists as ``32-16`` (``[]``: ``linear``), dicts as JSON."""
    if isinstance(v, (list, tuple)):
        return "-".join(str(x) for x in v) if v else "linear"
    if isinstance(v, dict):
        return json.dumps(v, sort_keys=True, separators=(",", ":"))
    return v


def _natural(name: str) -> list[Any]:
    # trial ids like t2 < t10
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    return (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}


def _num(v: Any) -> float:
    """A summary number, NaN for null (summary.json writes NaN and inf as null)."""
    return math.nan if v is None else float(v)


# ---- one run ---------------------------------------------------------------------------
def _trial_info(run: Path, meta: dict[str, Any], cfg: dict[str, Any]) -> dict[str, Any]:
    """trial.json, else the experiment's trial entry, else the directory name."""
    info = _read_json(run / TRIAL_JSON)
    if not info:
        planned = {t.get("trial_id"): t for t in meta["trials"]}
        info = dict(planned.get(run.name, {}))
    trial = str(info.get("trial") or info.get("trial_id") or run.name)
    seed = info.get("seed", cfg.get("seed"))
    return {"trial": trial, "label": str(info.get("label") or trial),
            "seed": None if seed is None else int(seed), "params": info.get("params") or {}}


def _hidden(cfg: dict[str, Any]) -> str:
    # the policy takes ``policy_options.hidden`` over ``hidden`` (config.policy_options)
    h = (cfg.get("policy_options") or {}).get("hidden", cfg.get("hidden"))
    if h is None:
        return "default"
    return str(h) if isinstance(h, (int, float)) else param_value(list(h))


def _strategy(summary: dict[str, Any], cfg: dict[str, Any]) -> str:
    names = summary.get("strategies") or str(cfg.get("strategy") or "").split(",")
    return ",".join(dict.fromkeys(s.strip() for s in names if s and s.strip()))


def _metric_stats(metrics: pd.DataFrame) -> dict[str, float]:
    """Seconds per generation (mean over islands of last wall_s / last generation) and the
    peak memory of the largest island."""
    if metrics.empty:
        return {"s_per_gen": math.nan, "peak_mem_mb": math.nan}
    last = metrics.sort_values(["island", "generation"]).groupby("island").tail(1)
    last = last[last["generation"] > 0]
    s_per_gen = float((last["wall_s"] / last["generation"]).mean()) if len(last) else math.nan
    peak = math.nan
    if "peak_rss_mb" in metrics:
        mem = pd.to_numeric(metrics["peak_rss_mb"], errors="coerce")
        mem = mem[mem > 0]  # 0.0: the island could not measure it
        peak = float(mem.max()) if len(mem) else math.nan
    return {"s_per_gen": s_per_gen, "peak_mem_mb": peak}


def solved_of(summary: dict[str, Any]) -> tuple[bool, bool | None]:
    """(solved, confirmed) of a summary: solved means confirmed where the summary has
    ``confirmed``. A solved run without a confirmation (an older summary, or a run with
    ``--retest-episodes 0``) was solved on its selecting test alone: confirmed None."""
    if "confirmed" not in summary:
        return bool(summary.get("solved")), None
    solved = bool(summary["confirmed"])
    return solved, (None if solved and not summary.get("confirmation") else solved)


def _run_columns(summary: dict[str, Any], cfg: dict[str, Any],
                 metrics: pd.DataFrame) -> dict[str, Any]:
    solved, confirmed = solved_of(summary)
    row: dict[str, Any] = {
        "runtime": summary.get("runtime", cfg.get("runtime") or "ray"),
        "env": summary.get("env", cfg.get("env")), "target": _num(summary.get("target",
                                                                            cfg.get("target"))),
        "strategy": _strategy(summary, cfg), "policy": cfg.get("policy"),
        "hidden": _hidden(cfg), "islands": summary.get("islands", cfg.get("islands")),
        "popsize": cfg.get("popsize"), "episodes": cfg.get("episodes"),
        "num_params": summary.get("num_params"), "solved": solved, "confirmed": confirmed,
        "test_mean": _num(summary.get("test_mean")),
        "confirmation_mean": _num(summary.get("confirmation_mean")),
        "best_fitness": _num(summary.get("best_fitness")),
        "stop_reason": summary.get("stop_reason"),
    }
    for k in TO_SOLVE:  # only a solved run has a time to solve
        row[k] = _num(summary.get(k)) if solved else math.nan
    last = metrics.sort_values("wall_s").tail(1)  # a run without a summary: its last report
    for k in _TOTALS:
        seen = float(last[k].iloc[0]) if len(last) and k in last else math.nan
        row[k] = _num(summary[k]) if k in summary else seen
    row |= _metric_stats(metrics) | _cluster(summary)
    row["env_steps_per_s"] = (row["total_env_steps"] / row["wall_s"]
                              if row["wall_s"] > 0 else math.nan)
    islands = _num(row["islands"])
    row["evals_per_s_island"] = (row["total_evals"] / row["wall_s"] / islands
                                 if row["wall_s"] > 0 and islands > 0 else math.nan)
    return row  # *_used, solved_at_total: cells.complete, over the whole table


def _cluster(summary: dict[str, Any]) -> dict[str, Any]:
    """A virtual run's cluster: its CPUs, and whether its nodes differ (speeds, stragglers,
    failures); NaN / None for a run on Ray (its machine is in ``machines``)."""
    c = summary.get("cluster") or {}
    if not c:
        return {"cluster_cpus": math.nan, "cluster_mixed": None}
    strag = (c.get("straggler") or {}).get("p") or 0
    mixed = "speed" in str(c.get("described", "")) or strag > 0 or (
        c.get("failures_per_hour") or 0) > 0
    return {"cluster_cpus": _num(c.get("cpus")), "cluster_mixed": bool(mixed)}


def _tune_error(exp: Path, trial: str) -> str:
    """The last line of Tune's error.txt for ``trial`` (empty when it has none)."""
    for path in sorted((exp / TUNE_DIR).glob(f"*trial={trial}_*/error.txt")):
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines()
                 if ln.strip()]
        if lines:
            return lines[-1]
    return ""


def status_of(summary: dict[str, Any], info: dict[str, Any], error: str) -> tuple[str, str]:
    """(status, reason) of one trial from its summary, its trial.json and Tune's error."""
    if summary:
        stop = str(summary.get("stop_reason") or "")
        solved, confirmed = solved_of(summary)
        if solved:
            return "solved", (f"passed its test and its confirmation ({stop or 'target'})"
                              if confirmed else f"passed the test ({stop or 'target'}; "
                              "unconfirmed: no confirmation ran)")
        if stop == "time budget":
            return "timeout", "stopped by the clock (time_budget) before its evaluation budget"
        if stop == "all islands failed":
            return "crashed", stop
        return "unsolved", (stop or "stopped") + _failed_confirmation(summary)
    if info.get("status") in FAILED:
        return str(info["status"]), str(info.get("reason") or "")
    if error:
        oom = "outofmemory" in error.lower().replace(" ", "") or "memoryerror" in error.lower()
        return ("oom" if oom else "crashed"), error[:300]
    return "missing", "not run yet (or still running)"


def _failed_confirmation(summary: dict[str, Any]) -> str:
    """``; its test reached the target, its confirmation did not (mean ...)`` where so."""
    test, conf, target = (summary.get("selecting_test") or {}), summary.get(
        "confirmation_mean"), summary.get("target")
    if target is None or conf is None or test.get("mean") is None or stopped_early(test):
        return ""
    if test["mean"] >= target > conf:
        return f"; its test reached the target, its confirmation did not (mean {conf:.4g})"
    return ""


def config_label(params: dict[str, Any], grid: list[str]) -> str:
    """The configuration a run belongs to: its grid values (``all`` without a grid)."""
    return ", ".join(f"{k}={params[k]}" for k in grid) or "all"


def _run_row(exp: Path, planned: dict[str, Any], meta: dict[str, Any],
             grid: list[str]) -> tuple[dict, pd.DataFrame]:
    run = exp / RUNS_DIR / str(planned.get("trial_id"))
    # a trial that failed before its launcher wrote config.yaml: what the experiment set
    cfg = _read_yaml(run / "config.yaml") or {**(meta["spec"].get("base") or {}),
                                              **(meta["spec"].get("budget") or {}),
                                              **(planned.get("params") or {})}
    summary = _read_json(run / "summary.json")
    mpath = run / "metrics.parquet"
    metrics = pd.read_parquet(mpath) if mpath.exists() else pd.DataFrame(
        columns=["island", "generation", "wall_s", "best_so_far", "total_evals",
                 "total_env_steps"])
    record = _read_json(run / TRIAL_JSON)
    info = _trial_info(run, meta, cfg)
    status, reason = status_of(summary, record, "" if summary else _tune_error(exp, run.name))
    fixed = _run_columns(summary, cfg, metrics) | {"status": status, "reason": reason}
    fixed["stopped_by_clock"] = status == "timeout"
    fixed |= {k: record.get(k) for k in ("cpus_per_island", "shared_cpus", "started_at",
                                         "ended_at")}
    ran = where_ran(read_segments(run))
    fixed |= {"segments": ran["segments"], "machines": ran["machines"], "days": ran["days"],
              "run_hours": ran["hours"], "first_start": ran["first"], "last_end": ran["last"]}
    # a grid field's value as the experiment gave it; a field also in the fixed columns
    # keeps one column (the grid's value, which names the configuration)
    params = {k: param_value(info["params"].get(k, cfg.get(k, fixed.get(k)))) for k in grid}
    row = {"trial": info["trial"], "label": info["label"], "seed": info["seed"],
           "config": config_label(params, grid), **params}
    row |= {k: v for k, v in fixed.items() if k not in params}
    return row, metrics


def _curve(metrics: pd.DataFrame, trial: str, seed: int | None) -> pd.DataFrame:
    """The archipelago's best so far after each island report (running max over islands)."""
    m = metrics.sort_values("wall_s", kind="stable")
    best = np.maximum.accumulate(m["best_so_far"].to_numpy(dtype=float)) if len(m) else []
    return pd.DataFrame({
        "trial": trial, "seed": seed, "wall_s": m["wall_s"].to_numpy(dtype=float),
        "total_evals": m["total_evals"].to_numpy(dtype="int64"),
        "total_env_steps": m["total_env_steps"].to_numpy(dtype="int64"), "best_fitness": best,
    }, columns=list(CURVE_COLUMNS))


# ---- the experiment --------------------------------------------------------------------
def finished_runs(exp_dir: str | os.PathLike) -> list[Path]:
    """``runs/<trial>/`` directories that hold a ``summary.json``, in trial order."""
    runs = Path(exp_dir) / RUNS_DIR
    dirs = [p for p in runs.iterdir() if p.is_dir()] if runs.is_dir() else []
    return sorted((p for p in dirs if (p / "summary.json").exists()),
                  key=lambda p: _natural(p.name))


def _planned(exp: Path, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The experiment's trials, plus run directories it does not list (an older layout)."""
    planned = [dict(t) for t in meta["trials"]]
    known = {str(t.get("trial_id")) for t in planned}
    planned += [{"trial_id": p.name} for p in finished_runs(exp) if p.name not in known]
    return planned


def concurrency(started: pd.Series, ended: pd.Series) -> pd.Series:
    """Per trial, the most trials (itself included) that ran at once while it ran: 1 for a
    trial that had the machine to itself. NaN where the runner recorded no times."""
    s, e = pd.to_numeric(started, errors="coerce"), pd.to_numeric(ended, errors="coerce")
    out = []
    for a, b in zip(s, e, strict=True):
        if math.isnan(a) or math.isnan(b):
            out.append(math.nan)
            continue
        # the count of running trials only rises at a start: check each start in [a, b)
        points = [a] + [x for x in s if a < x < b]
        out.append(max(int(((s <= p) & (e > p)).sum()) for p in points))
    return pd.Series(out, index=started.index, dtype=float)


def collect(exp_dir: str | os.PathLike) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(results, curves) of every trial of an experiment directory."""
    exp = Path(exp_dir)
    meta = read_meta(exp)
    grid = grid_fields(meta)
    rows, curves = [], []
    for planned in _planned(exp, meta):
        row, metrics = _run_row(exp, planned, meta, grid)
        rows.append(row)
        if len(metrics):
            curves.append(_curve(metrics, row["trial"], row["seed"]))
    columns = list(ID_COLUMNS) + grid + [c for c in RUN_COLUMNS if c not in grid]
    results = complete(pd.DataFrame(rows, columns=columns))
    results["solved"] = results["solved"].fillna(False).astype(bool)
    results["stopped_by_clock"] = results["stopped_by_clock"].fillna(False).astype(bool)
    results["shared_cpus"] = results["shared_cpus"].map(lambda v: bool(v) if v == v and
                                                        v is not None else None)
    results["concurrency"] = concurrency(results["started_at"], results["ended_at"])
    if len(results):  # a crashed run reports no size: that of its configuration's others
        by = [c for c in ("env", "hidden", "policy" if "policy" in grid else "")
              if c in results]
        known = pd.to_numeric(results["num_params"], errors="coerce")
        results["num_params"] = known.fillna(
            known.groupby([results[c].astype(str) for c in by]).transform("max"))
    results = _parquet_safe(results)
    curves_df = (pd.concat(curves, ignore_index=True) if curves
                 else pd.DataFrame(columns=list(CURVE_COLUMNS)))
    if len(curves_df):
        order = curves_df["trial"].map({r["trial"]: i for i, r in enumerate(rows)})
        curves_df = (curves_df.assign(_o=order).sort_values(["_o", "wall_s"], kind="stable")
                     .drop(columns="_o").reset_index(drop=True))
    return results, curves_df


def _parquet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """Columns that mix Python types (a grid of ``[null, 0.5, "auto"]``) as strings, which
    parquet can store."""
    for c in df.columns:
        if df[c].dtype == object:
            types = {type(v) for v in df[c] if v is not None and v == v}
            if len(types - {int, float}) and len(types) > 1:
                df[c] = df[c].map(lambda v: None if v is None else str(v))
    return df


def missing_trials(meta: dict[str, Any], results: pd.DataFrame) -> list[str]:
    """The planned trials that have not run (or are still running)."""
    if not len(results):
        return [str(t.get("trial_id")) for t in meta["trials"]]
    return [str(t) for t in results.loc[results["status"] == "missing", "trial"]]
