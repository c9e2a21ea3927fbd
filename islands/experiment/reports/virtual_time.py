"""The ``virtual-time`` report: does the virtual clock predict the real one?

Each configuration (the grid without its ``arm``) ran on both runtimes over the same seeds:
``arm`` names ``real`` (``runtime: ray``, this machine's cores) or ``virtual``
(``runtime: virtual`` over a cluster file that describes this machine). Per configuration:
the Kaplan-Meier median seconds to solve on each (unsolved runs censored at the seconds they
ran; the virtual runs' seconds are virtual), their ratio and whether it is within the
issue's 15%, and whether the seconds to solve and the training episodes to solve have the
same distributions (log-rank p > 0.05: no difference shown). The virtual runtime computes
every evaluation for real, so episodes differ between the two only by what the clock
changes: the order in which migrants and tests arrive.
"""

from __future__ import annotations

import math

import pandas as pd

from ..cells import ran
from ..stats import kaplan_meier, logrank
from .common import Context, fmt, km_cell, md_table

WITHIN = 0.15  # the bar: the predicted median within 15% of the real one
ALPHA = 0.05


def _side(runs: pd.DataFrame, column: str):
    return kaplan_meier(runs[column], runs["solved"])


def calibration_rows(results: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration with both a real and a virtual cell (same seeds only)."""
    rows = []
    for config, real, virt in _paired(results, "runtime"):
        kr, kv = _side(real, "wall_used"), _side(virt, "wall_used")
        ratio = kv.median / kr.median if kr.median and math.isfinite(kr.median) else math.nan
        p = logrank(real["episodes_used"], real["solved"], virt["episodes_used"],
                    virt["solved"])
        # the seconds' distributions too: a median ratio of ten noisy runs can miss 15%
        # while the two runtimes' times to solve show no difference at all
        p_s = logrank(real["wall_used"], real["solved"], virt["wall_used"], virt["solved"])
        er, ev = _side(real, "episodes_used"), _side(virt, "episodes_used")
        rows.append({
            "configuration": config or "(all)", "seeds": real.seed.nunique(),
            "solved real / virtual": f"{int(real.solved.sum())} / {int(virt.solved.sum())}",
            "median s to solve, real [95% CI]": km_cell(kr.median, kr.low, kr.high),
            "median s to solve, virtual [95% CI]": km_cell(kv.median, kv.low, kv.high),
            "virtual / real": ratio,
            f"within {WITHIN:.0%}": (abs(ratio - 1) <= WITHIN) if math.isfinite(ratio)
            else None,
            "log-rank p (s)": p_s,
            "median episodes, real": km_cell(er.median, er.low, er.high),
            "median episodes, virtual": km_cell(ev.median, ev.low, ev.high),
            "log-rank p (episodes)": p,
        })
    return pd.DataFrame(rows)


def clock_rows(results: pd.DataFrame) -> pd.DataFrame:
    """The clock alone, per configuration: median training env steps per second (real or
    virtual seconds) on each side over the same seeds, solved or not. Their ratio is how
    much faster the model runs the islands than this machine did, whatever the episodes."""
    rows = []
    for config, real, virt in _paired(results, "env_steps_per_s"):
        r, v = real.env_steps_per_s.median(), virt.env_steps_per_s.median()
        if r > 0:
            rows.append({"configuration": config or "(all)", "seeds": real.seed.nunique(),
                         "training env steps / s, real": r, "virtual": v,
                         "virtual / real": v / r})
    return pd.DataFrame(rows)


def _paired(results: pd.DataFrame, column: str):
    """Per configuration (the grid without its arm): its real and its virtual runs on the
    seeds both ran, where both have some; nothing where the results lack ``column``."""
    done = ran(results)
    if column not in done or "runtime" not in done or done.empty:
        return
    for config, cell in done.groupby(done["config"].map(_without_arm), sort=False):
        real, virt = cell[cell.runtime != "virtual"], cell[cell.runtime == "virtual"]
        seeds = set(real.seed) & set(virt.seed)
        if seeds:
            yield config, real[real.seed.isin(seeds)], virt[virt.seed.isin(seeds)]


def _without_arm(config: str) -> str:
    """``env=LunarLander-v3, islands=2, arm=real`` -> ``env=LunarLander-v3, islands=2``."""
    parts = [p.strip() for p in str(config).split(",")]
    return ", ".join(p for p in parts if p and not p.startswith("arm="))


def virtual_time_report(ctx: Context) -> list[str]:
    t = calibration_rows(ctx.results)
    head = ["## Virtual time against real time", ""]
    if t.empty:
        return head + ["No configuration has both a real and a virtual run yet.", ""]
    held = int(sum(bool(x) for x in t[f"within {WITHIN:.0%}"]))
    p = t["log-rank p (episodes)"]
    same = int((p > ALPHA).sum())  # NaN (nothing solved on either side): not counted
    ratios = ", ".join(f"{c} {fmt(r)}" for c, r in zip(t["configuration"], t["virtual / real"],
                                                        strict=True))
    clock = clock_rows(ctx.results)
    speed = ([] if clock.empty else
             ["The clock alone (medians over each configuration's runs, solved or not):", "",
              *md_table(clock), ""])
    return head + [*md_table(t), "", *speed,
                   f"**Answer.** The virtual median time to solve is within {WITHIN:.0%} of "
                   f"the real one in {held} of {len(t)} configurations (virtual / real: "
                   f"{ratios}); the episodes to solve show no difference (log-rank p > "
                   f"{ALPHA}) in {same} of {int(p.notna().sum())} with solves to compare.", ""]
