"""An experiment's runs as two tables: ``results`` (one row per run) and ``curves`` (one row
per island report, with the archipelago's best so far).

Reads only what the launcher leaves in ``runs/<trial>/`` (``summary.json``,
``metrics.parquet``, ``config.yaml``) plus the runner's ``trial.json`` and the experiment's
``experiment.json``, as plain files: no Ray, and nothing from the spec module, so a report
can be rendered anywhere the directory is copied to. A trial without ``summary.json``
(failed, or not run yet) has no row; the report counts it as missing.
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

from . import kinds

# Per-run columns after ``trial, label, seed, config`` and the grid fields.
RUN_COLUMNS = (
    "env", "target", "strategy", "policy", "hidden", "islands", "popsize", "episodes",
    "num_params", "solved", "test_mean", "best_fitness", "evals_to_solve", "episodes_to_solve",
    "env_steps_to_solve", "wall_to_solve", "total_evals", "total_episodes", "total_env_steps",
    "wall_s", "s_per_gen", "peak_mem_mb", "env_steps_per_s", "stop_reason",
)
ID_COLUMNS = ("trial", "label", "seed", "config")
CURVE_COLUMNS = ("trial", "seed", "wall_s", "total_evals", "total_env_steps", "best_fitness")
TO_SOLVE = ("evals_to_solve", "episodes_to_solve", "env_steps_to_solve", "wall_to_solve")
_TOTALS = ("total_evals", "total_episodes", "total_env_steps", "wall_s")


# ---- small readers ---------------------------------------------------------------------
def read_meta(exp_dir: str | os.PathLike) -> dict[str, Any]:
    """``experiment.json`` (``{"spec": {}, "trials": []}`` when it is absent)."""
    path = Path(exp_dir) / kinds.EXPERIMENT_JSON
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
    info = _read_json(run / kinds.TRIAL_JSON)
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


def _run_columns(summary: dict[str, Any], cfg: dict[str, Any],
                 metrics: pd.DataFrame) -> dict[str, Any]:
    solved = bool(summary.get("solved"))
    row: dict[str, Any] = {
        "env": summary.get("env", cfg.get("env")), "target": _num(summary.get("target")),
        "strategy": _strategy(summary, cfg), "policy": cfg.get("policy"),
        "hidden": _hidden(cfg), "islands": summary.get("islands", cfg.get("islands")),
        "popsize": cfg.get("popsize"), "episodes": cfg.get("episodes"),
        "num_params": summary.get("num_params"), "solved": solved,
        "test_mean": _num(summary.get("test_mean")),
        "best_fitness": _num(summary.get("best_fitness")),
        "stop_reason": summary.get("stop_reason"),
    }
    for k in TO_SOLVE:  # only a solved run has a time to solve
        row[k] = _num(summary.get(k)) if solved else math.nan
    for k in _TOTALS:
        row[k] = _num(summary.get(k))
    row |= _metric_stats(metrics)
    row["env_steps_per_s"] = (row["total_env_steps"] / row["wall_s"]
                              if row["wall_s"] > 0 else math.nan)
    return row


def config_label(params: dict[str, Any], grid: list[str]) -> str:
    """The configuration a run belongs to: its grid values (``all`` without a grid)."""
    return ", ".join(f"{k}={params[k]}" for k in grid) or "all"


def _run_row(run: Path, meta: dict[str, Any], grid: list[str]) -> tuple[dict, pd.DataFrame]:
    cfg = _read_yaml(run / "config.yaml")
    summary = _read_json(run / "summary.json")
    mpath = run / "metrics.parquet"
    metrics = pd.read_parquet(mpath) if mpath.exists() else pd.DataFrame(
        columns=["island", "generation", "wall_s", "best_so_far", "total_evals",
                 "total_env_steps"])
    info = _trial_info(run, meta, cfg)
    fixed = _run_columns(summary, cfg, metrics)
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
    runs = Path(exp_dir) / kinds.RUNS_DIR
    dirs = [p for p in runs.iterdir() if p.is_dir()] if runs.is_dir() else []
    return sorted((p for p in dirs if (p / "summary.json").exists()),
                  key=lambda p: _natural(p.name))


def collect(exp_dir: str | os.PathLike) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(results, curves) from ``runs/*/`` of an experiment directory."""
    meta = read_meta(exp_dir)
    grid = grid_fields(meta)
    rows, curves = [], []
    for run in finished_runs(exp_dir):
        row, metrics = _run_row(run, meta, grid)
        rows.append(row)
        curves.append(_curve(metrics, row["trial"], row["seed"]))
    columns = list(ID_COLUMNS) + grid + [c for c in RUN_COLUMNS if c not in grid]
    results = _parquet_safe(pd.DataFrame(rows, columns=columns))
    results["solved"] = results["solved"].astype(bool)
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


