"""System throughput: a training archipelago against raw EnvPool stepping on the same CPUs.

Usage: ``python benchmarks/archipelago_throughput.py [--envs LunarLander-v3,BipedalWalker-v3]
[--cpus 2] [--seconds 25] [--factors 1,2,4] [--repeats 3]``

For each environment, in one run, one after another on the same ``--cpus`` CPUs:

1. **raw** (the ceiling): EnvPool with random actions on C threads, no policy, no
   evolution, at its best over pool shapes (4, 16, 64 envs per thread; async batch of half
   the envs, or sync), each timed for ``--seconds`` / 6.
2. **archipelago, k islands** for k = C, 2C, 4C (``--factors``): an embedded Ray of C CPUs,
   islands of C/k CPU each, grouped into worker processes as a default run groups them
   (``planning.plan_hosts``), and, for k > C, the same k islands with one process each
   (``--islands-per-process 1``, how runs were placed before). The workload is the env
   table's network, popsize and episodes, OpenAI-ES with a vanishing learning rate around
   the zero network (each generation a fresh sample of the same population, as in
   ``archipelago_scaling.py``: a learning run would change its episode lengths as it
   learns).
   Live env steps/s of all islands together over a window every island spans, from the
   islands' counters (``common_window_rate``; pool build-up excluded); ``startup`` is the seconds
   from creating the actors until every island is ready.
   The archipelago rows are measured ``--repeats`` times, each time followed by raw again,
   and each measurement is divided by the better of the two raw figures around it, because
   the ceiling itself moves between single measurements. Rows report medians and the range
   of their ratios.
3. **EvoTorch** ``GymNE`` (PGPE, the same network and total popsize, ``num_actors=C``) where
   ``evotorch`` is installed: our users' alternative on the same settings; its interaction
   count over the wall time of ``searcher.step()`` calls (first step excluded). Skipped,
   saying so, where it is not installed (it is not a dependency).

Table plus a final JSON line (``islands.output.benchmarking``) with every row's ratio; baseline
raw EnvPool; ``ratio`` (and ``ratio_vs_raw``): LunarLander-v3, 2C islands, default grouping.
Results: docs/results/throughput.md.
"""

from __future__ import annotations

import logging
import statistics
import sys
import time

import numpy as np
import ray

from islands.config import from_dict, resolve
from islands.envdefaults import env_defaults
from islands.output import benchmarking as bench
from islands.planning import plan_hosts, plan_islands
from islands.runtime.archipelago import Archipelago


