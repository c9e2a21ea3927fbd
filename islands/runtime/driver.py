"""One whole run on Ray, from a resolved config to its run directory.

Order of work, so that bad input never leaves anything behind: connect to Ray (or start an
embedded one); plan the islands and check that the cluster can place them (missing GPU /
custom resource -> ResourceError within seconds instead of actors pending forever); start
the actors and wait until each has built its evaluator and strategy; only then create the
run directory, drive the run, and write its outputs; stop the actors (and the embedded Ray).
"""

from __future__ import annotations

import time
from typing import Any

import ray

from ..config import Config
from ..output.rundir import RunDir
from ..output.segments import close_raised, commit, log_segment, open_segment
from ..output.summary import write_outputs
from ..placement import place_by_node_type
from ..planning import ResourceError, check_resources, plan_hosts, plan_islands
from ..signals import SIGNALS
from .archipelago import Archipelago
from .cluster import (
    autoscaler_running,
    cluster_nodes,
    connect,
    dashboard_line,
    wait_for_nodes,
    withdraw_request,
)
from .drive import Observer, drive


def run(cfg: Config, out: str | None = None, display: bool = True,
        observer: Observer | None = None) -> dict[str, Any]:
    """Run a resolved config; returns the summary dict (also written to the run directory).
    Raises ConfigError / ResourceError / StartError on bad input. ``cfg.resume`` set:
    continue the run in that directory from its checkpoints. Uses an already-initialized
    Ray as it is (a Tune trial's, for instance). ``observer(row, status)``: called after
    each island report (the experiment runner forwards it to Tune)."""
    from ..config.resume import check_resume, prior_rows, settle_run_dir

    if cfg.runtime == "virtual":  # (a Tune trial's: the launcher goes there directly)
        from .virtual_driver import run_virtual

        return run_virtual(cfg, out, display, observer)
    t_start, started_at, code = time.monotonic(), time.time(), commit()
    resume = cfg.resume is not None
    cfg = settle_run_dir(cfg, out)
    out = cfg.out
    started = connect(cfg)
    if display and not cfg.quiet:
        print(dashboard_line(cfg), flush=True)
    SIGNALS.install()
    arch, autoscaled, rd, segments = None, False, None, None
    try:
        nodes = cluster_nodes()
        plan, nodes, autoscaled = _plan(cfg, nodes, display)
        if resume:
            check_resume(cfg, plan)
        arch = Archipelago(cfg, plan, resume=resume,
                           hosts=plan_hosts(plan, nodes, cfg.islands_per_process))
        SIGNALS.arch = arch
        arch.start()
        infos = arch.wait_ready()
        if autoscaled:  # placed: the islands' actors keep their nodes busy now
            withdraw_request()
            autoscaled = False
        autoscaled = _ask_for_elastic_room(cfg, plan)
        startup_s = time.monotonic() - t_start
        rd = RunDir(out) if resume else RunDir.create(out)
        rd.write_config(cfg.to_yaml_dict())
        open_segment(rd.path, started_at, code)
        result = drive(arch, cfg, rd, plan, infos, display, observer,
                        prior_rows(out) if resume else [])
        segments = log_segment(rd.path, started_at, result.stop_reason,
                               result.totals["episodes"], code)
        return write_outputs(rd, cfg, plan, infos, result, startup_s, segments)
    except BaseException as e:  # a Tune trial stopped, a crash: the segment still counts
        if rd is not None and segments is None:
            close_raised(rd.path, started_at, e, code)
        raise
    finally:
        SIGNALS.arch = None
        if autoscaled:  # the run never got going: let idle nodes go again
            withdraw_request()
        if arch is not None:
            arch.shutdown()
        if started:
            ray.shutdown()


def _plan(cfg: Config, nodes: list[dict[str, float]], display: bool
          ) -> tuple[list[Any], list[dict[str, float]], bool]:
    """The islands' plan on ``nodes``; where it does not fit but an autoscaler runs, ask it
    for one bundle per island (the island's needs, ``--cpus-per-island`` or 1 CPU) and plan
    again on the nodes it added. Also returns the nodes and whether it asked."""
    def plan_on(nodes):
        return place_by_node_type(plan_islands(cfg, [n.get("CPU", 0.0) for n in nodes]),
                                  nodes)

    plan = plan_on(nodes)
    try:
        check_resources(plan, nodes)
        return plan, nodes, False
    except ResourceError:
        if not autoscaler_running():
            raise
    bundles = [{**s.needs(), "CPU": cfg.cpus_per_island or max(1.0, s.num_cpus)}
               for s in plan]

    def fits(nodes) -> bool:
        try:
            check_resources(plan_on(nodes), nodes)
            return True
        except ResourceError:
            return False

    nodes = wait_for_nodes(bundles, fits, cfg.wait_for_nodes,
                           say=lambda m: print(m, flush=True) if display else None)
    return plan_on(nodes), nodes, True


def _ask_for_elastic_room(cfg: Config, plan) -> bool:
    """An elastic run on a cluster with an autoscaler asks it for room for ``MAX`` islands,
    and grows onto the nodes it adds (withdrawn at the end of the run). Returns whether it
    asked."""
    span = cfg.elastic_span
    if span is None or not autoscaler_running(wait_s=5.0):
        return False
    from ray.autoscaler.sdk import request_resources

    request_resources(bundles=[plan[0].needs()] * span[1])
    return True
