"""An experiment's tables on disk: ``results.parquet`` and ``curves.parquet``.

:func:`write_results` collects the run directories (:func:`.collect.collect`) and writes
both files, each through a temporary file so that a reader never sees half of one.
:func:`load` is what a report reads: the files are a cache of the run directories, read as
written unless they are missing or a run finished after they were written (:func:`_stale`),
when they are collected and written again. A copy kept without its ``runs/`` (as in
docs/results, :func:`kept`) is never collected: its parquet files are all there is. A table
written before a column existed gets it on loading (:func:`.cells.complete`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from .cells import complete
from .collect import CURVE_COLUMNS, collect, read_meta
from .names import CURVES, EXPERIMENT_JSON, RESULTS, RUNS_DIR, TRIAL_JSON, TUNE_DIR


def _write_parquet(df: pd.DataFrame, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)  # a reader never sees half a file


def write_results(exp_dir: str | os.PathLike) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Collect and write ``results.parquet`` and ``curves.parquet``; returns both."""
    results, curves = collect(exp_dir)
    _write_parquet(results, Path(exp_dir) / RESULTS)
    _write_parquet(curves, Path(exp_dir) / CURVES)
    return results, curves


def _stale(exp_dir: Path) -> bool:
    """The parquet files are missing, or a run finished after they were written."""
    paths = [exp_dir / RESULTS, exp_dir / CURVES]
    if not all(p.exists() for p in paths):
        return True
    written = min(p.stat().st_mtime for p in paths)
    files = [*(exp_dir / RUNS_DIR).glob(f"*/{TRIAL_JSON}"),
             *(exp_dir / RUNS_DIR).glob("*/summary.json"),
             *(exp_dir / TUNE_DIR).glob("*/error.txt"), exp_dir / EXPERIMENT_JSON]
    return any(f.exists() and f.stat().st_mtime > written for f in files)


def kept(exp_dir: str | os.PathLike) -> bool:
    """A copy kept without its runs (as in docs/results): ``results.parquet`` and no
    ``runs/``; its report renders from that table (curves only where kept too)."""
    exp = Path(exp_dir)
    return (exp / RESULTS).is_file() and not (exp / RUNS_DIR).is_dir()


def load(exp_dir: str | os.PathLike) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """(experiment.json, results, curves); collects first when the parquet files are
    missing or older than a run's summary (never for a :func:`kept` copy). A table written
    before a column existed gets it (:func:`.cells.complete`)."""
    exp = Path(exp_dir)
    meta = read_meta(exp)
    if kept(exp):
        results = pd.read_parquet(exp / RESULTS)
        curves = (pd.read_parquet(exp / CURVES) if (exp / CURVES).is_file()
                  else pd.DataFrame(columns=list(CURVE_COLUMNS)))
    elif _stale(exp):
        results, curves = write_results(exp)
    else:
        results, curves = pd.read_parquet(exp / RESULTS), pd.read_parquet(exp / CURVES)
    return meta, complete(results), curves
