"""``python -m islands.launch``: run an archipelago from flags / a YAML config.

Order of work, so that bad input never leaves anything behind:

1. parse and resolve the config (islands.config): unknown names, malformed YAML, unknown
   keys, non-positive sizes, unknown env, cnn on vector observations -> exit 2, one line;
2. connect to Ray: ``--address`` / ``RAY_ADDRESS`` joins a cluster, otherwise an embedded
   local Ray sized to the machine (``address="local"`` never attaches to another one);
3. plan the islands and check that the cluster can place them (missing GPU / custom
   resource -> exit 2 within seconds instead of actors pending forever); start the actors
   and wait until each has built its evaluator and strategy;
4. only then create the run directory, and drive the run (islands.driver);
5. write metrics, summary, solution and plot; stop the actors (and the embedded Ray).

``run(cfg)`` is the same without argument parsing, for Python callers and tests (it uses
an already-initialized Ray as is).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import time
from typing import Any

from .config import Config, ConfigError, default_out_dir, parse_args, resolve
from .rundir import RunDir, check_new

PROG = "islands.launch"
FLUSH_S = 30.0  # seconds between metrics.parquet rewrites during a run


def connect_ray(cfg: Config) -> bool:
    """Connect to (or start) Ray; True when this call did it (so we shut it down after)."""
    import ray

    if ray.is_initialized():
        return False
    address = cfg.address or os.environ.get("RAY_ADDRESS")
    kw: dict[str, Any] = dict(namespace=cfg.namespace, log_to_driver=not cfg.quiet,
                              logging_level=logging.WARNING)
    if address:
        try:
            ray.init(address=address, **kw)
        except (ConnectionError, ValueError, RuntimeError) as e:
            msg = str(e).strip().splitlines()
            raise ConfigError(f"cannot join the Ray cluster at {address!r}: "
                              f"{msg[0] if msg else type(e).__name__}") from None
    else:
        # "local" always starts a fresh Ray, even if /tmp/ray/ray_current_cluster names a
        # running one (ray-notes); CPUs and memory default to the machine's.
        ray.init(address="local", include_dashboard=cfg.dashboard, **kw)
    return True


def check_resume(cfg: Config, plan: list[dict[str, Any]] | None = None) -> None:
    """ConfigError (one line) unless the checkpoints of the run in ``cfg.out`` can be loaded
    and belong to this config (island count, strategies)."""
    from .driver import checkpoint_uri
    from .storage import COORDINATOR_FILE, Storage, island_file

    st = Storage(checkpoint_uri(cfg))
    try:
        coord = st.load(COORDINATOR_FILE)
        isl = [st.load(island_file(i)) for i in range(cfg.islands)]
    except ValueError as e:
        raise ConfigError(f"--resume: {e}") from None
    if coord is None and not any(isl):
        raise ConfigError(f"--resume: no checkpoints in {st.uri}")
    if coord is not None and (coord.get("kind") != "coordinator"
                              or int(coord.get("n", -1)) != cfg.islands):
        raise ConfigError(f"--resume: {st.path(COORDINATOR_FILE)} is for "
                          f"{coord.get('n')} islands, the config has {cfg.islands}")
    for i, s in enumerate(isl):
        if s is None:
            continue
        name = (s.get("strategy") or {}).get("name") if isinstance(s.get("strategy"),
                                                                   dict) else None
        want = plan[i]["strategy"] if plan else None
        if s.get("kind") != "island" or int(s.get("index", -1)) != i or (
                want is not None and name != want):
            raise ConfigError(f"--resume: {st.path(island_file(i))} does not match island "
                              f"{i} of the config (strategy {name!r}, expected {want!r})")


def prior_rows(out: str) -> list[dict[str, Any]]:
    path = os.path.join(out, "metrics.parquet")
    if not os.path.exists(path):
        return []
    import pandas as pd

    return pd.read_parquet(path).to_dict("records")


class _Signals:
    """SIGINT / SIGTERM during a run: the first stops the driver loop (final checkpoint and
    summary follow), a second one aborts at once."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.arch = None
        self._old: dict[int, Any] = {}

    def _handle(self, signum, frame) -> None:
        first = self.received is None
        self.received = signum
        if first and self.arch is not None:
            self.arch.stop_signal = signum
            return
        raise KeyboardInterrupt

    def __enter__(self) -> _Signals:
        self.active, self.received = True, None
        self.install()
        return self

    def install(self) -> None:
        """(Re)install the handlers: ray.init installs its own, so run() calls this again
        once Ray is up."""
        import signal
        import threading

        if getattr(self, "active", False) and (threading.current_thread()
                                                is threading.main_thread()):
            for sig in (signal.SIGINT, signal.SIGTERM):
                old = signal.signal(sig, self._handle)
                self._old.setdefault(sig, old)

    def __exit__(self, *exc) -> None:
        import signal

        for sig, h in self._old.items():
            signal.signal(sig, h)
        self._old, self.active = {}, False


SIGNALS = _Signals()


