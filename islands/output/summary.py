"""What a finished run leaves in its directory: metrics, summary, solution, plot.

Plain Python: takes the run loop's :class:`~islands.runtime.archipelago.RunResult` and the
plan, and writes through :class:`~islands.output.rundir.RunDir`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..candidates import stopped_early
from ..config import Config
from ..messages import IslandInfo
from ..planning import IslandSpec
from .rundir import RunDir


def summarize(cfg: Config, plan: list[IslandSpec], infos: list[IslandInfo], result,
              startup_s: float) -> dict[str, Any]:
    """``summary.json``'s contents."""
    last: dict[int, dict[str, Any]] = {}
    for r in result.rows:
        last[r["island"]] = r
    best, test = result.best, result.test or {}
    retest = getattr(result, "retest", None)
    return {
        "env": cfg.env,
        "runtime": cfg.runtime,  # ray, or virtual (its clock and cluster: runtime/virtual)
        "islands": cfg.islands,
        "strategies": [s.strategy for s in plan],
        "best_fitness": float(result.hof["fitness"]),
        # the test that selected the solution (for a solved run, the first to reach the
        # target: biased upwards, being the maximum of several noisy tests) ...
        "test_mean": test.get("mean"),
        "test_std": test.get("std"),
        "test_episodes": test.get("episodes", 0),
        "selecting_test": _test_fields(test),
        # ... and its confirmation on fresh episodes: the unbiased figure
        "confirmation": _test_fields(retest or {}),
        "confirmation_mean": (retest or {}).get("mean"),
        # solved: the selecting test and its confirmation both reached the target
        "confirmed": bool(result.solved),
        "solved": result.solved,
        "target": cfg.target,
        "stop_reason": result.stop_reason,
        "wall_s": result.wall_s,
        "startup_s": startup_s,
        # the run loop's totals: the sum of each island's last report
        "total_evals": result.totals["evals"],
        "total_env_steps": result.totals["env_steps"],
        "total_episodes": result.totals["episodes"],
        "immigrants": result.totals.get("immigrants", 0),
        "immigrants_screened_out": result.totals.get("screened_out", 0),
        "immigrants_adopted": result.totals.get("adopted", 0),
        # the run's totals when the solution was found (the report it came from)
        **_to_solve(result),
        "generations": _generations(last, infos),
        "hall_of_fame": result.hof,
        "solution": None if best is None else {
            "island": best.island, "generation": best.generation,
            "training_fitness": best.fitness, "reeval": best.reeval},
        "tests": result.tests,
        # the tester's share of the machine, beside the islands' total_env_steps
        "tester": {"tests": len(result.tests),
                   "env_steps": sum(t.get("env_steps", 0) for t in result.tests),
                   "cpu_s": sum(t.get("cpu_s", 0.0) for t in result.tests),
                   # genomes the islands re-evaluated before offering, and the offers
                   # that re-evaluation kept from the tester
                   "reevaluations": sum(r.get("reevaluations", 0) for r in last.values()),
                   "offers_rejected": result.offers_rejected},
        "migration": {**result.coordinator_stats,
                      "latency_s": latency_summary(result.migration_latency_s,
                                                   result.coordinator_stats)},
        "cpus_per_island": [s.num_cpus for s in plan],
        "num_params": infos[0].dim if infos else None,
        "backend": infos[0].backend if infos else None,
        # per island: islands may run their own backend and device (island_specs, GPUs)
        "backends": [i.backend for i in infos],
        "devices": [i.device for i in infos],
        # process restarts: calls each island lost to a dead actor that Ray restarted
        "island_restarts": list(result.restarts),
        # strategy restarts against stagnation (--restart), from each island's last report
        "strategy_restarts": [int(last.get(i, {}).get("restarts", 0))
                              for i in range(len(plan))],
        # what failed without stopping the run (an island dropped, a report the
        # coordinator could not take, an incomplete final checkpoint, the final candidate
        # test): {"where", "message"}, also logged
        "errors": list(result.errors),
        # --elastic: the range, islands joined / retired / moved, and every change in order
        "elastic": result.elastic,
        # a user's function: what it is and the run's figures in its own scale
        "objective": _objective(cfg, result),
    }


