"""Late-phase A/B: how fast do strategies improve an island from the same checkpoint?

    python -m islands.output.late_phase_ab RUN_DIR --island 1 --seconds 900 \
        --arm cmaes --arm sep-cmaes [--arm cmaes:episodes=2] [--test-every 60]

Hard tasks stall near their target (BipedalWalker: a walker at 280 that should reach 300),
and a whole run per variant costs an hour. This module starts every arm from the island's
checkpoint of a finished (or copied) run and lets each evolve alone for the same wall time
(``--seconds``; the old ``--minutes`` still works), all arms side by side, one process per
arm pinned to its own CPU (so run as many arms as the machine has CPUs, and nothing else
beside them):

* ``cmaes`` (the run's own strategy): the checkpoint loaded as it is, so it continues
  exactly as the run would have without migration;
* any other strategy: built afresh around the checkpoint's search center with the
  checkpoint's step size (its popsize, the run's options), so only the strategy differs;
* ``:episodes=N`` evaluates on N episodes per genome instead of the run's; ``:popsize=N``
  builds the strategy afresh (as for another strategy) with that popsize.

Every ``--test-every`` seconds each arm tests its search center on 20 fresh episodes (the
same seeds for every arm; the test's CPU counts against the arm). Table of the center's
test means over time per arm, then a JSON line with each arm's last and best test and the
training episodes it ran.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from pathlib import Path

import numpy as np

from . import benchmarking

TEST_SEED = 2**30 + 777_000  # among the test seeds (islands.seeds): no training episode


def parse_arm(text: str) -> tuple[str, dict[str, int]]:
    name, _, rest = text.partition(":")
    opts = dict(kv.split("=", 1) for kv in rest.split(",") if kv)
    return name, {k: int(v) for k, v in opts.items()}


def build_core(run: Path, island: int, arm: str):
    """An IslandCore for ``arm`` started from the run's checkpoint of ``island``."""
    import dataclasses

    from ..config import parse_args, resolve
    from ..island.core import IslandCore
    from ..persistence.checkpointing import CheckpointSpec
    from ..planning import plan_islands
    from .fitness_noise import load_island  # the checkpoint's strategy, rebuilt and loaded

    name, opts = parse_arm(arm)
    cfg = resolve(parse_args(["--config", str(run / "config.yaml")]), check_env=False)
    spec = plan_islands(cfg, [float(cfg.islands)])[island]
    same = name == spec.strategy and "popsize" not in opts
    spec = dataclasses.replace(spec, strategy=name, candidate_threshold=None,
                               episodes=opts.get("episodes", spec.episodes),
                               episodes_cap=None)
    ck = CheckpointSpec(str(run / "checkpoints"), load=True) if same else None
    core = IslandCore(spec, cfg.eval_spec(), run_seed=cfg.seed, checkpoint=ck)
    if not same:  # a fresh strategy around the checkpoint's center and step size
        _, old, state = load_island(run, island)
        core.runs.start(dict(popsize=opts.get("popsize", old.popsize),
                                  sigma=float(old.sigma),
                                  seed=int(state["build"]["seed"]) + 1,
                                  x0=np.array(old.center)))
        core.set_obs_stats(state.get("obs_stats"))
    if opts.get("episodes"):
        core.set_episodes(opts["episodes"])
    return core, cfg


def run_arm(run: Path, island: int, arm: str, cpu: int, seconds: float, test_every: float,
            out: mp.Queue) -> None:
    os.sched_setaffinity(0, {cpu})
    import torch

    torch.set_num_threads(1)
    from ..evaluate import test_genome

    core, cfg = build_core(run, island, arm)
    spec = cfg.eval_spec().replace(episodes=20)
    t0, next_test, rows, ep0 = time.monotonic(), 0.0, [], core.counters.episodes
    while True:
        now = time.monotonic() - t0
        if now >= next_test:
            stats = core.evaluator.obs_stats
            t = test_genome(spec, np.array(core.strategy.center),
                            None if stats is None else stats.state_dict(), TEST_SEED)
            rows.append({"arm": arm, "t": round(now), "episodes": int(core.counters.episodes - ep0),
                         "generation": core.generation, "test_mean": t["mean"],
                         "test_std": t["std"], "sigma": float(core.strategy.sigma)})
            print(json.dumps(rows[-1]), flush=True)
            next_test += test_every
            if now >= seconds:
                break
        core.evolve(1)
    core.close()
    out.put(rows)


def main(argv: list[str] | None = None) -> None:
    p = benchmarking.parser(__doc__, prog="python -m islands.output.late_phase_ab")
    p.add_argument("run", type=Path)
    p.add_argument("--island", type=int, default=0)
    p.add_argument("--arm", action="append", required=True)
    benchmarking.add_seconds(p, 900.0, "wall time every arm evolves")
    benchmarking.renamed(p, "--minutes", "--seconds", scale=60.0, type=float)
    p.add_argument("--test-every", type=float, default=60.0)
    a = p.parse_args(argv)
    cpus = sorted(os.sched_getaffinity(0))
    if len(a.arm) > len(cpus):
        p.error(f"{len(a.arm)} arms but {len(cpus)} CPUs: one CPU per arm")
    q: mp.Queue = mp.get_context("spawn").Queue()
    procs = [mp.get_context("spawn").Process(
        target=run_arm, args=(a.run, a.island, arm, cpus[k], a.seconds, a.test_every, q))
        for k, arm in enumerate(a.arm)]
    for pr in procs:
        pr.start()
    results = [q.get() for _ in procs]
    for pr in procs:
        pr.join()
    by_arm = {rows[0]["arm"]: rows for rows in results}
    print(f"{'t (s)':>6} " + " ".join(f"{arm:>22}" for arm in a.arm))
    for k in range(max(len(r) for r in by_arm.values())):
        cells = []
        for arm in a.arm:
            r = by_arm[arm]
            cells.append(f"{r[k]['test_mean']:>13.1f} +- {r[k]['test_std']:>5.1f}"
                         if k < len(r) else " " * 22)
        t = next(by_arm[arm][k]["t"] for arm in a.arm if k < len(by_arm[arm]))
        print(f"{t:>6} " + " ".join(cells))
    print(json.dumps({arm: {"last_test": r[-1]["test_mean"], "best_test": max(
        x["test_mean"] for x in r), "episodes": r[-1]["episodes"]} for arm, r in by_arm.items()}))


if __name__ == "__main__":
    main()