def run(cfg: Config, out: str | None = None, display: bool = True) -> dict[str, Any]:
    """Run a resolved config; returns the summary dict (also written to ``out``).
    Raises ConfigError / driver.ResourceError / driver.StartError on bad input.
    ``cfg.resume`` set: continue the run in that directory from its checkpoints."""
    import ray

    from .display import Display
    from .driver import Archipelago, check_resources, cluster_nodes, plan_islands
    from .placement import place_by_node_type

    t_start = time.monotonic()
    resume = cfg.resume is not None
    out = cfg.resume if resume else (out or cfg.out or default_out_dir(cfg.env))
    cfg = dataclasses.replace(cfg, out=out)
    if resume:
        check_resume(cfg)
    else:
        try:
            check_new(out)
        except ValueError as e:
            raise ConfigError(str(e)) from None
    started = connect_ray(cfg)
    SIGNALS.install()
    arch = None
    try:
        nodes = cluster_nodes()
        plan = place_by_node_type(plan_islands(cfg, [n.get("CPU", 0.0) for n in nodes]),
                                  nodes)
        check_resources(plan, nodes)
        if resume:
            check_resume(cfg, plan)
        arch = Archipelago(cfg, plan, resume=resume)
        SIGNALS.arch = arch
        arch.start()
        infos = arch.wait_ready()
        startup_s = time.monotonic() - t_start
        if resume:
            rd = RunDir(out)
            arch.prior_rows = prior_rows(out)
        else:
            rd = RunDir.create(out)
        rd.write_config(cfg.to_yaml_dict())
        with Display(plan, cfg.env, quiet=cfg.quiet or not display,
                     log_interval=cfg.log_interval) as disp:
            disp.message(f"{cfg.islands} islands on {cfg.env} "
                         f"({', '.join(s['strategy'] for s in plan)}), "
                         f"{infos[0]['dim']} parameters, backend {infos[0]['backend']}, "
                         f"{plan[0]['num_cpus']:g} CPU per island; run dir {out}")
            flushed = [time.monotonic()]

            def on_report(rep: dict[str, Any], status: dict[str, Any]) -> None:
                disp.update(rep, status)
                # Long runs leave readable metrics behind even if they are killed.
                if time.monotonic() - flushed[0] >= FLUSH_S:
                    rd.write_metrics(status["rows"])
                    flushed[0] = time.monotonic()

            result = arch.run(on_report=on_report)
        summary = write_outputs(rd, cfg, plan, infos, result, startup_s)
        return summary
    finally:
        SIGNALS.arch = None
        if arch is not None:
            arch.shutdown()
        if started:
            ray.shutdown()


def write_outputs(rd: RunDir, cfg: Config, plan, infos, result, startup_s: float
                  ) -> dict[str, Any]:
    from .driver import test_step_limit

    last: dict[int, dict[str, Any]] = {}
    for r in result.rows:
        last[r["island"]] = r
    rd.write_metrics(result.rows)
    best = result.best
    test = result.test or {}
    summary: dict[str, Any] = {
        "env": cfg.env,
        "islands": cfg.islands,
        "strategies": [s["strategy"] for s in plan],
        "best_fitness": float(result.hof["fitness"]),
        "test_mean": test.get("mean"),
        "test_std": test.get("std"),
        "test_episodes": test.get("episodes", 0),
        "solved": result.solved,
        "target": cfg.target,
        "stop_reason": result.stop_reason,
        "wall_s": result.wall_s,
        "startup_s": startup_s,
        "total_evals": sum(r["evals"] for r in last.values()),
        "total_env_steps": sum(r["env_steps"] for r in last.values()),
        "generations": {str(i): r["generation"] for i, r in sorted(last.items())},
        "hall_of_fame": result.hof,
        "solution": None if best is None else {
            "island": best.island, "generation": best.generation,
            "training_fitness": best.fitness},
        "tests": result.tests,
        "migration": result.coordinator_stats,
        "cpus_per_island": [s["num_cpus"] for s in plan],
        "num_params": infos[0]["dim"] if infos else None,
        "backend": infos[0]["backend"] if infos else None,
        "island_restarts": list(result.restarts),
    }
    rd.write_summary(summary)
    if best is not None:
        env = {"env_id": cfg.env, "backend": infos[0]["backend"], "env_kwargs": cfg.env_kwargs,
               "env_module": cfg.env_module, "max_episode_steps": test_step_limit(cfg),
               "obs_norm": bool(cfg.obs_norm)}
        meta = {"training_fitness": best.fitness, "island": best.island,
                "generation": best.generation, "test": test}
        rd.save_solution(best.params, infos[0]["policy_spec"], best.obs_stats, env, meta)
    rd.plot(result.rows, title=f"{cfg.env}: {cfg.islands} islands")
    return summary


def main(argv: list[str] | None = None) -> int:
    from .driver import ResourceError, StartError

    try:
        cfg = resolve(parse_args(argv))
        out = cfg.out or default_out_dir(cfg.env)
        if cfg.resume is None:
            check_new(out)
    except (ConfigError, ValueError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    try:
        with SIGNALS:
            summary = run(dataclasses.replace(cfg, out=out))
    except (ConfigError, ResourceError, StartError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 128 + (SIGNALS.received or 2)
    if SIGNALS.received is not None:  # stopped by SIGINT/SIGTERM: 130 / 143
        print(json.dumps({"run_dir": out, "stop_reason": "interrupted",
                          "best_fitness": summary["best_fitness"]}))
        return 128 + SIGNALS.received
    keys = ("env", "solved", "best_fitness", "test_mean", "test_std", "test_episodes",
            "wall_s", "total_evals", "total_env_steps", "stop_reason")
    print(json.dumps({"run_dir": out, **{k: summary[k] for k in keys}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
