"""What every experiment report shares: cell formatting (values with their 95% intervals),
the :class:`Context` a report writer reads, and the header (question, reproduce command,
settings, provenance, what became of every trial, the per-configuration table and its
Kaplan-Meier figure), and the appendix of resolved launcher configurations:
:func:`islands.experiment.reports.write_report` puts them around each kind's answer.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...output.segments import commit, cpu_text
from ..cells import FAILED, per_config, ran
from ..collect import missing_trials, param_value
from ..figures import km_curves, save_figure
from ..names import FIGURES_DIR, RUNS_DIR
from ..provenance import gpu_line, table_changes

ALPHA = 0.05  # significance level of the head-to-head tests (8.5)
MIN_RUNS = 5  # fewer runs in a cell: no difference is claimed


# ---- formatting ------------------------------------------------------------------------
def fmt(x: Any, digits: int = 4) -> str:
    """A table cell: ``—`` for missing, thousands separators for large numbers, ``not
    reached`` for an infinite median."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if isinstance(x, (bool, str, np.bool_)):
        return str(x)
    if not math.isfinite(float(x)):
        return "not reached" if float(x) > 0 else str(x)
    x = float(x)
    return f"{x:,.0f}" if abs(x) >= 10_000 or x == int(x) else f"{x:.{digits}g}"


def with_interval(value: float, low: float, high: float, digits: int = 3) -> str:
    """``6,000 [4,320, 9,100]``; an unbounded end as ``∞``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if math.isinf(value) and math.isinf(low):
        return "not reached"

    def end(x: float) -> str:
        return "∞" if math.isinf(x) else ("—" if math.isnan(x) else fmt(x, digits))

    return f"{fmt(value, digits)} [{end(low)}, {end(high)}]"


def km_cell(value: float, low: float, high: float, no_count: int = 0) -> str:
    """A Kaplan-Meier median with its interval, and how many runs left no count (not in
    the fit: :func:`islands.experiment.stats.kaplan_meier`)."""
    return with_interval(value, low, high) + (f"; {no_count} no count" if no_count else "")


BY_EVALS = "— (censored by the evaluation budget)"


def wall_cell(r: Any) -> str:
    """A cell's median seconds to solve, or why it has none (:data:`BY_EVALS`)."""
    if r.wall_censored_by_evals:
        return BY_EVALS
    return km_cell(r.wall_to_solve, r.wall_low, r.wall_high, r.wall_no_count)


def evals_cell(r: Any) -> str:
    return km_cell(r.evals_to_solve, r.evals_low, r.evals_high, r.evals_no_count)


def rate_cell(r: pd.Series) -> str:
    """``3/5 = 60% [23%, 88%]``."""
    if not r.runs:
        return "—"
    return (f"{int(r.solved)}/{int(r.runs)} = {r.success_rate:.0%} "
            f"[{r.success_low:.0%}, {r.success_high:.0%}]")


