"""A calibration fitted on a real arm's own calls instead of an island measured alone
(``python -m islands.runtime.calibration ENV FILE --from-runs DIR``).

Why: the benchmark measures one island alone in this process, on an early population and
on a late one started at another run's solution. On Hopper-v4 its per-episode term came out
three to eight times what the real runs' calls show (an episode worth 32-107 steps' cost in
the model, 13-35 in every real arm of docs/results/virtual-time.md, stages 6 and 7), so a
virtual clock ran slow on short episodes and fast on long ones, and where a run's mix of
lengths differed from the calibration's the clock missed by 10-20%. Each real call's seconds
(``call_s``), steps and episodes are in its run's metrics.parquet; non-negative least
squares over all of them gives seconds per step and per episode as this machine paid them
inside real runs of that shape (its Ray processes and the other islands beside each call
included). A slowed island's sleep (``slowdown_s`` a generation, in its run's config) is
taken out of its calls. Islands on a share of a core (4 islands on 2) share a process,
one after another (``planning.group_islands``), so a call's seconds are one core's there
too, as the model takes them. Rounds are not in the metrics: the per-round cost is
folded into the other two (a per-call intercept fitted beside them came out ~0 on those
arms). Fit it on choosing seeds and check it on fresh ones: a calibration from the very
runs it is compared with would predict them by construction.

The serial fractions (what more evaluator threads do not speed up) cannot come from runs of
one thread per island: they are taken from ``base`` (a benchmark calibration), else the
per-step term is taken as fully parallel and the per-episode one as serial."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..config import ConfigError


def call_table(run: Path) -> tuple[dict[str, Any], Any]:
    """The run in ``run``: its config and one row per island call (``island``,
    ``generation``: the island's after the call, ``steps``,
    ``episodes``, ``call_s``, ``slept``: its island's ``slowdown_s`` x the call's
    generations, ``compute_s`` = call_s - slept, ``end``: the run's clock when it
    returned); ConfigError (one line) where it has no readable config or metrics."""
    import pandas as pd
    import yaml

    try:
        cfg = yaml.safe_load((run / "config.yaml").read_text()) or {}
        m = pd.read_parquet(run / "metrics.parquet",
                            columns=["island", "generation", "wall_s", "call_s", "env_steps",
                                     "episodes"])
    except (OSError, ValueError, KeyError) as e:
        raise ConfigError(f"--from-runs: {run} is not a run directory with metrics "
                          f"({type(e).__name__})") from None
    specs = cfg.get("island_specs") or []
    parts = []
    for isl, g in m.groupby("island"):
        g = g.sort_values("generation")
        d = g[["generation", "env_steps", "episodes"]].diff().fillna(g.iloc[0])
        own = specs[int(isl)] if int(isl) < len(specs) and specs[int(isl)] else {}
        slept = float(own.get("slowdown_s") or 0.0) * d.generation.to_numpy()
        parts.append(pd.DataFrame({
            "island": int(isl), "generation": g.generation.to_numpy(),
            "steps": d.env_steps.to_numpy(),
            "episodes": d.episodes.to_numpy(), "call_s": g.call_s.to_numpy(),
            "slept": slept, "compute_s": g.call_s.to_numpy() - slept,
            "end": g.wall_s.to_numpy()}))
    calls = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["island", "generation", "steps", "episodes", "call_s", "slept", "compute_s",
                 "end"])
    return cfg, calls[calls.steps > 0]


def run_calls(run: Path, env: str) -> np.ndarray:
    """Rows (steps, episodes, compute seconds) of every island call of the run in ``run``
    (:func:`call_table`); ConfigError where the run is not ``env``'s or used more than one
    evaluator thread per island (its seconds would not be one core's)."""
    cfg, calls = call_table(run)
    if cfg.get("env") != env:
        raise ConfigError(f"--from-runs: {run} is a run of {cfg.get('env')!r}, not {env!r}")
    if float(cfg.get("cpus_per_island") or 1.0) > 1.0:
        raise ConfigError(f"--from-runs: {run} ran {cfg['cpus_per_island']} CPUs per island;"
                          " runs of one evaluator thread per island only")
    return calls[["steps", "episodes", "compute_s"]].to_numpy(dtype=np.float64)


def fit_runs(runs: list[Path], env: str, base: dict[str, Any] | None = None
             ) -> dict[str, Any]:
    """The calibration record (``calibration.json``'s keys) fitted on ``runs``' calls."""
    from scipy.optimize import nnls

    if not runs:
        raise ConfigError("--from-runs: no runs/t*/ or run directories found")
    per_run = [run_calls(r, env) for r in runs]
    rows = np.concatenate(per_run)
    if len(rows) < 3:
        raise ConfigError(f"--from-runs: {len(rows)} calls in {len(runs)} runs; need >= 3")
    (per_step, per_episode), _ = nnls(rows[:, :2], rows[:, 2])
    if per_step <= 0:  # all on episodes: the per-step model instead
        per_step, per_episode = float(rows[:, 2].sum() / rows[:, 0].sum()), 0.0
    base = base or {}
    return {"env": env, "s_per_step": float(per_step), "s_per_round": 0.0,
            "s_per_episode": float(per_episode),
            "serial_fraction": float(base.get("serial_fraction", 0.0)),
            "episode_serial_fraction": float(base.get("episode_serial_fraction", 1.0)),
            "round_serial_fraction": 1.0, "threads": 1,
            "env_steps": int(rows[:, 0].sum()), "episodes_measured": int(rows[:, 1].sum()),
            "seconds": round(float(rows[:, 2].sum()), 2), "calls": int(len(rows)),
            "mean_episode_steps": round(float(rows[:, 0].sum() / rows[:, 1].sum()), 1),
            "source": "runs", "runs": [str(r) for r in runs],
            "calls_per_run": [int(len(c)) for c in per_run],
            "serial_from": base.get("date"), "segments": _segments(runs),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds")}


def _segments(runs: list[Path]) -> list[dict[str, Any]]:
    """Where and when the fitted runs ran (their ``segments.json``: machine, commit, times),
    so that the calibration says which machine's seconds it holds."""
    from ..output.segments import read

    keep = ("host", "boot", "cpus", "commit", "started", "ended")
    return [{"run": r.name, **{k: s.get(k) for k in keep}} for r in runs for s in read(r)]


def run_dirs(path: str | Path, seeds: list[int] | None = None) -> list[Path]:
    """An experiment directory's trial runs (``runs/t*``), or ``path`` itself: a run; with
    ``seeds``, those whose config's seed is one of them (the choosing seeds)."""
    import yaml

    path = Path(path)
    trials = sorted(p for p in path.glob("runs/t*") if (p / "metrics.parquet").exists())
    found = trials or ([path] if (path / "metrics.parquet").exists() else [])
    if seeds is None:
        return found
    return [r for r in found
            if (yaml.safe_load((r / "config.yaml").read_text()) or {}).get("seed") in seeds]
