"""An experiment's ``report.md`` and ``figures/*.png``: :data:`REPORTS` maps each report
kind (what ``report:`` in an experiment YAML may name) to its writer, and
:func:`write_report` renders one.

Every report opens with the question, the command that reproduces it, the scale, budget,
grid and seeds, its provenance (:mod:`islands.experiment.provenance`), what became of every
trial (failures listed with their reasons), and a table per configuration whose numbers
carry 95% intervals (:mod:`islands.experiment.stats`): success rates with Wilson intervals,
times to solve as Kaplan-Meier medians in which unsolved, timed-out and crashed runs are
censored, never dropped (:mod:`.common`). Then the answer in the research plan's terms (its
section 8), one module per question:

- ``generic``: best fitness vs evaluations per configuration (:mod:`.generic`).
- ``network-scaling`` (8.1): N_max and where sep-CMA-ES / OpenAI-ES overtake full CMA-ES;
  ``worker-scaling`` (8.4): efficiency as algorithmic x system factor against 0.7x linear
  (:mod:`.scaling`).
- ``bipedal`` (8.2), ``pong`` (8.3): whether and how fast the target was reached
  (:mod:`.target`).
- ``neuromod-vs-cmaes`` (8.5): two arms at an equal evaluation budget (:mod:`.neuromod`).
- ``mujoco``: training episodes to ARS's thresholds against ARS V2-t (:mod:`.mujoco`).
- ``islands-vs-one``: k islands with and without migration against one population k times
  larger, per task (:mod:`.islands_vs_one`).
- ``virtual-time``: the virtual clock's time to solve against real runs of the same
  configurations and seeds (:mod:`.virtual_time`).
- ``cluster-scaling``: virtual time to solve on clusters of 16 to 1,024 cores, speedup and
  efficiency per arm, the arm that solves first (:mod:`.cluster_scaling`).

An answer says "no difference shown" where intervals overlap or a cell has fewer than
:data:`.common.MIN_RUNS` runs. Works on a partial experiment (missing trials are listed).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..names import REPORT_MD
from ..store import load
from .cluster_scaling import cluster_scaling_report
from .common import Context, config_appendix, header
from .generic import generic_report
from .islands_vs_one import islands_vs_one_report
from .mujoco import mujoco_report
from .neuromod import neuromod_report
from .scaling import network_scaling_report, worker_scaling_report
from .target import bipedal_report, pong_report
from .virtual_time import virtual_time_report

# The report kinds, in the order error messages list them; the experiment YAML's check
# (:mod:`islands.experiment.spec`) takes its allowed values from here.
REPORTS: dict[str, Callable[[Context], list[str]]] = {
    "generic": generic_report,
    "network-scaling": network_scaling_report,
    "bipedal": bipedal_report,
    "pong": pong_report,
    "worker-scaling": worker_scaling_report,
    "neuromod-vs-cmaes": neuromod_report,
    "mujoco": mujoco_report,
    "islands-vs-one": islands_vs_one_report,
    "virtual-time": virtual_time_report,
    "cluster-scaling": cluster_scaling_report,
}


def write_report(exp_dir: str | os.PathLike) -> Path:
    """Load the experiment, write report.md and figures/*.png; returns report.md's path."""
    exp = Path(exp_dir)
    meta, results, curves = load(exp)
    kind = (meta.get("spec") or {}).get("report") or "generic"
    if kind not in REPORTS:
        raise ValueError(f"unknown report kind {kind!r} (one of {', '.join(REPORTS)})")
    ctx = Context(exp, meta, results, curves)
    text = "\n".join(header(ctx) + REPORTS[kind](ctx) + config_appendix(ctx)) + "\n"
    path = exp / REPORT_MD
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path
