"""A run driven with its live table, TensorBoard scalars and periodic metrics flushes,
on either runtime (``port.Runtime``: Ray's archipelago or the virtual one)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from ..config import Config
from ..messages import RunStatus
from ..output.rundir import RunDir
from ..output.segments import touch
from .loop import run_loop
from .port import Runtime

FLUSH_S = 30.0  # seconds between metrics.parquet rewrites during a run

Observer = Callable[[dict[str, Any], RunStatus], None]


def drive(arch: Runtime, cfg: Config, rd: RunDir, plan, infos, display: bool,
           observer: Observer | None = None, prior_rows: list[dict[str, Any]] | None = None):
    """The run itself, with the live table and periodic metrics flushes; ``prior_rows``:
    the metrics of the run being resumed."""
    from ..output.display import Display
    from ..output.progress import budgets_of
    from ..output.scalars import ScalarLog

    processes = len(arch.hosts)

    budgets = budgets_of(cfg)
    scalars = ScalarLog(rd.path, len(plan), cfg.tensorboard, cfg.wandb, cfg.to_yaml_dict(),
                        scale=cfg.scale, budgets=budgets)
    with Display(plan, cfg.env, quiet=cfg.quiet or not display,
                 log_interval=cfg.log_interval, scale=cfg.scale, budgets=budgets) as disp, \
            contextlib.closing(scalars):
        obj = cfg.objective()
        if obj is not None:
            disp.message(f"objective: {obj.describe()}")
        disp.message(f"{cfg.islands} islands on {cfg.env} ({_strategies(plan)}), "
                     f"{infos[0].dim} parameters, {_backends(infos)}, "
                     f"{plan[0].num_cpus:g} CPU per island in {processes} {arch.process_kind} "
                     f"process{'es' if processes > 1 else ''}; run dir {rd.path}"
                     + (f"; elastic {cfg.elastic}: islands follow the cluster's nodes"
                        if cfg.elastic else ""))
        flushed = [time.monotonic()]

        def on_report(row: dict[str, Any], status: RunStatus) -> None:
            disp.update(row, status)
            scalars.log(row, status)
            if observer is not None:
                observer(row, status)
            # Long runs leave readable metrics behind even if they are killed.
            if time.monotonic() - flushed[0] >= FLUSH_S:
                rd.write_metrics(status.rows)
                touch(rd.path, row.get("total_episodes"))  # where it ran, so far
                flushed[0] = time.monotonic()

        result = run_loop(arch, on_report, prior_rows)
        scalars.log_final(result.test, result.solved, result.retest)
        return result


def _strategies(plan) -> str:
    """``cmaes x16`` or ``cmaes, ga, cmaes``: the islands' strategies in a few words."""
    names = [s.strategy for s in plan]
    return f"{names[0]} x{len(names)}" if len(set(names)) == 1 and len(names) > 2 \
        else ", ".join(names)


def _backends(infos) -> str:
    """``backend envpool``, or for islands on several: ``backends torch on cuda (island
    0), envpool on cpu (islands 1-3)``."""
    kinds: dict[str, list[int]] = {}
    for i in infos:
        kinds.setdefault(f"{i.backend} on {i.device}", []).append(i.island)
    if len(kinds) == 1:
        return f"backend {infos[0].backend} on {infos[0].device}"
    parts = [f"{k} (island{'s' if len(v) > 1 else ''} {_ranges(v)})" for k, v in kinds.items()]
    return "backends " + ", ".join(parts)


def _ranges(ids: list[int]) -> str:
    """``0-2,5``: sorted island indices with runs collapsed."""
    ids, out = sorted(ids), []
    for i in ids:
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out)
