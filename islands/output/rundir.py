"""The run directory: what a run leaves behind, and how to read it back.

=================  ==========================================================================
file               content
=================  ==========================================================================
config.yaml        the fully resolved config; ``--config config.yaml`` reruns it
metrics.parquet    one row per island report: ``METRIC_COLUMNS`` (counts are cumulative)
summary.json       ``SUMMARY_KEYS`` and more (stop reason, tests run, coordinator stats)
solution.npz       the best genome: params, policy spec, observation statistics, env
                   (:mod:`islands.persistence.plainstate`, loads with ``allow_pickle=False``)
solution.json      the same without the parameters, for people
fitness.png        each island's population mean fitness and every test vs wall-clock time;
                   below it each island's sigma and lr where they differ (--hp-spread)
checkpoints/       island-NN.npz and coordinator.npz (persistence.storage; --checkpoint-uri
                   moves them elsewhere); ``--resume DIR`` continues from them
=================  ==========================================================================
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import numpy as np

from envs.objective import FITNESS, Scale

from ..messages import IslandReport
from ..persistence import plainstate
from ..persistence.solution import SOLUTION_FORMAT

# A row is an island's report (``messages.IslandReport``: every field but the island
# process's own clock) with the run's wall time and the archipelago's totals (all islands)
# when the row was recorded. Taken from the dataclass, so a new report field is a column.
_REPORT_FIELDS = tuple(f.name for f in dataclasses.fields(IslandReport)
                       if f.name != "island_wall_s")
METRIC_COLUMNS = (
    *_REPORT_FIELDS[:3], "wall_s", *_REPORT_FIELDS[3:],
    "total_evals", "total_episodes", "total_env_steps",
)
SUMMARY_KEYS = (
    "best_fitness", "test_mean", "test_std", "test_episodes", "solved", "wall_s",
    "confirmed", "confirmation_mean", "selecting_test", "confirmation",
    "total_evals", "total_env_steps", "total_episodes", "islands", "env", "stop_reason",
    "evals_to_solve", "episodes_to_solve", "env_steps_to_solve", "wall_to_solve",
)
FILES = ("config.yaml", "metrics.parquet", "summary.json", "solution.npz", "solution.json",
         "fitness.png")


class RunDir:
    def __init__(self, path: str) -> None:
        self.path = path

    @staticmethod
    def create(path: str) -> RunDir:
        """The directory made (checked before: ``config.resume.settle_run_dir``)."""
        os.makedirs(path, exist_ok=True)
        return RunDir(path)

    def file(self, name: str) -> str:
        return os.path.join(self.path, name)

    def _atomic_text(self, name: str, text: str) -> None:
        tmp = self.file(f".{name}.tmp")
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, self.file(name))

    # ---- writing ---------------------------------------------------------------------
    def write_config(self, cfg_dict: dict[str, Any]) -> None:
        import yaml

        self._atomic_text("config.yaml", yaml.safe_dump(cfg_dict, sort_keys=False))

    def write_metrics(self, rows: list[dict[str, Any]]) -> None:
        import pandas as pd

        df = pd.DataFrame(rows, columns=list(METRIC_COLUMNS))
        for c in ("island", "generation", "evals", "env_steps", "immigrants",
                  "immigrants_new", "rejected", "frames", "episodes", "total_evals",
                  "total_episodes", "total_env_steps", "restarts", "reevaluations",
                  "screened_out", "adopted"):
            df[c] = df[c].fillna(0).astype("int64")  # (rows of older runs lack some)
        tmp = self.file(".metrics.parquet.tmp")
        df.to_parquet(tmp, index=False)
        os.replace(tmp, self.file("metrics.parquet"))

    def write_summary(self, summary: dict[str, Any]) -> None:
        self._atomic_text("summary.json", json.dumps(_jsonable(summary), indent=2) + "\n")

    def save_solution(self, params: np.ndarray, policy_spec: dict[str, Any],
                      obs_stats: dict[str, Any] | None, env: dict[str, Any],
                      meta: dict[str, Any]) -> None:
        tree = {
            "format": SOLUTION_FORMAT,
            "params": np.asarray(params, dtype=np.float64),
            "policy": policy_spec,
            "obs_stats": obs_stats,
            "env": env,
            "meta": meta,
        }
        plainstate.save(self.file("solution.npz"), _plain(tree))
        readable = {k: v for k, v in tree.items() if k != "params"}
        readable["num_params"] = int(np.size(params))
        if obs_stats is not None:
            readable["obs_stats"] = {"count": obs_stats["count"],
                                     "mean": np.asarray(obs_stats["mean"]).tolist(),
                                     "std": np.sqrt(np.asarray(obs_stats["m2"])
                                                    / max(obs_stats["count"], 1)).tolist()}
        self._atomic_text("solution.json", json.dumps(_jsonable(readable), indent=2) + "\n")

    def plot(self, rows: list[dict[str, Any]], title: str = "",
             tests: list[dict[str, Any]] | None = None, target: float | None = None,
             scale: Scale = FITNESS) -> None:
        plot_fitness(rows, self.file("fitness.png"), title, tests, target, scale)


def plot_fitness(rows: list[dict[str, Any]], path: str, title: str = "",
                 tests: list[dict[str, Any]] | None = None, target: float | None = None,
                 scale: Scale = FITNESS) -> None:
    """Each island's population mean fitness against wall-clock seconds, every test
    (selecting: circles; confirmation: diamonds; filled when it reached the target) and the
    target. Not the best training fitness so far: that is the maximum of many noisy
    evaluations on a few episodes, and on LunarLander it sat at 240 while the genomes it
    named tested at 183-190 on fresh episodes (issue 42). ``target`` and the curves in
    ``scale``: a user's function's own values (a cost: minus the fitness). Drawn on a
    ``Figure`` of its own, not through pyplot: a notebook that runs islands keeps its inline
    backend."""
    from matplotlib.figure import Figure

    by_island: dict[int, list[dict[str, Any]]] = {}
    for r in sorted(rows, key=lambda r: r["wall_s"]):
        by_island.setdefault(int(r["island"]), []).append(r)
    spread = _settings_vary(rows)
    fig = Figure(figsize=(8, 7.5 if spread else 4.5), dpi=100)
    axes = fig.subplots(2 if spread else 1, 1, sharex=True, squeeze=False,
                        gridspec_kw={"height_ratios": [3, 2]} if spread else None)
    ax = axes[0, 0]
    if spread:
        _plot_settings(axes[1, 0], by_island)
    for i, rs in sorted(by_island.items()):
        ax.plot([r["wall_s"] for r in rs],
                [scale.user(r.get("fitness_mean", np.nan)) for r in rs],
                lw=1, alpha=0.8, label=f"island {i} ({rs[0]['strategy']}): population mean")
    _plot_tests(ax, tests or [], target, scale)
    axes[-1, 0].set_xlabel("wall-clock time (s)")
    ax.set_ylabel("return" if scale == FITNESS else scale.word)
    if scale.sign < 0:  # a cost falls by orders of magnitude towards its target: log scale
        ax.set_yscale("symlog", linthresh=abs(float(target)) if target else 1e-6)
    ax.set_title(title or "fitness")
    ax.grid(alpha=0.3)
    if len(by_island) <= 16:
        ax.legend(fontsize=7, loc="lower right" if scale.sign > 0 else "best")
    fig.tight_layout()
    fig.savefig(path)  # Agg, picked from the file's extension


def _settings_vary(rows: list[dict[str, Any]]) -> bool:
    """Whether the islands ran with different fixed settings, or changed them
    (``--hp-spread``): the learning rates reported are not all one value."""
    lrs = {r.get("lr") for r in rows if np.isfinite(r.get("lr", np.nan))}
    return len(lrs) > 1


def _plot_settings(ax, by_island: dict[int, list[dict[str, Any]]]) -> None:
    """Each island's ``lr`` (solid) and ``sigma`` (dashed) over time, log scale: which
    settings the islands ran with and where an adopting island took another's."""
    for i, rs in sorted(by_island.items()):
        t = [r["wall_s"] for r in rs]
        line, = ax.plot(t, [r.get("lr", np.nan) for r in rs], lw=1.2, label=f"island {i} lr")
        ax.plot(t, [r.get("sigma", np.nan) for r in rs], lw=1, ls="--", color=line.get_color(),
                label=f"island {i} sigma")
    ax.set_yscale("log")
    ax.set_ylabel("setting (log)")
    ax.grid(alpha=0.3, which="both")
    if len(by_island) <= 8:
        ax.legend(fontsize=7, loc="upper right", ncol=2)


def _plot_tests(ax, tests: list[dict[str, Any]], target: float | None,
                scale: Scale = FITNESS) -> None:
    """Tests as markers at the time they finished; the target as a dashed line."""
    if target is not None:
        ax.axhline(float(target), color="black", ls="--", lw=1, label=f"target {target:g}")
    for role, marker, color in (("selecting", "o", "tab:red"),
                                ("confirmation", "D", "tab:green")):
        ts = [t for t in tests if t.get("role", "selecting") == role]
        if not ts:
            continue
        passed = [bool(t.get("passed")) for t in ts]
        ax.scatter([t["wall_s"] for t in ts], [scale.user(t["mean"]) for t in ts],
                   marker=marker, s=36,
                   zorder=3, edgecolors=color, linewidths=1.5,
                   facecolors=[color if p else "none" for p in passed],
                   label=f"{role} tests ({sum(passed)} of {len(ts)} reached the target)")


def _plain(x: Any) -> Any:
    """Tuples -> lists, numpy scalars kept (plainstate stores them exactly)."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x
