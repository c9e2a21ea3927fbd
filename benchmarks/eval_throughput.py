"""Evaluation throughput: this project's EnvPool evaluator against raw EnvPool and a naive loop.

Workload: LunarLander-v3, 32 MLP(64, 64) policies with random parameters (normal * 0.1 from
a fixed seed, so episode lengths vary), 4 episodes each, 2 threads. Side by side, in one
run, interleaved over ``--repeats`` rounds (medians reported, so a noisy neighbour hits all
alike):

  (a) raw EnvPool: the same number of envs, async send/recv (batch = half the envs),
      random actions, no policy -- the ceiling;
  (b) ``EnvPoolEvaluator.evaluate`` (pool built once, before timing), its default path
      (for the MLP: the NumPy fast path, ``Policy.actor``);
  (b') the same with ``fast_actor=False``: torch ``policy.act`` every round (what (b) did
      before the fast path), to show the per-round overhead it removes;
  (s) a bound, not a competitor: the rounds (b) just ran (how many envs it sent each time),
      replayed as bare sync ``_send``/``_recv`` calls on a pool of the same size with no
      policy and no bookkeeping -- the best any scheduler in EnvPool's sync mode can do with
      an evaluation whose longest episode forces that many rounds;
  (c) naive Gymnasium loop as estool does it: one env, one individual at a time, one torch
      forward per step (timed on a prefix of the population, ``--seconds`` budget).

Plus torch-native CartPole on CPU when ``envs.torch_evaluator`` exists ("n/a" otherwise).
Prints a table and a final JSON line (``islands.output.benchmarking``; baseline (a), ``ratio`` =
``ratio_vs_raw``: b/a, median live steps/s of (b) over median steps/s of (a), wall clock)
with ``ratio_vs_naive`` (b/c). Steps are live env
steps (frames of finished episodes are not counted for (b)/(c); raw stepping counts every
frame, which is what a ceiling means). Also printed: steps per CPU-second of the whole
process for (a) and (b) (``cpu_ratio_vs_raw``), which other load on a shared machine
distorts far less than wall time, and the calling thread's CPU time per round of (b) and
(b') (``us_per_round``): the fixed cost of a round.

Where (b) loses to (a): every round (actions + one send/recv) has a fixed cost on the
calling thread, and an evaluation needs as many rounds as its longest episode (every step
needs its own round: observation -> action -> step), while most rounds step few envs. In
EnvPool's sync mode the env threads also wait while this thread works: on an idle machine the
wall-clock ratio stays below the CPU ratio by about that serialization; on a loaded one the
two come close. The ``s/a`` row bounds what any sync-mode scheduler can reach.
Figures and their reading: docs/results/eval-throughput.md.

    python benchmarks/eval_throughput.py [--repeats 5] [--threads 2]
"""

from __future__ import annotations

import json
import os
import statistics
import time
import warnings

import numpy as np
import torch

from envs.envpool_evaluator import EnvPoolEvaluator
from islands.output import benchmarking as bench

ENV_ID = "LunarLander-v3"
HIDDEN = (64, 64)


def population(num_params: int, P: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(P, num_params)) * 0.1


def bench_evaluator(ev: EnvPoolEvaluator, params: np.ndarray, seed: int,
                    sizes: list | None = None) -> tuple[float, dict]:
    """One timed ``evaluate``; with ``sizes`` (a list), the number of envs sent each round is
    appended to it (a counter on the pool's send: ~0.1 ms over a whole call)."""
    if sizes is not None:
        io = ev._io
        send = io.send

        def counting_send(ids, actions):
            sizes.append(len(ids))
            send(ids, actions)

        io.send = counting_send
    c0, t0 = time.process_time(), time.thread_time()
    try:
        res = ev.evaluate(params, seed=seed)
    finally:
        if sizes is not None:
            del io.send  # back to the class's method
    cpu, main = time.process_time() - c0, time.thread_time() - t0
    rounds = res.extra["rounds"]
    return res.env_steps / res.wall_s, {
        "env_steps": res.env_steps, "frames": res.frames, "wall_s": round(res.wall_s, 4),
        "cpu_s": round(cpu, 4), "rounds": rounds,
        "us_per_round": round(main / rounds * 1e6, 1),  # calling thread's CPU per round
        "live_fraction": res.live_fraction, "mean_len": float(res.lengths.mean()),
        "max_len": int(res.lengths.max()),
    }


def bench_sync_replay(pool, sizes: list[int]) -> float:
    """Wall seconds of bare sync send/recv rounds of the given sizes on ``pool`` (sync mode,
    action 0, no policy, no bookkeeping): what the best possible scheduler in EnvPool's sync
    mode would take for an evaluation with those rounds (an episode needs one round per
    step, so there are at least as many rounds as the longest episode has steps)."""
    ids = np.arange(max(sizes), dtype=np.int32)
    acts = np.zeros(len(ids), dtype=np.int32)
    t0 = time.perf_counter()
    for k in sizes:
        pool._send([ids[:k], ids[:k], acts[:k]])
        pool._recv()
    return time.perf_counter() - t0


