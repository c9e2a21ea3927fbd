"""Seconds per environment step on one core of this machine: what a virtual second is made
of (``runtime/virtual.py``).

One island of the run's plan (its strategy, population, policy and environment) evolves in
this process on one evaluator thread for a few seconds after a warm-up generation, then on
two: the seconds per step include the policy's forward passes and the strategy's own work
per generation, as an island call's do, and the two give the serial fraction that more
threads do not speed up (Amdahl's law). The figure is stored with the run
(``calibration.json``) and a replay reads it back (``--calibration``), so that every
virtual second traces to this measurement and a replay's clock is the same.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from pathlib import Path
from typing import Any

from ..config import Config, ConfigError
from ..planning import IslandSpec

CALIBRATION_FILE = "calibration.json"
MEASURE_S = 3.0  # seconds of generations measured (after one warm-up generation)
MAX_GENERATIONS = 200


def calibrate(cfg: Config, spec: IslandSpec, seconds: float = MEASURE_S) -> dict[str, Any]:
    """Measure ``spec``'s island here on one evaluator thread, and on two where this
    machine has two cores: the calibration record, with the serial fraction of a step's
    time (Amdahl: the policy's forward passes and the strategy run in one thread whatever
    the evaluator's threads) fitted from the two."""
    one = _measure(cfg, spec, 1, seconds)
    two = _measure(cfg, spec, 2, seconds) if (os.cpu_count() or 1) >= 2 else None
    # s2 = s1 (f + (1 - f) / 2)  =>  f = 2 s2 / s1 - 1, within [0, 1]
    serial = 1.0 if two is None else min(1.0, max(0.0, 2 * two["s_per_step"]
                                                   / one["s_per_step"] - 1))
    return {**one, "serial_fraction": serial,
            "two_threads": None if two is None else two["s_per_step"]}


def _measure(cfg: Config, spec: IslandSpec, threads: int, seconds: float) -> dict[str, Any]:
    """``spec``'s island on ``threads`` evaluator threads for ``seconds``."""
    from ..island.core import IslandCore
    from ..output.segments import machine
    from .virtual import one_torch_thread

    one_torch_thread(load=cfg.uses_policy)
    core = IslandCore(spec.replace(slowdown_s=0.0), cfg.eval_spec(), run_seed=cfg.seed,
                      num_threads=threads, device="cpu")
    try:
        core.evolve(1)  # warm-up: imports, first allocations
        steps0, gens, t0 = core.counters.env_steps, 0, time.perf_counter()
        while (time.perf_counter() - t0 < seconds or gens < 2) and gens < MAX_GENERATIONS:
            core.evolve(1)
            gens += 1
        spent, steps = time.perf_counter() - t0, core.counters.env_steps - steps0
    finally:
        core.close()
    return {"env": cfg.env, "s_per_step": spent / max(steps, 1), "env_steps": int(steps),
            "seconds": round(spent, 4), "generations": gens, "threads": threads,
            "strategy": spec.strategy, "popsize": spec.popsize, "machine": machine(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds")}


def file_for(path: str | Path, env: str) -> Path:
    """``path`` itself, or where ``path`` is a directory, its ``calibration-<env>.json``
    (``python -m islands.runtime.calibration ENV DIR/calibration-ENV.json`` writes it)."""
    path = Path(path)
    return path / f"calibration-{env.replace('/', '_')}.json" if path.is_dir() else path


def load(path: str | Path, env: str) -> dict[str, Any]:
    """A stored calibration (a file, or a directory's file for ``env``: :func:`file_for`),
    checked to be one of ``env``'s; ConfigError with one line."""
    path = file_for(path, env)
    try:
        rec = json.loads(Path(path).read_text())
        s = float(rec["s_per_step"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"--calibration: {path} is not a calibration file "
                          f"({type(e).__name__})") from None
    if not s > 0:
        raise ConfigError(f"--calibration: {path}'s s_per_step must be > 0, got {s!r}")
    if rec.get("env") != env:
        raise ConfigError(f"--calibration: {path} is for {rec.get('env')!r}, not {env!r}")
    return rec


def main(argv: list[str] | None = None) -> int:
    """``python -m islands.runtime.calibration ENV FILE [launcher flags]``: measure ENV's
    row (or the flags' config) here and write the record to FILE, for virtual runs that
    should share one calibration (``--calibration FILE``)."""
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="python -m islands.runtime.calibration",
                                description="seconds per env step on this machine, for "
                                "--runtime virtual --calibration FILE")
    p.add_argument("env", help="the environment (its row of the environment table)")
    p.add_argument("file", help="where the calibration record goes (JSON)")
    p.add_argument("--seconds", type=float, default=MEASURE_S,
                   help=f"seconds measured per thread count (default {MEASURE_S:g})")
    args, rest = p.parse_known_args(argv)
    try:
        from ..config import parse_args, resolve

        cfg = resolve(parse_args(["--env", args.env, *rest]))
    except (ConfigError, ValueError) as e:
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        return 2
    from ..planning import plan_islands

    rec = calibrate(cfg, plan_islands(cfg, [float(os.cpu_count() or 1)])[0], args.seconds)
    Path(args.file).write_text(json.dumps(rec, indent=2) + "\n")
    print(json.dumps({k: rec[k] for k in ("env", "s_per_step", "serial_fraction")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