def raw_steps_per_s(env_id: str, threads: int, seconds: float, seed: int = 0
                    ) -> tuple[float, str]:
    """The best of a few pool shapes (envs per thread, async batch of half or sync): the
    ceiling is EnvPool at its fastest on these threads, not one arbitrary shape."""
    best = (0.0, "")
    for per_thread in (4, 16, 64):
        num_envs = per_thread * threads
        for batch in (num_envs // 2, num_envs):
            sps = _raw(env_id, threads, num_envs, batch, seconds / 6, seed)
            best = max(best, (sps, f"{num_envs} envs, batch {batch}"))
    return best


def _raw(env_id: str, threads: int, num_envs: int, batch: int, seconds: float,
         seed: int) -> float:
    import envpool

    env = envpool.make(env_id, env_type="gymnasium", num_envs=num_envs, batch_size=batch,
                       num_threads=threads, seed=seed)
    space = env.action_space
    rng = np.random.default_rng(seed)
    env.async_reset()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        _, _, _, _, info = env.recv()
        ids = info["env_id"]
        if hasattr(space, "n"):
            act = rng.integers(0, space.n, size=len(ids)).astype(np.int32)
        else:
            act = rng.uniform(space.low, space.high,
                              size=(len(ids), *space.shape)).astype(np.float32)
        env.send(act, ids)
        n += len(ids)
    dt = time.perf_counter() - t0
    env.close()
    return n / dt


def archipelago_steps_per_s(env_id: str, cpus: int, k: int, seconds: float,
                            per_process: int | None, seed: int = 0) -> dict:
    cfg = resolve(from_dict(dict(
        env=env_id, islands=k, cpus_per_island=cpus / k, target=None, time_budget=seconds,
        generations=10**9, seed=seed, strategy="openai-es", sigma=0.5,
        strategy_options={"lr": 1e-12, "l2": 0.0}, islands_per_process=per_process,
        namespace=f"tp-{k}-{per_process}", quiet=True)))
    nodes = [{"CPU": float(cpus)}]
    plan = plan_islands(cfg, [float(cpus)])
    arch = Archipelago(cfg, plan, hosts=plan_hosts(plan, nodes, per_process))
    t = time.monotonic()
    try:
        arch.start()
        arch.wait_ready()
        startup = time.monotonic() - t
        res = arch.run()
    finally:
        arch.shutdown()
    return {"steps_per_s": common_window_rate(res.rows), "startup_s": startup,
            "processes": len(arch.hosts), "own_windows": own_windows_rate(res.rows)}


def own_windows_rate(rows: list[dict]) -> float:
    """The first version's figure (printed beside the new one, for comparison): each
    island's steps between its own first and last report over the span of all reports."""
    first, last = {}, {}
    for r in rows:
        first.setdefault(r["island"], r)
        last[r["island"]] = r
    steps = sum(last[i]["env_steps"] - first[i]["env_steps"] for i in last)
    span = max(r["wall_s"] for r in last.values()) - min(r["wall_s"] for r in first.values())
    return steps / span


def common_window_rate(rows: list[dict]) -> float:
    """Env steps/s of all islands together over one window that every island spans: from
    the latest first report to the earliest last report, each island's step counter
    interpolated linearly between its reports at both ends. (Counting each island from its
    own first to its own last report but dividing by the span of all of them -- the first
    version -- missed up to a generation of every island at each end: islands that share
    a process report in turn, a generation apart.)"""
    series: dict[int, list[tuple[float, float]]] = {}
    for r in rows:
        series.setdefault(r["island"], []).append((r["wall_s"], r["env_steps"]))
    t0 = max(s[0][0] for s in series.values())
    t1 = min(s[-1][0] for s in series.values())
    if t1 <= t0:
        raise RuntimeError("the islands' reports do not overlap in time: run longer")
    steps = 0.0
    for s in series.values():
        wall, count = np.array(s).T
        steps += np.interp(t1, wall, count) - np.interp(t0, wall, count)
    return steps / (t1 - t0)


def evotorch_steps_per_s(env_id: str, cpus: int, seconds: float) -> float | None:
    try:
        from evotorch.algorithms import PGPE
        from evotorch.neuroevolution import GymNE
    except ImportError:
        return None
    d = env_defaults(env_id)
    layers = ["Linear(obs_length, {h})".format(h=d["hidden"][0])] if d["hidden"] else []
    net = (" >> Tanh() >> ".join(layers + [f"Linear({d['hidden'][-1]}, act_length)"])
           if d["hidden"] else "Linear(obs_length, act_length)")
    ray.init(address="local", num_cpus=cpus, include_dashboard=False, log_to_driver=False,
             logging_level=logging.WARNING)  # EvoTorch's actors on the same C CPUs
    problem = GymNE(env=env_id, network=net, num_actors=cpus,
                    episode_length=d["max_episode_steps"], num_episodes=d["episodes"],
                    observation_normalization=bool(d["obs_norm"]))
    searcher = PGPE(problem, popsize=d["popsize"] * cpus, center_learning_rate=1e-12,
                    stdev_learning_rate=1e-12, stdev_init=0.5)
    searcher.step()  # actors start, envs build
    start = int(searcher.status.get("total_interaction_count", 0))
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        searcher.step()
    dt = time.perf_counter() - t0
    steps = int(searcher.status["total_interaction_count"]) - start
    problem.kill_actors()
    ray.shutdown()
    return steps / dt


def archipelago_rows(env_id: str, C: int, seconds: float, factors: list[int]) -> list[dict]:
    """One measurement of every archipelago row of ``env_id`` (one embedded Ray)."""
    rows = []
    ray.init(address="local", num_cpus=C, include_dashboard=False, log_to_driver=False,
             logging_level=logging.WARNING)
    try:
        for k in (f * C for f in factors):
            for per_process in ([None, 1] if k > C else [None]):
                r = archipelago_steps_per_s(env_id, C, k, seconds, per_process)
                mode = "one process per island" if per_process else "default grouping"
                rows.append({"env": env_id, "system": f"archipelago, {mode}", "islands": k,
                             "processes": r["processes"], "steps_per_s": r["steps_per_s"],
                             "startup_s": r["startup_s"]})
                print(f"  {env_id} k={k} {mode}: {r['steps_per_s']:,.0f} steps/s "
                      f"(first version's own-windows figure: {r['own_windows']:,.0f})",
                      file=sys.stderr, flush=True)
    finally:
        ray.shutdown()
    return rows


def env_rows(env_id: str, C: int, seconds: float, factors: list[int], repeats: int
             ) -> list[dict]:
    """Raw EnvPool, then ``repeats`` times the archipelago rows followed by raw again; each
    archipelago measurement over the better raw figure around it (why:
    docs/results/throughput.md), every row the median over the repeats with the
    range of its ratio."""
    raw, shape = raw_steps_per_s(env_id, C, seconds)
    raws = [raw]
    print(f"  {env_id} raw EnvPool: {raw:,.0f} steps/s ({shape})", file=sys.stderr, flush=True)
    runs: dict[tuple[int, str], list[dict]] = {}
    for _ in range(repeats):
        rows = archipelago_rows(env_id, C, seconds, factors)
        raws.append(raw_steps_per_s(env_id, C, seconds)[0])
        print(f"  {env_id} raw EnvPool: {raws[-1]:,.0f} steps/s", file=sys.stderr, flush=True)
        for r in rows:
            r["ratio_vs_raw"] = r["steps_per_s"] / max(raws[-2], raws[-1])
            runs.setdefault((r["islands"], r["system"]), []).append(r)
    out = [{"env": env_id, "system": f"raw EnvPool, {C} threads, {shape}", "islands": 0,
            "steps_per_s": statistics.median(raws), "ratio_vs_raw": 1.0,
            "raw_runs": [round(x) for x in raws]}]
    for reps in runs.values():
        ratios = [r["ratio_vs_raw"] for r in reps]
        out.append({**reps[0], "steps_per_s": statistics.median(r["steps_per_s"] for r in reps),
                    "ratio_vs_raw": statistics.median(ratios),
                    "ratio_range": [round(min(ratios), 3), round(max(ratios), 3)],
                    "startup_s": statistics.median(r["startup_s"] for r in reps)})
    return out


def main(argv: list[str] | None = None) -> int:
    p = bench.parser(__doc__)
    p.add_argument("--envs", default="LunarLander-v3,BipedalWalker-v3")
    p.add_argument("--cpus", type=int, default=2)
    bench.add_seconds(p, 25.0, "time per measurement: an archipelago row, EvoTorch, the raw "
                      "ceiling (its six pool shapes share it)")
    p.add_argument("--factors", default="1,2,4", help="k = factor x cpus islands")
    p.add_argument("--repeats", type=int, default=3,
                   help="archipelago measurements per row, each between two raw ones")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error(f"--repeats must be >= 1, got {args.repeats}")
    C = args.cpus
    factors = [int(x) for x in args.factors.split(",")]
    rows: list[dict] = []
    for env_id in args.envs.split(","):
        measured = env_rows(env_id, C, args.seconds, factors, args.repeats)
        rows += measured
        raw = measured[0]["steps_per_s"]
        evo = evotorch_steps_per_s(env_id, C, args.seconds)
        rows.append({"env": env_id, "system": "EvoTorch GymNE (PGPE)", "islands": 0,
                     "steps_per_s": evo, "ratio_vs_raw": None if evo is None else evo / raw,
                     "note": None if evo is not None else "evotorch not installed"})
    print(f"\n{'env':18} | {'system':48} | {'k':>3} | {'procs':>5} | {'env steps/s':>11} | "
          f"{'ratio vs raw':>12} | {'range':>11} | {'startup s':>9}")
    print("-" * 136)
    for r in rows:
        sps = "skipped" if r["steps_per_s"] is None else f"{r['steps_per_s']:,.0f}"
        ratio = "-" if r["ratio_vs_raw"] is None else f"{r['ratio_vs_raw']:.3f}"
        span = "{:.3f}-{:.3f}".format(*r["ratio_range"]) if "ratio_range" in r else ""
        print(f"{r['env']:18} | {r['system']:48} | {r['islands'] or '':>3} | "
              f"{r.get('processes', ''):>5} | {sps:>11} | {ratio:>12} | {span:>11} | "
              f"{r.get('startup_s', 0) or 0:9.1f}")
    key = [r for r in rows if r["env"] == "LunarLander-v3" and r["islands"] == 2 * C
           and r["system"].endswith("default grouping")]
    ratio = round(key[0]["ratio_vs_raw"], 3) if key else None
    bench.emit(
        "archipelago_throughput",
        rows=[{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}
              for r in rows],
        baseline=f"raw EnvPool, random actions, {C} threads", ratio=ratio,
        cpus=C, seconds=args.seconds, repeats=args.repeats, ratio_vs_raw=ratio,
        startup={f"{r['env']} k={r['islands']} {r['system']}": round(r["startup_s"], 2)
                 for r in rows if "startup_s" in r})
    return 0


if __name__ == "__main__":
    sys.exit(main())