def _objective(cfg: Config, result) -> dict[str, Any] | None:
    """A run on a user's function: the function, its settings, and the best value, the
    selecting test's and its confirmation's in the function's own scale (the cost, not
    minus the cost); None for an env."""
    obj = cfg.objective()
    if obj is None:
        return None
    d = {k: v for k, v in obj.to_dict().items() if k != "source"}  # a packed one is long
    user = obj.scale.user
    retest = getattr(result, "retest", None) or {}
    return {"function": obj.name, "travels": obj.travels, **d,
            "best": user(result.hof["fitness"]), "test": user((result.test or {}).get("mean")),
            "confirmation": user(retest.get("mean"))}


def _test_fields(test: dict[str, Any]) -> dict[str, Any] | None:
    """A test's mean, 95% interval, episodes, seed and whether it stopped early."""
    if not test:
        return None
    return {"mean": test.get("mean"), "ci95": test.get("ci95"), "std": test.get("std"),
            "episodes": test.get("episodes", 0), "seed": test.get("seed"),
            "stopped_early": stopped_early(test)}


def _generations(last: dict[int, dict[str, Any]], infos: list[IslandInfo]) -> dict[str, int]:
    """Each island's generation: its last report's, or where it made none after starting
    (resumed at its generation limit, it runs no call) the one it started at."""
    gens = {int(x.island): int(x.generation) for x in infos}
    gens.update({i: max(gens.get(i, 0), int(r["generation"])) for i, r in last.items()})
    return {str(i): g for i, g in sorted(gens.items())}


def _to_solve(result) -> dict[str, Any]:
    at = result.best.found_at if result.solved and result.best is not None else {}
    return {f"{k}_to_solve": at.get(k) for k in ("evals", "episodes", "env_steps")} | {
        "wall_to_solve": at.get("wall_s")}


def write_outputs(rd: RunDir, cfg: Config, plan: list[IslandSpec], infos: list[IslandInfo],
                  result, startup_s: float, segments: list[dict[str, Any]] | None = None
                  ) -> dict[str, Any]:
    """Write metrics.parquet, summary.json, solution.npz/.json and fitness.png; returns the
    summary. ``segments``: where and when the run ran (``output.segments``), repeated in
    the summary with its brief."""
    from .segments import where_ran

    rd.write_metrics(result.rows)
    summary = summarize(cfg, plan, infos, result, startup_s)
    if segments is not None:
        summary |= {"segments": segments, "ran": where_ran(segments)}
    rd.write_summary(summary)
    best = result.best
    if best is not None:
        # The test's evaluation, with the backend the islands used; the policy is saved
        # on its own (its spec), and islands.evaluate chooses the number of episodes.
        spec = cfg.test_spec().replace(backend=infos[0].backend).to_dict()
        env = {k: v for k, v in spec.items() if k not in ("policy", "policy_options",
                                                          "episodes")}
        meta = {"training_fitness": best.fitness, "island": best.island,
                "generation": best.generation, "test": result.test or {},
                "confirmation": getattr(result, "retest", None) or {}}
        rd.save_solution(best.params, infos[0].policy_spec, best.obs_stats, env, meta)
    rd.plot(result.rows, title=f"{cfg.env}: {cfg.islands} islands", tests=result.tests,
            target=cfg.target, scale=cfg.scale)
    return summary


def latency_summary(latencies: list[float], coordinator_stats: dict[str, Any] | None = None
                    ) -> dict[str, Any]:
    """Migration latency (emigration to the receiving island's next call): count, p50, p99
    and max in seconds (None without any migration), over the batches that arrived; and
    ``dropped``, the batches a newer one from the same source replaced in the coordinator's
    mailbox before delivery (they never arrive, so no latency of theirs is in the
    percentiles), with ``dropped_share`` of all batches the coordinator posted and settled
    (delivered + dropped; None before any)."""
    st = coordinator_stats or {}
    dropped = int(st.get("superseded", 0))
    settled = dropped + int(st.get("batches_delivered", 0))
    out = {"dropped": dropped, "dropped_share": dropped / settled if settled else None}
    if not latencies:
        return {"n": 0, "p50": None, "p99": None, "max": None, **out}
    q = np.percentile(np.asarray(latencies, dtype=np.float64), [50, 99])
    return {"n": len(latencies), "p50": float(q[0]), "p99": float(q[1]),
            "max": float(max(latencies)), **out}
