"""Seconds per environment step, per evaluator round and per episode on one core of this
machine: what a virtual second is made of (``runtime/virtual.py``, ``costmodel.StepCost``).

One island of the run's plan (its strategy, population, policy and environment) evolves in
this process for a few seconds after a warm-up generation, four times: on one evaluator
thread and on two, each in two shapes (``shapes``): the row's episodes per evaluation, and
``SPREAD`` times as many (or a ``SPREAD``-th as many where the pool could not hold them at
once). The seconds include the policy's forward passes and the strategy's own work per
generation, as an island call's do. A call's seconds are two terms (three: below): per env
step, and per *round* (one batched step of the evaluator's live envs: the fixed cost of a
send, a recv and a forward pass). Early generations, whose episodes are short and uneven,
pay the round's cost for few steps; late ones, with every env live for 1,000 steps, for many
(a real Hopper-v4 run's seconds per step fall by a third as its episodes lengthen:
docs/results/virtual-time.md, stage 3). The two shapes put more and fewer steps in each
round, so their generations separate the terms (non-negative least squares); the two thread
counts give each term's serial fraction, the part more threads do not speed up (Amdahl's
law). Given a solved run (``late``), both shapes are measured once more on a *late*
population, an island started at that run's solution with its observation statistics: its
episodes are long where the early ones are short, which separates a third term, per episode
(a Hopper-v4 step late in a run costs 0.70 of an early one's: docs/results/virtual-time.md,
stage 4). The record is stored with the run (``calibration.json``) and a replay reads it
back (``--calibration``), so that every virtual second traces to this measurement and a
replay's clock is the same.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config, ConfigError
from ..planning import IslandSpec

CALIBRATION_FILE = "calibration.json"
MEASURE_S = 1.5  # seconds of generations measured per shape (after a warm-up generation)
MAX_GENERATIONS = 200
SPREAD = 4  # the second shape's episodes per evaluation: this many times the row's
MAX_SERIAL = 4.0  # a term's cost at many threads at most this many times one thread's


def calibrate(cfg: Config, spec: IslandSpec, seconds: float = MEASURE_S,
              late: Late | None = None) -> dict[str, Any]:
    """Measure ``spec``'s island here (module docstring): the calibration record, with the
    per-step and per-round costs (and per-episode, with a ``late`` population) on one
    thread and each one's serial fraction from two threads, where this machine has two
    cores."""
    def shaped(t: int) -> list[dict[str, Any]]:
        return [_measure(cfg, spec, t, seconds, e, start)
                for start in (None, *([] if late is None else [late])) for e in shapes(spec)]

    per = {t: shaped(t) for t in ((1, 2) if (os.cpu_count() or 1) >= 2 else (1,))}
    one = _fit(per[1], late is not None)
    two = _fit(per[2], late is not None) if 2 in per else None
    runs = [m for ms in per.values() for m in ms]
    serial = (lambda i: 1.0) if two is None else (lambda i: _serial(one[i], two[i]))
    rec = {**{k: v for k, v in runs[0].items() if k not in ("gens", "population")},
           "s_per_step": one[1], "s_per_round": one[0],
           "serial_fraction": serial(1), "round_serial_fraction": serial(0),
           "two_threads": None if two is None else two[1],
           "two_threads_round": None if two is None else two[0],
           # each measurement with its generations (rounds, steps, episodes, seconds), so
           # that the fit can be checked or redone from the record alone
           "measurements": [{k: v for k, v in m.items() if k != "machine"} for m in runs]}
    if late is not None:
        rec |= {"s_per_episode": one[2], "episode_serial_fraction": serial(2),
                "two_threads_episode": None if two is None else two[2],
                "late": late.describe()}
    return rec


@dataclass(frozen=True)
class Late:
    """A late population's start: a solved run's solution (its genome and observation
    statistics), named by its run directory and the genome's digest."""

    params: np.ndarray
    obs_stats: dict[str, Any] | None
    source: str

    @classmethod
    def of(cls, run_dir: str, env: str) -> Late:
        """The solution of the run in ``run_dir``, checked to be ``env``'s; ConfigError
        with one line."""
        from ..persistence.solution import load_solution

        try:
            sol = load_solution(run_dir)
        except (OSError, ValueError, KeyError) as e:
            raise ConfigError(f"--late: {run_dir} holds no solution ({type(e).__name__})"
                              ) from None
        got = sol["env"]["env_id"] if isinstance(sol.get("env"), dict) else str(sol.get("env"))
        if got != env:
            raise ConfigError(f"--late: {run_dir} is a run of {got!r}, not {env!r}")
        return cls(np.asarray(sol["params"], dtype=np.float64), sol.get("obs_stats"),
                   str(run_dir))

    def describe(self) -> dict[str, Any]:
        import hashlib

        return {"run": self.source, "params_sha256":
                hashlib.sha256(self.params.tobytes()).hexdigest()[:16]}