def bench_raw(num_envs: int, threads: int, steps: int, seed: int) -> tuple[float, float]:
    import envpool

    env = envpool.make(ENV_ID, env_type="gymnasium", num_envs=num_envs,
                       batch_size=max(1, num_envs // 2), num_threads=threads, seed=seed)
    rng = np.random.default_rng(seed)
    actions = rng.integers(0, 4, size=(1024, num_envs // 2 or 1)).astype(np.int32)
    env.async_reset()
    n, k = 0, 0
    t0, c0 = time.perf_counter(), time.process_time()
    while n < steps:
        _, _, _, _, info = env.recv()
        ids = info["env_id"]
        env.send(actions[k % 1024, : len(ids)], ids)
        n += len(ids)
        k += 1
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    env.close()
    return n / dt, n / cpu


@torch.inference_mode()
def bench_naive(policy, params: np.ndarray, episodes: int, budget_s: float, seed: int) -> float:
    import gymnasium as gym

    env = gym.make(ENV_ID)
    n = 0
    t0 = time.perf_counter()
    for p in range(len(params)):
        pt = torch.as_tensor(params[p : p + 1], dtype=torch.float32)
        for e in range(episodes):
            obs, _ = env.reset(seed=seed + e)
            done = False
            while not done:
                o = torch.as_tensor(obs, dtype=torch.float32).reshape(1, 1, -1)
                a, _ = policy.act(pt, o)
                obs, _, term, trunc, _ = env.step(int(a[0, 0]))
                done = term or trunc
                n += 1
        if time.perf_counter() - t0 > budget_s:
            break
    dt = time.perf_counter() - t0
    env.close()
    return n / dt


def bench_torch_cartpole(P: int, episodes: int, seed: int):
    try:
        from envs.torch_evaluator import TorchEvaluator
    except ImportError:
        return None
    ev = TorchEvaluator("CartPole-v1", policy="mlp", policy_options={"hidden": HIDDEN},
                        episodes=episodes, device="cpu")
    params = population(ev.num_params, P, seed)
    ev.evaluate(params, seed=0)  # warm-up
    res = ev.evaluate(params, seed=1)
    ev.close()
    return res.env_steps / res.wall_s


def measure(args) -> dict[str, list]:
    """(a), (b), (s), (b') and (c) interleaved over ``args.repeats`` rounds, then the
    torch-native CartPole row: every round's figures, per row."""

    def make(**kw) -> EnvPoolEvaluator:
        return EnvPoolEvaluator(ENV_ID, policy="mlp", policy_options={"hidden": HIDDEN},
                                episodes=args.episodes, num_threads=args.threads,
                                torch_threads=1, **kw)

    ev, ev_ref = make(), make(fast_actor=False)
    params = population(ev.num_params, args.popsize, args.seed)
    for e in (ev, ev_ref):  # builds the pools once (not timed); both see the same episodes
        e.evaluate(params, seed=args.seed)
    num_envs = ev._layout[0] * ev._layout[1]

    import envpool

    replay_pool = envpool.make(ENV_ID, env_type="gymnasium", num_envs=num_envs,
                               batch_size=num_envs, num_threads=args.threads, seed=args.seed)
    replay_pool.reset()
    m: dict = {k: [] for k in ("raw", "raw_cpu", "ours", "naive", "details", "ref", "sync")}
    for r in range(args.repeats):
        # (a) and (b) back to back, in alternating order: slow drifts in the machine's other
        # load then hit both alike.
        for part in ("ab" if r % 2 == 0 else "ba"):
            if part == "b":
                sizes: list[int] = []
                sps, info = bench_evaluator(ev, params, seed=args.seed + 1 + r, sizes=sizes)
                m["ours"].append(sps)
                m["details"].append(info)
            else:
                sps, cps = bench_raw(num_envs, args.threads, 20000, args.seed + r)
                m["raw"].append(sps)
                m["raw_cpu"].append(cps)
        # (s) right after: this repeat's rounds of (b) replayed bare
        m["sync"].append(m["details"][-1]["env_steps"] / bench_sync_replay(replay_pool, sizes))
        m["ref"].append(bench_evaluator(ev_ref, params, seed=args.seed + 1 + r))
        m["naive"].append(bench_naive(ev.policy, params, args.episodes,
                                      args.seconds / args.repeats, args.seed + r))
    ev.close()
    ev_ref.close()
    replay_pool.close()
    m["torch_cp"] = bench_torch_cartpole(args.popsize, args.episodes, args.seed)
    m["num_envs"] = num_envs
    return m


def main(argv=None) -> dict:
    ap = bench.parser(__doc__)
    ap.add_argument("--popsize", type=int, default=32)
    ap.add_argument("--episodes", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    bench.add_seconds(ap, 8.0, "time budget of the naive loop (c), over all repeats",
                      old=("--naive-seconds",))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", message=".*precision lowered.*")
    torch.set_num_threads(1)  # inference is small; the cores belong to the env threads
    load0 = os.getloadavg()[0]
    return report(args, measure(args), load0)


def report(args, m: dict, load0: float) -> dict:
    """Medians of every row, the table, and the final JSON line."""
    raw, raw_cpu, ours, naive = m["raw"], m["raw_cpu"], m["ours"], m["naive"]
    details, ref, sync = m["details"], m["ref"], m["sync"]
    torch_cp, num_envs = m["torch_cp"], m["num_envs"]
    med = statistics.median
    a, b, c = med(raw), med(ours), med(naive)
    b_ref = med(x[0] for x in ref)
    s_sync = med(sync)
    live = med(d["live_fraction"] for d in details)
    # Steps per CPU-second (all threads of this process): what a busy shared machine cannot
    # distort much, unlike wall time.
    a_cpu = med(raw_cpu)
    b_cpu = med(d["env_steps"] / d["cpu_s"] for d in details)
    ref_cpu = med(d["env_steps"] / d["cpu_s"] for _, d in ref)
    us_round = med(d["us_per_round"] for d in details)
    us_round_ref = med(d["us_per_round"] for _, d in ref)
    pair = med(x / y for x, y in zip(ours, raw, strict=True))  # each (b) with its own (a)
    rows = [
        ("(a) raw EnvPool, random actions", a, f"{num_envs} envs, batch {num_envs // 2}"),
        ("(b) EnvPoolEvaluator", b,
         f"live fraction {live:.3f}, {us_round:.0f} us/round on the calling thread"),
        ("(b') same, fast_actor=False", b_ref,
         f"torch act every round, {us_round_ref:.0f} us/round"),
        ("(s) bare sync replay of (b)", s_sync,
         "(b)'s rounds, no policy: the best any sync-mode scheduler can do"),
        ("(c) naive Gymnasium loop", c, "1 env, 1 individual, torch per step"),
        ("torch-native CartPole (CPU)", torch_cp, "envs.torch_evaluator"),
    ]
    print(f"{ENV_ID}: P={args.popsize} MLP{HIDDEN} x {args.episodes} episodes, "
          f"{args.threads} threads, median of {args.repeats}, {os.cpu_count()} cores, "
          f"load average {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"{'':34s} {'live steps/s':>14s}  note")
    for name, v, note in rows:
        val = "n/a" if v is None else f"{v:,.0f}"
        print(f"{name:34s} {val:>14s}  {note}")
    print(f"{'ratio b/a (vs raw), wall clock':34s} {b / a:>14.3f}  target >= 0.85 "
          f"(median of per-repeat ratios {pair:.3f}; b'/a {b_ref / a:.3f})")
    print(f"{'ratio s/a (sync-mode bound)':34s} {s_sync / a:>14.3f}  b/s {b / s_sync:.3f} "
          "(what the policy and bookkeeping cost)")
    print(f"{'ratio b/c (vs naive)':34s} {b / c:>14.2f}  target >= 4")
    print(f"{'steps per CPU-second (a) / (b)':34s} {a_cpu:>7,.0f} / {b_cpu:,.0f}  "
          f"ratio {b_cpu / a_cpu:.3f} (b': {ref_cpu / a_cpu:.3f}; insensitive to other load)")
    print("per-call (b):", json.dumps(details))
    return bench.emit(
        "eval_throughput",
        rows=[{"row": name, "steps_per_s": v, "note": note} for name, v, note in rows],
        baseline=rows[0][0], ratio=round(b / a, 4),
        env=ENV_ID, popsize=args.popsize, episodes=args.episodes, threads=args.threads,
        num_envs=num_envs, raw_steps_per_s=round(a), evaluator_steps_per_s=round(b),
        evaluator_act_steps_per_s=round(b_ref), naive_steps_per_s=round(c),
        torch_cartpole_steps_per_s=None if torch_cp is None else round(torch_cp),
        live_fraction=live, us_per_round=round(us_round, 1),
        us_per_round_act=round(us_round_ref, 1),
        ratio_vs_raw=round(b / a, 4), ratio_vs_raw_paired=round(pair, 4),
        sync_replay_steps_per_s=round(s_sync), sync_bound_ratio=round(s_sync / a, 4),
        ratio_vs_naive=round(b / c, 3), cpu_ratio_vs_raw=round(b_cpu / a_cpu, 4),
        raw_all=[round(x) for x in raw], evaluator_all=[round(x) for x in ours],
        naive_all=[round(x) for x in naive], sync_all=[round(x) for x in sync])

if __name__ == "__main__":
    main()
