"""One whole run on the virtual clock (``--runtime virtual``), from a resolved config to
the same run directory a Ray run writes, without Ray.

Order, as the Ray driver's: read the cluster file and plan the islands on its nodes (bad
input fails before anything is written), calibrate (or read ``--calibration``), build the
islands and the coordinator, then create the run directory, drive the run and write its
outputs. ``summary.json`` says ``runtime: virtual``, the cluster file's digest, the
calibration, the virtual seconds (``wall_s`` and every time to solve) and the real ones.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ..config import Config
from ..costmodel import StepCost, load_cluster
from ..output.rundir import RunDir
from ..output.segments import close_raised, commit, log_segment, open_segment
from ..output.summary import write_outputs
from ..planning import plan_islands
from ..signals import SIGNALS
from .calibration import CALIBRATION_FILE, calibrate, load
from .drive import Observer, drive
from .virtual import VirtualArchipelago


def run_virtual(cfg: Config, out: str | None = None, display: bool = True,
                observer: Observer | None = None) -> dict[str, Any]:
    """Run ``cfg`` on its cluster file's virtual clock; returns the summary dict."""
    from ..config.resume import check_resume, prior_rows, settle_run_dir

    t_start, started_at, code = time.monotonic(), time.time(), commit()
    resume = cfg.resume is not None
    cluster = load_cluster(cfg.cluster)
    cfg = settle_run_dir(cfg, out)
    plan = plan_islands(cfg, [n.cpus for n in cluster.nodes if n.cpus > 0])
    if resume:
        check_resume(cfg, plan)
    say = print if display and not cfg.quiet else (lambda *a, **k: None)
    say(f"virtual cluster {cluster.describe()} ({cluster.source}, {cluster.digest})",
        flush=True)
    cal = load(cfg.calibration, cfg.env) if cfg.calibration else None
    if cal is None:
        say("calibrating seconds per env step and per round on this machine (a study "
            "measures once, alone: python -m islands.runtime.calibration ENV FILE --seconds "
            "10) ...", flush=True)
        cal = calibrate(cfg, plan[0])
    cost = StepCost.of(cal)
    say(f"calibration: {cost.describe()}", flush=True)
    SIGNALS.install()
    arch = VirtualArchipelago(cfg, plan, cluster, cost, resume=resume)
    rd, segments = None, None
    try:
        arch.start()
        infos = arch.wait_ready()
        startup_s = time.monotonic() - t_start
        rd = RunDir(cfg.out) if resume else RunDir.create(cfg.out)
        rd.write_config(cfg.to_yaml_dict())
        open_segment(rd.path, started_at, code)
        rd._atomic_text(CALIBRATION_FILE, json.dumps(cal, indent=2) + "\n")
        SIGNALS.arch = arch
        t_loop = time.monotonic()
        result = drive(arch, cfg, rd, plan, infos, display, observer,
                       prior_rows(cfg.out) if resume else [])
        arch.loop_s = time.monotonic() - t_loop
        segments = log_segment(rd.path, started_at, result.stop_reason,
                               result.totals["episodes"], code)
        summary = write_outputs(rd, cfg, plan, infos, result, startup_s, segments)
        summary |= _virtual_fields(arch, cal, time.monotonic() - t_start)
        rd.write_summary(summary)
        say(_clock_line(summary), flush=True)
        return summary
    except BaseException as e:
        if rd is not None and segments is None:
            close_raised(rd.path, started_at, e, code)
        raise
    finally:
        SIGNALS.arch = None
        arch.shutdown()


def _virtual_fields(arch: VirtualArchipelago, cal: dict[str, Any], real_s: float
                    ) -> dict[str, Any]:
    c = arch.cluster
    return {"runtime": "virtual", "real_s": real_s, "virtual_events": arch.events,
            # the islands' evaluator rounds, the cost model's second term beside env steps
            "island_rounds": sum(int(core.counters.rounds) for core in arch.cores.values()),
            "node_failures": arch.failures,
            # real seconds of the run loop, and of the evaluations inside it
            "loop_s": arch.loop_s, "compute_s": arch.compute_s,
            "cluster": {"file": c.source, "digest": c.digest, "nodes": len(c.nodes),
                        "cpus": c.cpus, "described": c.describe(), "latency_s": c.latency_s,
                        "straggler": {"p": c.straggler_p, "factor": c.straggler_factor},
                        "failures_per_hour": c.failures_per_hour, "restart_s": c.restart_s,
                        "head_reserved_cpus": c.head_reserved_cpus},
            "calibration": cal}


def _clock_line(summary: dict[str, Any]) -> str:
    """``virtual time to solve 41.3 s (of 55.0 s virtual); real 212.4 s``."""
    solve = summary.get("wall_to_solve")
    head = (f"virtual time to solve {solve:.1f} s" if summary.get("solved") and solve
            is not None else "not solved")
    return (f"{head} (of {summary['wall_s']:.1f} s virtual); real {summary['real_s']:.1f} s "
            f"on this machine")