def _write_parquet(df: pd.DataFrame, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)  # a reader never sees half a file


def write_results(exp_dir: str | os.PathLike) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Collect and write ``results.parquet`` and ``curves.parquet``; returns both."""
    results, curves = collect(exp_dir)
    _write_parquet(results, Path(exp_dir) / kinds.RESULTS)
    _write_parquet(curves, Path(exp_dir) / kinds.CURVES)
    return results, curves


def _stale(exp_dir: Path) -> bool:
    """The parquet files are missing, or a run finished after they were written."""
    paths = [exp_dir / kinds.RESULTS, exp_dir / kinds.CURVES]
    if not all(p.exists() for p in paths):
        return True
    written = min(p.stat().st_mtime for p in paths)
    return any((r / "summary.json").stat().st_mtime > written for r in finished_runs(exp_dir))


def load(exp_dir: str | os.PathLike) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """(experiment.json, results, curves); collects first when the parquet files are
    missing or older than a run's summary."""
    exp = Path(exp_dir)
    meta = read_meta(exp)
    if _stale(exp):
        results, curves = write_results(exp)
    else:
        results, curves = pd.read_parquet(exp / kinds.RESULTS), pd.read_parquet(exp / kinds.CURVES)
    return meta, results, curves


def missing_trials(meta: dict[str, Any], results: pd.DataFrame) -> list[str]:
    """The planned trials that have no row (failed, or not run yet)."""
    done = set(results["trial"].astype(str)) if len(results) else set()
    return [str(t.get("trial_id")) for t in meta["trials"] if str(t.get("trial_id")) not in done]


# ---- tables over runs ------------------------------------------------------------------
def per_config(results: pd.DataFrame, by: str | list[str] = "config") -> pd.DataFrame:
    """One row per configuration (``by``): runs, solved, success rate, medians of the time to
    solve over the solved runs, of the final test mean, of seconds per generation and of
    throughput, and the largest peak memory. Keeps the order in which configurations come."""
    keys = [by] if isinstance(by, str) else list(by)
    extra = {} if "hidden" in keys else {"hidden": ("hidden", "first")}
    out = results.groupby(keys, sort=False, dropna=False).agg(
        **extra, runs=("trial", "size"), solved=("solved", "sum"),
        evals_to_solve=("evals_to_solve", "median"), wall_to_solve=("wall_to_solve", "median"),
        test_mean=("test_mean", "median"), best_test_mean=("test_mean", "max"),
        best_fitness=("best_fitness", "max"), s_per_gen=("s_per_gen", "median"),
        peak_mem_mb=("peak_mem_mb", "max"), env_steps_per_s=("env_steps_per_s", "median"),
        total_evals=("total_evals", "median"),
    ).reset_index()
    out["solved"] = out["solved"].astype(int)
    out["success_rate"] = out["solved"] / out["runs"]
    return out


def speedup_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per number of islands k: T(k) (median wall-clock to solve over solved runs), speedup
    S(k) = T(k0) / T(k) against the fewest islands k0 (1 in a scaling grid), efficiency
    S(k) / (k / k0), and the same for env-step throughput (median env steps per second)."""
    t = per_config(results, "islands").sort_values("islands", ignore_index=True)
    if t.empty:
        return t.assign(speedup=[], efficiency=[], throughput_ratio=[],
                        throughput_efficiency=[])
    k0 = t["islands"].iloc[0]
    ideal = t["islands"] / k0
    t["speedup"] = t["wall_to_solve"].iloc[0] / t["wall_to_solve"]
    t["efficiency"] = t["speedup"] / ideal
    t["throughput_ratio"] = t["env_steps_per_s"] / t["env_steps_per_s"].iloc[0]
    t["throughput_efficiency"] = t["throughput_ratio"] / ideal
    return t