def md_table(df: pd.DataFrame) -> list[str]:
    """A markdown table of ``df``'s cells as :func:`fmt` writes them."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(fmt(v).replace("|", "\\|") for v in row) + " |")
    return lines


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def few(*ns: int) -> bool:
    """Too few runs in some cell to claim a difference."""
    return min(ns) < MIN_RUNS


@dataclass
class Context:
    """What a report writer reads (the loaded experiment) and the figures it saved."""

    exp_dir: Path
    meta: dict[str, Any]
    results: pd.DataFrame
    curves: pd.DataFrame
    saved: list[Path] = field(default_factory=list)

    @property
    def spec(self) -> dict[str, Any]:
        return self.meta.get("spec") or {}

    @property
    def grid(self) -> list[str]:
        return [k for k in (self.spec.get("grid") or {}) if k in self.results.columns]

    @property
    def done(self) -> pd.DataFrame:
        """The trials that ran."""
        return ran(self.results)

    def figure(self, name: str, fig: Any, caption: str) -> str:
        """Save ``fig`` as figures/<name>.png; the markdown that shows it."""
        folder = self.exp_dir / FIGURES_DIR
        folder.mkdir(exist_ok=True)
        save_figure(fig, folder / f"{name}.png")
        self.saved.append(folder / f"{name}.png")
        return f"![{caption}]({FIGURES_DIR}/{name}.png)"


# ---- what every report starts with -----------------------------------------------------
def _settings(spec: dict[str, Any]) -> list[str]:
    budget = ", ".join(f"{k}={v}" for k, v in (spec.get("budget") or {}).items()) or "none"
    grid = "; ".join(f"{k}: {', '.join(str(param_value(v)) for v in vals)}"
                     for k, vals in (spec.get("grid") or {}).items()) or "none"
    base = json.dumps(spec.get("base") or {}, sort_keys=True)
    return [f"- scale: {spec.get('scale') or 'none (the file as written)'}",
            f"- budget: {budget}",
            f"- grid: {grid}", f"- seeds: {spec.get('seeds', '?')}", f"- base: `{base}`"]


def _when(results: pd.DataFrame) -> str:
    import datetime

    t0, t1 = (pd.to_numeric(results[c], errors="coerce") for c in ("started_at", "ended_at"))
    if not len(results) or t0.isna().all():
        return "not recorded"
    day = [datetime.datetime.fromtimestamp(x, datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC") for x in (t0.min(), t1.max())]
    return f"{day[0]} to {day[1]}"


def provenance_lines(ctx: Context) -> list[str]:
    """Date, commit, machine, versions; a warning when the environment table moved."""
    p = ctx.meta.get("provenance")
    lines = ["## Provenance", "", f"- runs: {_when(ctx.results)}"]
    if not p:
        return lines + ["- commit, machine, versions: not recorded (an experiment started "
                        "before the runner recorded them)", ""]
    v = p.get("versions") or {}
    gpus = gpu_line(p)
    lines += [f"- started: {p.get('date')}, commit `{p.get('commit')}`",
              f"- machine: {p.get('cpus')} CPUs{cpu_text(p.get('cpu'))}, "
              f"{p.get('memory_gb')} GiB, GPU: {gpus} ({p.get('platform')})",
              "- versions: " + ", ".join(f"{k} {x}" for k, x in v.items())]
    lines.append(f"- report written with commit `{commit()}` (the statistics; the "
                 "runs are the commit above)")
    if p.get("note"):
        lines.append(f"- note: {p['note']}")
    changes = table_changes(ctx.meta)
    if changes:
        lines += ["", "**Warning: the environment table changed since these runs** (a rerun "
                  "would use other defaults): " + "; ".join(changes) + "."]
    return lines + [""]


def _progress(ctx: Context) -> list[str]:
    planned = len(ctx.meta.get("trials") or [])
    done = ctx.done
    counts = done["status"].value_counts() if len(done) else pd.Series(dtype=int)
    parts = ", ".join(f"{counts[s]} {s}" for s in counts.index)
    line = f"**Runs:** {len(done)} of {planned} trials ran" + (f" ({parts})" if parts else "")
    missing = missing_trials(ctx.meta, ctx.results)
    if missing:
        shown = ", ".join(missing[:10]) + (", ..." if len(missing) > 10 else "")
        line += f"; {len(missing)} not run yet ({shown})"
    lines = [line + "."]
    failed = done[done["status"].isin(FAILED)] if len(done) else done
    if len(failed):
        lines += ["", "Failed trials (each counts as a failure of its cell):", ""]
        lines += [f"- {r.trial} ({r.label}): {r.status}: {r.reason}"
                  for r in failed.itertuples()]
    clock = done[done["stopped_by_clock"]] if len(done) else done
    if len(clock):
        lines += ["", f"{len(clock)} run(s) stopped by the clock before their evaluation "
                  f"budget: {', '.join(clock['trial'])}."]
    return lines


def config_summary(ctx: Context, t: pd.DataFrame | None = None) -> pd.DataFrame:
    """The per-configuration table every report shows (from ``t``, the per-configuration
    statistics, when given)."""
    by = ctx.grid or ["config"]
    t = per_config(ctx.results, by) if t is None else t
    return pd.DataFrame({
        **{k: t[k] for k in by},
        "runs": t["runs"], "solved/runs [95% CI]": [rate_cell(r) for _, r in t.iterrows()],
        "median evals to solve [95% CI]": [evals_cell(r) for r in t.itertuples()],
        "median wall to solve, s [95% CI]": [wall_cell(r) for r in t.itertuples()],
        "tested": t["tested"], "median confirmation mean": t["confirmation_mean"],
        "median selecting test": t["test_mean"],
        "median s/gen": t["s_per_gen"], "max peak mem (MB)": t["peak_mem_mb"],
        "clock-stopped": t["stopped_by_clock"], "failed": t["n_crashed"] + t["n_oom"],
        "trials at once": t["concurrency"],
    })


NOTE = ("Times to solve are Kaplan-Meier medians: a run that did not solve (its budget, "
        "the clock or a crash stopped it) is censored at the evaluations or seconds it used, "
        "never dropped; \"not reached\" where more than half the runs never solved. "
        "Intervals are 95%: Wilson for success rates, Brookmeyer-Crowley (log-log) for "
        "medians. A run is solved when its selecting test (the first to reach the target: "
        "biased upwards, the best of several noisy tests) and its confirmation on fresh "
        "episodes both reached it; \"median confirmation mean\" is the unbiased figure, "
        "\"median selecting test\" the selecting tests' beside it. \"trials at once\": the "
        "most trials that ran at the same time as a run of the cell (1: it had the machine to "
        "itself).")


def _trials(runs: pd.DataFrame) -> str:
    shown = list(map(str, runs["trial"]))
    return ", ".join(shown[:10]) + (", ..." if len(shown) > 10 else "")


def footnotes(done: pd.DataFrame, t: pd.DataFrame | None = None) -> list[str]:
    """What a table's cells do not say alone: solved runs counted at their totals or
    unconfirmed, runs without a count, and (with the per-cell table ``t``) medians of
    seconds withheld because runs were censored by the evaluation budget."""
    if not len(done):
        return []
    notes = []
    solved = done["solved"].astype(bool)
    at_total = done[done["solved_at_total"].astype(bool)]
    if len(at_total):
        notes.append(f"{len(at_total)} solved run(s) have no count to solve (solved by the "
                     "final test of the hall of fame, in a summary written before such runs "
                     "got one): each counts at its run's totals, an upper bound "
                     f"({_trials(at_total)}).")
    old = done[solved & done["confirmed"].isna()]
    if len(old):
        notes.append(f"{len(old)} solved run(s) had no confirmation (summaries written "
                     "before confirmations, or --retest-episodes 0): solved on their "
                     f"selecting test alone, unconfirmed ({_trials(old)}).")
    lost = done[done[["evals_used", "episodes_used", "wall_used"]].isna().any(axis=1)]
    if len(lost):
        notes.append(f"{len(lost)} run(s) left no count (they failed before their first "
                     "report): each counts as unsolved in its cell's success rate and is left "
                     "out of its Kaplan-Meier fit (\"no count\" in the cell), since where it "
                     f"would lie on the time axis is unknown ({_trials(lost)}).")
    if t is not None and len(t) and t["wall_censored_by_evals"].any():
        notes.append(f"\"{BY_EVALS}\": no median of seconds where a run stopped by its "
                     "evaluation budget used fewer seconds than a solved run of its cell "
                     "took. Such a run stopped early in seconds because its evaluations ran "
                     "fast, and it would not have solved later; a Kaplan-Meier fit on seconds "
                     "would take it as \"might solve later\" (censored on another axis).")
    return [f"- {n}" for n in notes] + ([""] if notes else [])


PER_TRIAL = ("seed", "out", "namespace", "resume", "dashboard", "quiet", "address",
             "checkpoint_uri", "config")  # launcher fields that differ by trial, not by cell


def cell_configs(ctx: Context) -> dict[str, dict[str, Any]]:
    """Per configuration, the resolved launcher config (config.yaml) of its first run; a
    copy kept without its runs keeps them in experiment.json (``cell_configs``)."""
    import yaml

    out: dict[str, dict[str, Any]] = {}
    for r in ctx.done.itertuples():
        path = ctx.exp_dir / RUNS_DIR / str(r.trial) / "config.yaml"
        if r.config not in out and path.is_file():
            cfg = yaml.safe_load(path.read_text()) or {}
            out[r.config] = {k: v for k, v in cfg.items() if k not in PER_TRIAL}
    return out or dict(ctx.meta.get("cell_configs") or {})


def config_appendix(ctx: Context) -> list[str]:
    """Each cell's fully resolved launcher configuration: what all cells share, then per
    cell what differs (collapsed: it is long). From the runs' config.yaml; a copy kept
    without its runs keeps them in experiment.json (``cell_configs``)."""
    cells = cell_configs(ctx)
    if not cells:
        return []
    first = next(iter(cells.values()))
    keys = sorted({k for c in cells.values() for k in c})
    common = {k: first.get(k) for k in keys
              if all(json.dumps(c.get(k), sort_keys=True) == json.dumps(first.get(k),
                                                                        sort_keys=True)
                     for c in cells.values())}
    differ = [k for k in keys if k not in common]
    lines = ["## Resolved launcher configuration", "",
             "<details><summary>Shared by every cell (config.yaml as the launcher resolved "
             "it, per-trial fields left out)</summary>", "", "```yaml"]
    lines += [f"{k}: {json.dumps(v)}" for k, v in common.items()] + ["```", "", "</details>", ""]
    if differ:
        table = pd.DataFrame([{"cell": name, **{k: json.dumps(c.get(k)) for k in differ}}
                              for name, c in cells.items()])
        lines += ["Per cell:", ""] + md_table(table) + [""]
    return lines


def _reproduce(ctx: Context, source: str, scale: str) -> list[str]:
    """The commands that made these results: one run, or the runs a merge pooled."""
    def run(scale: str, flags: list[str], out: str = "") -> str:
        return " ".join(["python -m islands.experiment run", source,
                         *(["--scale", scale] if scale else []), *map(shlex.quote, flags),
                         *(["--out", out] if out else [])])

    parts = ctx.meta.get("sources") or []
    if not parts:
        return [run(scale, ctx.meta.get("run_flags") or [])]
    runs = [run(p.get("scale") or "", p.get("run_flags") or [], p["dir"]) for p in parts]
    dirs = " ".join(p["dir"] for p in parts)
    return runs + [f"python -m islands.experiment merge {dirs} --out {ctx.exp_dir}"]


def header(ctx: Context) -> list[str]:
    spec = ctx.spec
    source, scale = spec.get("source", "<experiment.yaml>"), spec.get("scale", "laptop")
    lines = [f"# {spec.get('name', ctx.exp_dir.name)} ({spec.get('report', 'generic')})", "",
             f"**Question.** {spec.get('question') or '—'}", ""]
    if spec.get("description"):
        lines += [str(spec["description"]).strip(), ""]
    lines += ["Reproduce:", "", "```", *_reproduce(ctx, source, scale), "```", ""]
    lines += _settings(spec) + [""] + provenance_lines(ctx) + _progress(ctx)
    lines += ["", "## Results per configuration", ""]
    if not len(ctx.done):
        return lines + ["No finished runs yet.", ""]
    by = ctx.grid[0] if len(ctx.grid) == 1 else "config"
    km = ctx.figure("km_evals", km_curves(ctx.done, by),
                    "Kaplan-Meier: runs not yet solved vs evaluations")
    t = per_config(ctx.results, ctx.grid or ["config"])
    return lines + md_table(config_summary(ctx, t)) + ["", NOTE, "", *footnotes(ctx.done, t),
                                                       km, ""]
