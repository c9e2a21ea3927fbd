"""``python -m islands.experiment merge DIR DIR ... --out OUT``: more seeds for a question.

A comparison whose intervals overlap wants more seeds, and the new seeds run later, in an
experiment directory of their own (another scale of the same YAML, e.g. ``seeds:
4010-4019``). :func:`merge` pools such directories into one kept copy (``results.parquet``,
``curves.parquet`` and ``experiment.json``, no ``runs/``), which ``report`` renders like any
experiment: every Kaplan-Meier median, interval and test then uses all the runs.

Pooling is refused (:class:`~islands.experiment.spec.ExperimentError`, one line) unless
the directories ask the same question the same way: the same experiment name, report kind,
``base`` launcher fields and budget, and the same fields for an arm both ran (a file may
gain arms later; an arm a directory did not run, ``run --only arm=...``, is not compared).
Their grids and seeds may differ, but no configuration may have the same seed in two of
them (a seed counted twice would narrow the intervals falsely). A placeholder -- a cell
not run yet, or a run that failed before its first report and so left no count -- does not
hold its seed: a run of that (configuration, seed) in another directory replaces it (the
rerun of a study's lost trials). ``--arms DIR:ARM,...`` takes only some arms' runs of a
directory (a kept copy's real runs beside a new model's virtual arm, where the copy also
holds the old model's runs under the same arm name). Trial ids get their directory's
position as a prefix (``d1-t000``), and the merged ``experiment.json`` keeps each
directory's provenance under ``sources``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from .cells import FAILED, USED
from .names import CURVES, EXPERIMENT_JSON, RESULTS
from .spec import ExperimentError

# what must agree for runs to be pooled: everything that shapes a run except grid, seeds and
# arms (an arm both ran must mean the same in both; a file may gain arms later)
SAME = ("name", "report", "base", "budget")


def _load(d: Path) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """experiment.json, results and curves, with each cell's resolved launcher config in the
    meta (``cell_configs``: the merged copy has no runs/ to read them from)."""
    from .reports.common import Context, cell_configs
    from .store import load

    meta, results, curves = load(d)
    meta["cell_configs"] = cell_configs(Context(d, meta, results, curves))
    return meta, results, curves


def _check_same(dirs: list[Path], metas: list[dict[str, Any]]) -> None:
    first = metas[0]["spec"]
    for d, meta in zip(dirs[1:], metas[1:], strict=True):
        for key in SAME:
            if meta["spec"].get(key) != first.get(key):
                raise ExperimentError(
                    f"{d} differs from {dirs[0]} in {key!r} ({meta['spec'].get(key)!r} "
                    f"against {first.get(key)!r}): only runs of one question pool")
        arms, theirs = first.get("arms") or {}, meta["spec"].get("arms") or {}
        for name in sorted(_ran_arms(first) & _ran_arms(meta["spec"])):
            if arms[name] != theirs[name]:
                raise ExperimentError(
                    f"{d} differs from {dirs[0]} in arm {name!r} ({theirs[name]!r} against "
                    f"{arms[name]!r}): only runs of one question pool")


def _ran_arms(spec: dict[str, Any]) -> set[str]:
    """The arms a directory ran (its grid's ``arm`` values, narrowed by ``run --only``): an
    arm it only names cannot disagree with another directory's runs (an arm's file paths
    resolve where it ran: two worktrees of one commit name the same file differently)."""
    arms = spec.get("arms") or {}
    return set((spec.get("grid") or {}).get("arm", list(arms))) & set(arms)


def _placeholders(t: pd.DataFrame) -> pd.Series:
    """Rows that hold no run's count: not run yet ("missing"), or failed before the first
    report (no episodes, evaluations or seconds used: the report's "no count")."""
    lost = t[[used for used, _, _ in USED]].isna().any(axis=1)
    return (t["status"] == "missing") | (t["status"].isin(FAILED) & lost)


def _check_seeds(dirs: list[Path], tables: list[pd.DataFrame]) -> None:
    seen: dict[tuple[str, int], Path] = {}
    for d, t in zip(dirs, tables, strict=True):
        t = t[~_placeholders(t)]
        for config, seed in zip(t["config"], t["seed"], strict=True):
            key = (str(config), int(seed))
            if key in seen:  # each directory has one row per trial
                raise ExperimentError(f"seed {seed} of {config} is in both {seen[key]} and {d}: "
                                      "a seed counted twice would narrow the intervals")
            seen[key] = d


def _prefixed(df: pd.DataFrame, k: int) -> pd.DataFrame:
    out = df.copy()
    if "trial" in out.columns:
        out["trial"] = [f"d{k}-{t}" for t in out["trial"]]
    return out


def _union_grid(specs: list[dict[str, Any]]) -> dict[str, list]:
    grid: dict[str, list] = {}
    for spec in specs:
        for key, values in (spec.get("grid") or {}).items():
            have = grid.setdefault(key, [])
            have += [v for v in values if v not in have]
    return grid


def _merged_meta(dirs: list[Path], metas: list[dict[str, Any]]) -> dict[str, Any]:
    spec = dict(metas[0]["spec"])
    spec["grid"] = _union_grid([m["spec"] for m in metas])
    # each arm as the directories that ran it define it (all define it alike: checked)
    spec["arms"] = {k: v for m in metas for k, v in (m["spec"].get("arms") or {}).items()}
    spec["arms"] |= {k: v for m in metas for k, v in (m["spec"].get("arms") or {}).items()
                     if k in _ran_arms(m["spec"])}
    spec["seeds"] = sorted({int(s) for m in metas for s in m["spec"].get("seeds") or []})
    scales = [str(m["spec"].get("scale") or "") for m in metas]
    spec["scale"] = "+".join(dict.fromkeys(scales))
    trials = [{**t, "trial_id": f"d{k}-{t['trial_id']}"}
              for k, m in enumerate(metas, 1) for t in m.get("trials") or []]
    provenance = dict(metas[0].get("provenance") or {})
    provenance["note"] = "merged from " + "; ".join(
        f"d{k} = {d} (commit {(m.get('provenance') or {}).get('commit')}, seeds "
        f"{_seed_span(m['spec'].get('seeds') or [])})"
        for k, (d, m) in enumerate(zip(dirs, metas, strict=True), 1))
    cells: dict[str, Any] = {}
    for m in metas:
        cells.update({k: v for k, v in m["cell_configs"].items() if k not in cells})
    return {"spec": spec, "provenance": provenance, "trials": trials, "cell_configs": cells,
            "sources": [{"dir": str(d), "scale": scale, "run_flags": m.get("run_flags") or [],
                         "provenance": m.get("provenance")}
                        for d, m, scale in zip(dirs, metas, scales, strict=True)]}


def _without_replaced(results: pd.DataFrame) -> pd.DataFrame:
    """The pooled rows less each placeholder whose (configuration, seed) another row holds:
    a counted run, or an earlier placeholder (one row per cell and seed)."""
    key = results["config"].astype(str) + "\0" + results["seed"].astype(int).astype(str)
    held = _placeholders(results)
    counted = set(key[~held])
    drop = held & (key.isin(counted) | key.duplicated())
    return results[~drop].reset_index(drop=True)


def _seed_span(seeds: list) -> str:
    s = sorted(int(x) for x in seeds)
    return f"{s[0]}-{s[-1]}" if s and s == list(range(s[0], s[-1] + 1)) else str(s)


def arms_of(flags: list[str], dirs: list[str]) -> dict[str, list[str]]:
    """``--arms DIR:ARM[,ARM]`` flags as ``{dir: [arm, ...]}``; ExperimentError (one line)
    for a flag without ``:`` or arms, or naming a directory not given."""
    out: dict[str, list[str]] = {}
    for flag in flags:
        d, sep, names = str(flag).rpartition(":")
        arms = [a for a in names.split(",") if a]
        if not sep or not d or not arms:
            raise ExperimentError(f"--arms {flag!r}: write DIR:ARM[,ARM]")
        if d not in dirs:
            raise ExperimentError(f"--arms {flag!r}: {d} is not one of the directories merged")
        out[d] = out.get(d, []) + arms
    return out


def _only_arms(d: Path, loaded: tuple, arms: list[str]) -> tuple:
    """Directory ``d``'s meta, results and curves with only ``arms``' runs (and those arms
    as the ones it ran); ExperimentError naming an arm it did not run."""
    meta, results, curves = loaded
    ran = _ran_arms(meta["spec"])
    missing = [a for a in arms if a not in ran]
    if missing:
        raise ExperimentError(f"--arms: {d} ran no arm {missing[0]!r} (it ran "
                              f"{', '.join(sorted(ran)) or 'none'})")
    spec = dict(meta["spec"])
    spec["grid"] = {**(spec.get("grid") or {}), "arm": list(arms)}
    keep = results["arm"].isin(arms)
    trials = set(results.loc[keep, "trial"])
    return ({**meta, "spec": spec}, results[keep].reset_index(drop=True),
            curves[curves["trial"].isin(trials)].reset_index(drop=True))


def merge(dirs: list[str | os.PathLike], out: str | os.PathLike,
          arms: dict[str, list[str]] | None = None) -> Path:
    """Pool the experiment directories ``dirs`` into a kept copy at ``out`` (created; it
    must not hold anything yet); returns its path. ``arms``: for a directory (as given in
    ``dirs``), only these arms' runs. ``report`` renders it."""
    paths, out = [Path(d) for d in dirs], Path(out)
    if len({p.resolve() for p in paths}) < len(paths) or len(paths) < 2:
        raise ExperimentError("merge needs at least two different experiment directories")
    for d in paths:
        if not (d / EXPERIMENT_JSON).is_file():
            raise ExperimentError(f"{d} is not an experiment directory (no {EXPERIMENT_JSON})")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExperimentError(f"{out} already exists and is not empty")
    arms = {str(k): v for k, v in (arms or {}).items()}
    loaded = [_only_arms(p, _load(p), arms[str(d)]) if str(d) in arms else _load(p)
              for d, p in zip(dirs, paths, strict=True)]
    metas = [m for m, _, _ in loaded]
    _check_same(paths, metas)
    _check_seeds(paths, [r for _, r, _ in loaded])
    results = _without_replaced(pd.concat(
        [_prefixed(r, k) for k, (_, r, _) in enumerate(loaded, 1)], ignore_index=True))
    curves = pd.concat([_prefixed(c, k) for k, (_, _, c) in enumerate(loaded, 1)],
                       ignore_index=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / EXPERIMENT_JSON).write_text(json.dumps(_merged_meta(paths, metas), indent=2) + "\n")
    results.to_parquet(out / RESULTS, index=False)
    curves.to_parquet(out / CURVES, index=False)
    return out