def shapes(spec: IslandSpec) -> tuple[int, int]:
    """Episodes per evaluation of the two shapes: the row's, then ``SPREAD`` times as many
    where the pool holds them at once (one episode per env slot: more envs live in each
    round), else a ``SPREAD``-th of them (at least one: fewer envs in each round)."""
    from envs.envpool_evaluator import DEFAULT_MAX_ENVS

    e = int(spec.episodes or 1)
    if int(spec.popsize or 1) * e * SPREAD <= DEFAULT_MAX_ENVS or e == 1:
        return e, e * SPREAD
    return e, max(1, e // SPREAD)


def _fit(runs: list[dict[str, Any]], episodes: bool = False) -> tuple[float, float, float]:
    """(seconds per round, per step, per episode) by non-negative least squares over the
    generations of every shape (a generation's seconds against its rounds, steps and, where
    a late population was measured, episodes: the early shapes alone keep one mean episode
    length, so steps and episodes could not be told apart there); without rounds counted
    (an evaluator that has none), the per-step cost alone."""
    from scipy.optimize import nnls

    rows = np.array([g for m in runs for g in m["gens"]], dtype=np.float64).reshape(-1, 4)
    steps_only = (0.0, float(rows[:, 3].sum() / max(rows[:, 1].sum(), 1.0)), 0.0)
    if not rows[:, 0].any():
        return steps_only
    cols = [0, 1, 2] if episodes else [0, 1]
    coef, _ = nnls(rows[:, cols], rows[:, 3])
    per_round, per_step, per_episode = (*coef, 0.0)[:3]
    if per_step <= 0:  # noise put it all on the other terms: the per-step model instead
        return steps_only
    return float(per_round), float(per_step), float(per_episode)


def _serial(s1: float, s2: float) -> float:
    """Amdahl's serial fraction f from one thread's and two threads' costs:
    s2 = s1 (f + (1 - f) / 2), so f = 2 s2 / s1 - 1, within [0, MAX_SERIAL] (1 where s1 is
    0). Above 1 the term grows with threads: a round's hand-off between the evaluator's
    threads costs more than the work the second thread takes (EnvPool's MuJoCo rounds)."""
    return 1.0 if s1 <= 0 else min(MAX_SERIAL, max(0.0, 2 * s2 / s1 - 1))


def _measure(cfg: Config, spec: IslandSpec, threads: int, seconds: float, episodes: int,
             late: Late | None = None) -> dict[str, Any]:
    """``spec``'s island on ``threads`` evaluator threads, ``episodes`` per evaluation, for
    ``seconds``; started at ``late``'s solution where given."""
    from ..island.core import IslandCore
    from ..output.segments import machine
    from .virtual import one_torch_thread

    one_torch_thread(load=cfg.uses_policy)
    shaped = spec.replace(slowdown_s=0.0, episodes=episodes)
    if late is not None:
        shaped = shaped.replace(x0=tuple(float(v) for v in late.params))
    core = IslandCore(shaped, cfg.eval_spec(), run_seed=cfg.seed, num_threads=threads,
                      device="cpu")
    gens: list[list] = []  # per generation: rounds, steps, episodes, seconds
    try:
        if late is not None and late.obs_stats is not None:
            core.set_obs_stats(late.obs_stats)
        core.evolve(1)  # warm-up: imports, first allocations
        c, t0 = core.counters, time.perf_counter()
        while (time.perf_counter() - t0 < seconds or len(gens) < 2) \
                and len(gens) < MAX_GENERATIONS:
            steps0, rounds0, ep0, t = c.env_steps, c.rounds, c.episodes, time.perf_counter()
            core.evolve(1)
            gens.append([c.rounds - rounds0, c.env_steps - steps0, c.episodes - ep0,
                         time.perf_counter() - t])  # a list: as the JSON record reads back
    finally:
        core.close()
    spent = sum(g[3] for g in gens)
    rounds, steps, eps = (sum(g[i] for g in gens) for i in range(3))
    return {"env": cfg.env, "s_per_step": spent / max(steps, 1), "env_steps": int(steps),
            "rounds": int(rounds), "seconds": round(spent, 4), "generations": len(gens),
            "population": "early" if late is None else "late",
            "mean_episode_steps": round(steps / max(eps, 1), 1),
            "threads": threads, "episodes": episodes, "strategy": spec.strategy,
            "popsize": spec.popsize, "machine": machine(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"), "gens": gens}


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
                   help=f"seconds measured per shape, of four (eight with --late; default "
                        f"{MEASURE_S:g})")
    p.add_argument("--late", metavar="RUN_DIR",
                   help="a solved run of ENV (its solution): measure a late population "
                        "started there too, for a cost per episode (tasks whose episodes "
                        "lengthen as training goes: Hopper, Walker2d)")
    p.add_argument("--from-runs", metavar="DIR", nargs="+",
                   help="fit the costs on these real runs' calls instead of measuring "
                        "(experiment or run directories: runtime/calibration_runs.py)")
    p.add_argument("--seeds", type=int, nargs="+", metavar="SEED",
                   help="with --from-runs: only the runs of these seeds (the choosing ones)")
    p.add_argument("--serial-from", metavar="CALIBRATION",
                   help="with --from-runs: the serial fractions of this measured record")
    args, rest = p.parse_known_args(argv)
    try:
        from ..config import parse_args, resolve

        cfg = resolve(parse_args(["--env", args.env, *rest]))
        late = None if args.late is None else Late.of(args.late, cfg.env)
        if args.from_runs:
            return _from_runs(args, cfg.env)
    except (ConfigError, ValueError) as e:
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        return 2
    from ..planning import plan_islands

    rec = calibrate(cfg, plan_islands(cfg, [float(os.cpu_count() or 1)])[0], args.seconds,
                    late)
    return _write(args.file, rec)


def _from_runs(args, env: str) -> int:
    """``--from-runs``: the record fitted on real runs' calls (ConfigError, one line)."""
    from .calibration_runs import fit_runs, run_dirs

    seeds = args.seeds
    base = None if args.serial_from is None else load(args.serial_from, env)
    runs = [r for d in args.from_runs for r in run_dirs(d, seeds)]
    return _write(args.file, fit_runs(runs, env, base))


def _write(file: str, rec: dict[str, Any]) -> int:
    # a new folder for the record is made, not a traceback after minutes of measuring
    Path(file).parent.mkdir(parents=True, exist_ok=True)
    Path(file).write_text(json.dumps(rec, indent=2) + "\n")
    keys = ("env", "s_per_step", "serial_fraction", "s_per_round", "round_serial_fraction",
            "s_per_episode", "episode_serial_fraction")
    print(json.dumps({k: rec[k] for k in keys if k in rec}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
