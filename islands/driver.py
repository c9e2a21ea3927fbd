"""The asynchronous archipelago loop; it runs in the launcher process.

Who does what:

- Each island actor evolves ``gens_per_call`` generations per ``evolve(k, immigrants,
  obs_stats)`` call and returns its report and emigrants.
- The driver keeps exactly one call in flight per island. ``ray.wait(num_returns=1)`` hands
  back whichever call finished first; the driver records the report, forwards the result to
  the coordinator with a non-blocking ``coordinator.report.remote(i, ref)`` (the object
  ref, so the data go store-to-store), and resubmits that island at once with whatever
  migrants and statistics the coordinator's *earlier* replies left for it. Coordinator
  replies are just more refs in the same ``ray.wait``: when one is ready its migrants are
  queued for the island's next call. Nobody blocks on anybody: a slow island is simply
  resubmitted less often, so it migrates less.
- Stop: per-island generation limit, time budget, or target. When a reported genome's
  training fitness reaches the target, the driver tests it -- and, alternately, that
  island's search center (see ``Candidate``) -- on ``test_episodes`` fresh episodes in a
  remote task (again one more ref in the ``ray.wait``) and stops if the test mean reaches
  the target; otherwise evolution goes on, and the next candidate is tested.

Keeping the loop in the driver (not in the coordinator) means a later fault-tolerance step
can restart a dead coordinator without losing the islands' calls in flight.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import ray

from .config import Config, strategies_of
from .coordinator import COORDINATOR_NAME, coordinator_actor_class
from .envdefaults import env_defaults
from .island import TEST_SEED_BASE, island_actor_class, island_name

log = logging.getLogger("islands.driver")


class ResourceError(RuntimeError):
    """The cluster cannot place what the run asks for; one-line message."""


class StartError(RuntimeError):
    """An island actor could not be constructed; one-line message."""


def _root_message(e: BaseException) -> str:
    """The innermost exception's ``Type: message`` from a Ray error, on one line."""
    cause = getattr(e, "cause", None) or e.__cause__
    while cause is not None and (getattr(cause, "cause", None) or cause.__cause__) is not None:
        cause = getattr(cause, "cause", None) or cause.__cause__
    src = cause if cause is not None else e
    lines = [ln for ln in str(src).strip().splitlines() if ln.strip()]
    msg = lines[-1] if lines else ""
    if cause is not None:
        return f"{type(cause).__name__}: {msg}"
    return msg


# ---- planning ---------------------------------------------------------------------------
def default_cpu_share(n_islands: int, node_cpus: list[float]) -> float:
    """The largest CPU share s such that ``n_islands`` actors of s CPUs fit on the nodes
    (sum over nodes of floor(cpus / s) >= n). Shares >= 1 are whole CPUs; smaller ones are
    rounded down to Ray's 0.0001 granularity."""
    best = 0.0
    for c in node_cpus:
        for k in range(1, n_islands + 1):
            s = c / k
            if s > best and sum(math.floor(x / s + 1e-9) for x in node_cpus) >= n_islands:
                best = s
    if best >= 1:
        return float(math.floor(best + 1e-9))
    return max(math.floor(best * 1e4) / 1e4, 1e-4)


def plan_islands(cfg: Config, node_cpus: list[float] | None = None) -> list[dict[str, Any]]:
    """One spec per island: strategy (round-robin over --strategy, or the island_specs entry),
    popsize, sigma, options, episodes, resources, slowdown, emigrant count."""
    names = strategies_of(cfg)
    table = env_defaults(cfg.env)
    share = cfg.cpus_per_island
    if share is None:
        share = default_cpu_share(cfg.islands, node_cpus or [1.0])
    plan = []
    for i in range(cfg.islands):
        s = dict((cfg.island_specs or [{}] * cfg.islands)[i])
        strategy = s.get("strategy") or names[i % len(names)]
        if "sigma" in s:
            sigma = s["sigma"]
        elif cfg.sigma is not None:
            sigma = cfg.sigma
        else:  # the table's sigma was tuned for the table's strategy only
            sigma = table["sigma"] if strategy == table["strategy"] else None
        plan.append({
            "index": i,
            "strategy": strategy,
            "popsize": s.get("popsize", cfg.popsize),
            "sigma": sigma,
            "options": {**cfg.strategy_options, **(s.get("options") or {})},
            "episodes": s.get("episodes", cfg.episodes),
            "num_cpus": float(s.get("num_cpus", share)),
            "num_gpus": float(s.get("num_gpus", cfg.gpus_per_island)),
            "resources": dict(s.get("resources", cfg.resources_per_island) or {}),
            "slowdown_s": float(s.get("slowdown_s", 0.0)),
            "emigrants": max(1, cfg.migrants),
            # an island whose best sample reaches this also returns its search center,
            # a candidate to test (see Candidate)
            "candidate_threshold": None if cfg.target is None else float(cfg.target),
        })
        if cfg.debug_exit_island == i:
            plan[-1]["debug_exit_after_gen"] = int(cfg.debug_exit_after_gen)
    return plan


def checkpoint_uri(cfg: Config) -> str | None:
    """Where the run's checkpoints go: --checkpoint-uri, else <out>/checkpoints (absolute:
    actors do not share the launcher's working directory), else nowhere."""
    if cfg.checkpoint_uri:
        return cfg.checkpoint_uri
    return os.path.join(os.path.abspath(cfg.out), "checkpoints") if cfg.out else None


def _needs(spec: dict[str, Any]) -> dict[str, float]:
    need = {"CPU": spec["num_cpus"], "GPU": spec["num_gpus"], **spec["resources"]}
    return {k: float(v) for k, v in need.items() if v}


def check_resources(plan: list[dict[str, Any]], nodes: list[dict[str, float]]) -> None:
    """ResourceError naming the missing resource if the islands cannot all be placed on
    ``nodes`` (each a dict of total resources), checked by first-fit packing, so a run
    fails in seconds instead of leaving actors PENDING forever."""
    free = [dict(n) for n in nodes]
    totals: dict[str, float] = {}
    for n in nodes:
        for k, v in n.items():
            totals[k] = totals.get(k, 0.0) + v
    for spec in sorted(plan, key=lambda s: -sum(_needs(s).values())):
        need = _needs(spec)
        for k, v in need.items():
            if totals.get(k, 0.0) + 1e-9 < v or not any(n.get(k, 0) + 1e-9 >= v for n in nodes):
                have = max((n.get(k, 0.0) for n in nodes), default=0.0)
                raise ResourceError(
                    f"island {spec['index']} needs {k}={v:g} but no node in the cluster has "
                    f"that much {k} (largest: {have:g}, cluster total: {totals.get(k, 0):g})")
        for n in free:
            if all(n.get(k, 0.0) + 1e-9 >= v for k, v in need.items()):
                for k, v in need.items():
                    n[k] -= v
                break
        else:
            total_need = {k: sum(_needs(s).get(k, 0.0) for s in plan) for k in need}
            short = [k for k in need if total_need[k] > totals.get(k, 0.0) + 1e-9]
            if short:
                raise ResourceError(
                    f"the cluster cannot place all {len(plan)} islands: they need "
                    + ", ".join(f"{k}={total_need[k]:g}" for k in short)
                    + " in total, the cluster has "
                    + ", ".join(f"{k}={totals.get(k, 0):g}" for k in short))
            raise ResourceError(
                f"the cluster cannot place all {len(plan)} islands: no node has room for "
                f"island {spec['index']} ({', '.join(f'{k}={v:g}' for k, v in need.items())})")


def cluster_nodes() -> list[dict[str, float]]:
    """Total resources of each live node of the connected Ray cluster."""
    return [dict(n["Resources"]) for n in ray.nodes() if n.get("Alive")]


def test_step_limit(cfg: Config) -> int | None:
    """Episode limit of tests: --test-max-episode-steps, else the env's registered limit
    (the standard task), else the training limit."""
    if cfg.test_max_episode_steps is not None:
        return cfg.test_max_episode_steps
    try:
        import gymnasium

        limit = gymnasium.spec(cfg.env).max_episode_steps
        if limit:
            return int(limit)
    except Exception:  # envpool-only ids (Pong-v5) are not in Gymnasium's registry
        pass
    return cfg.max_episode_steps


# ---- the run ----------------------------------------------------------------------------
@dataclasses.dataclass
class Candidate:
    """A genome to test against the target. ``kind`` "sample": the island's best evaluated
    genome; "center": the island's search center (distribution mean; the GA elite) at the
    time a sample reached the target, ``fitness`` being that sample's. The best sample's
    training fitness is biased upwards -- it won among ``popsize`` noisy evaluations on the
    same few episodes --, so it often fails a test on fresh episodes; the center was never
    selected on noise. Measured on LunarLander (one cmaes island, seed 1, both tested on 50
    fresh episodes every 5 generations): from the first sample above 200 on (generation 70),
    the center tested 143, then 227-269 in all 16 later checks; the best sample 113-276. Each
    kind passed first in some of 9 acceptance runs, hence both, in turn."""

    params: np.ndarray
    fitness: float
    island: int
    generation: int
    obs_stats: dict[str, Any] | None
    kind: str = "sample"


@dataclasses.dataclass
class RunResult:
    rows: list[dict[str, Any]]  # one per island report
    stop_reason: str
    wall_s: float
    best: Candidate | None  # the solution: passing genome, else the best tested/hof
    test: dict[str, Any] | None  # test of ``best``: mean, std, episodes
    solved: bool
    hof: dict[str, Any]
    coordinator_stats: dict[str, Any]
    tests: list[dict[str, Any]]  # every validation run: fitness, island, generation, mean
    islands: list[dict[str, Any]]  # info() per island
    restarts: list[int] = dataclasses.field(default_factory=list)  # calls lost per island


TESTER_NAME = "tester"


def _tester_class():
    @ray.remote(num_cpus=0)
    class Tester:
        """Tests candidate genomes off the islands' CPUs' critical path. An actor rather
        than a task so that its process (torch, EnvPool imports: seconds) is started with
        the islands, not when the first candidate appears."""

        def __init__(self) -> None:
            import torch

            import envs  # noqa: F401
            import policies  # noqa: F401

            torch.set_num_threads(1)  # tests run beside the islands; one thread each

        def test(self, eval_kwargs, params, obs_stats, episodes, seed, target=None):
            from .evaluate import screened_test

            return screened_test(eval_kwargs, params, obs_stats, episodes, seed, target)

        def ping(self):
            return True

    return Tester


class Archipelago:
    """Creates the named actors for a plan and drives them (see the module docstring)."""

    def __init__(self, cfg: Config, plan: list[dict[str, Any]], resume: bool = False) -> None:
        self.cfg = cfg
        self.plan = plan
        self.resume = resume  # islands and coordinator start from their checkpoints
        self.prior_rows: list[dict[str, Any]] = []  # metrics of the run being resumed
        self.stop_signal: int | None = None  # set (by a signal handler) to stop the run
        self.restarts = [0] * len(plan)  # island calls lost to a dead/restarting actor
        self.islands: list[Any] = []
        self.coordinator = None
        self.tester = None
        self.infos: list[dict[str, Any]] = []

    # ---- actors ----------------------------------------------------------------------
    def start(self) -> None:
        cfg, ns = self.cfg, self.cfg.namespace
        for name in [COORDINATOR_NAME, TESTER_NAME] + [island_name(s["index"])
                                                       for s in self.plan]:
            try:
                ray.get_actor(name, namespace=ns)
            except ValueError:
                continue
            raise ResourceError(f"actor {name!r} already exists in Ray namespace {ns!r}: "
                                f"another run is active there; pass --namespace")
        uri = checkpoint_uri(cfg)
        ckpt = None if uri is None else {"uri": uri, "interval": cfg.checkpoint_interval,
                                         "seconds": cfg.checkpoint_seconds,
                                         "load": self.resume}
        # Restarted actors reload their checkpoints; failed calls are resubmitted by the
        # driver (max_task_retries=0: Ray's retries do not keep the order of calls).
        ft = dict(max_restarts=cfg.max_restarts, max_task_retries=0)
        topo = {"kind": cfg.topology, "n": cfg.islands, "degree": cfg.topology_degree,
                "edges": cfg.edges, "seed": cfg.seed}
        self.coordinator = coordinator_actor_class().options(
            name=COORDINATOR_NAME, namespace=ns, **ft
        ).remote(cfg.islands, topo, cfg.migrants, cfg.migration_interval,
                 cfg.obs_sync_interval, bool(cfg.obs_norm), env=cfg.env,
                 checkpoint=ckpt)
        eval_kwargs = cfg.eval_kwargs()
        eval_kwargs["episodes"] = cfg.episodes
        actor = island_actor_class()
        for spec in self.plan:
            opts: dict[str, Any] = dict(name=island_name(spec["index"]), namespace=ns,
                                        num_cpus=spec["num_cpus"], num_gpus=spec["num_gpus"],
                                        **ft)
            if spec["resources"]:
                opts["resources"] = spec["resources"]
            self.islands.append(actor.options(**opts).remote(
                spec["index"], spec, eval_kwargs, cfg.seed, cfg.device, checkpoint=ckpt))

    def wait_ready(self, timeout: float = 300) -> list[dict[str, Any]]:
        """Block until every island is constructed; StartError with the island's own
        one-line error if one fails (bad strategy option, env that will not build)."""
        try:
            ray.get(self.coordinator.ping.remote(), timeout=timeout)
        except ray.exceptions.RayError as e:
            raise StartError(f"the coordinator failed to start: {_root_message(e)}") from None
        infos = []
        for spec, h in zip(self.plan, self.islands, strict=True):
            try:
                infos.append(ray.get(h.info.remote(), timeout=timeout))
            except ray.exceptions.GetTimeoutError:
                raise StartError(f"island {spec['index']} did not start within {timeout:g} s "
                                 f"(resources {_needs(spec)} not available?)") from None
            except ray.exceptions.RayError as e:
                raise StartError(f"island {spec['index']} failed to start: "
                                 f"{_root_message(e)}") from None
        self.infos = infos
        # The tester starts now, not with the islands: its imports (seconds of CPU) then
        # overlap the first generations, when there is nothing to test yet, instead of
        # slowing the islands' start.
        if self.tester is None:
            # Stateless: after a restart, Ray may simply re-run its calls.
            self.tester = _tester_class().options(
                name=TESTER_NAME, namespace=self.cfg.namespace,
                max_restarts=self.cfg.max_restarts, max_task_retries=-1).remote()
        return infos

    def shutdown(self) -> None:
        """Kill the actors and wait (briefly) until their names are free again."""
        handles = [(island_name(s["index"]), h) for s, h in zip(self.plan, self.islands,
                                                                  strict=False)]
        if self.coordinator is not None:
            handles.append((COORDINATOR_NAME, self.coordinator))
        if self.tester is not None:
            handles.append((TESTER_NAME, self.tester))
        for _, h in handles:
            try:
                ray.kill(h, no_restart=True)
            except Exception:  # already dead
                pass
        deadline = time.monotonic() + 10
        for name, _ in handles:
            while time.monotonic() < deadline:
                try:
                    ray.get_actor(name, namespace=self.cfg.namespace)
                except ValueError:
                    break
                time.sleep(0.05)
        self.islands, self.coordinator, self.tester = [], None, None

    def _coordinator_final(self, in_flight: dict[Any, tuple[int, Any]],
                           unsent: list[tuple[int, Any]], timeout: float = 120.0):
        """Hall of fame and stats from the coordinator after it has taken every report
        (those in flight, and those it lost while restarting), waiting for it to come back
        if it is restarting."""
        deadline = time.monotonic() + timeout
        unsent = list(unsent)
        # Reports sent while it was restarting are taken once it is back; lost ones resent.
        for reply, (i, r) in in_flight.items():
            try:
                ray.get(reply, timeout=max(0.1, deadline - time.monotonic()))
            except ray.exceptions.RayActorError:
                unsent.append((i, r))
            except (ray.exceptions.RayError, TimeoutError):
                pass
        while True:
            try:
                for i, r in unsent:
                    ray.get(self.coordinator.report.remote(i, r))
                unsent = []
                return (ray.get(self.coordinator.hall_of_fame.remote()),
                        ray.get(self.coordinator.stats.remote()))
            except ray.exceptions.RayActorError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def final_checkpoint(self, islands: list[Any], timeout: float = 120.0) -> None:
        """Checkpoint the given islands and the coordinator; a call that fails or takes
        longer than ``timeout`` leaves that actor's previous checkpoint in place."""
        refs = [h.checkpoint.remote() for h in islands]
        refs.append(self.coordinator.checkpoint.remote())
        deadline = time.monotonic() + timeout
        for r in refs:
            try:
                ray.get(r, timeout=max(0.1, deadline - time.monotonic()))
            except (ray.exceptions.RayError, TimeoutError) as e:
                log.warning("final checkpoint incomplete: %s", _root_message(e))

    # ---- testing a genome ------------------------------------------------------------
    def _submit_test(self, cand: Candidate, seed_offset: int, screen: bool = True):
        """Test ``cand`` on fresh episodes; with ``screen`` a short screen first rejects
        candidates clearly below the target (evaluate.screened_test)."""
        kw = self.cfg.eval_kwargs()
        kw["max_episode_steps"] = test_step_limit(self.cfg)
        return self.tester.test.remote(
            kw, cand.params, cand.obs_stats, self.cfg.test_episodes,
            TEST_SEED_BASE + 7919 * seed_offset, self.cfg.target if screen else None)

    # ---- the loop --------------------------------------------------------------------
    def run(self, on_report: Callable[[dict[str, Any], dict[str, Any]], None] | None = None
            ) -> RunResult:
        """Drive the islands until a stop condition; ``on_report(report, status)`` is called
        after each island report (status: elapsed, hof, tests, target, rows)."""
        cfg = self.cfg
        n = len(self.islands)
        target = cfg.target
        # A resumed run's clock and metrics go on from where it stopped.
        t0 = time.monotonic() - max((r["wall_s"] for r in self.prior_rows), default=0.0)
        t_start = time.monotonic()
        k = cfg.gens_per_call
        waiting: list[dict[str, Any]] = [{"immigrants": [], "obs_stats": None}
                                         for _ in range(n)]
        pending: dict[Any, int] = {}  # island call in flight -> island
        coord: dict[Any, tuple[int, Any]] = {}  # coordinator reply -> (island, result ref)
        # Reports the coordinator lost while it was down (it restarts from its checkpoint):
        # resent, with the best result seen so far, so no emigrant and no best is lost.
        coord_retry: list[tuple[int, Any]] = []
        coord_retry_at = 0.0
        best_seen: tuple[float, int, Any] | None = None  # (fitness, island, result ref)
        rows: list[dict[str, Any]] = list(self.prior_rows)
        alive = [True] * n
        hof: dict[str, Any] = {"fitness": -math.inf, "island": None, "generation": None}
        hof.update(ray.get(self.coordinator.hof_summary.remote()))  # a resumed one, if any
        sent: list[tuple] = [((), None)] * n  # each island's call in flight: args
        retry_at: dict[int, float] = {}  # island -> when to resubmit its lost call
        failures = [0] * n  # consecutive lost calls per island
        # best untested candidates above the target, by kind; tests alternate between the
        # kinds, center first (see Candidate)
        cands: dict[str, Candidate | None] = {"center": None, "sample": None}
        last_kind = "sample"
        test_ref, test_cand = None, None
        tests: list[dict[str, Any]] = []  # every test, for the summary
        tested: list[tuple[Candidate, dict[str, Any]]] = []
        passed: tuple[Candidate, dict[str, Any]] | None = None
        stop_reason = ""
        status = {"hof": hof, "elapsed": 0.0, "tests": tests, "target": target, "rows": rows}

        def submit(i: int, args: tuple | None = None) -> None:
            w = waiting[i]
            if args is None:
                args = (k, w["immigrants"] or None, w["obs_stats"])
                waiting[i] = {"immigrants": [], "obs_stats": None}
            sent[i] = args
            pending[self.islands[i].evolve.remote(*args)] = i

        def record_test(cand: Candidate, res: dict[str, Any], final: bool = False) -> bool:
            """Log a finished test; True when it passes the target."""
            tests.append({"fitness": cand.fitness, "island": cand.island,
                          "generation": cand.generation, "kind": cand.kind, **res,
                          "wall_s": time.monotonic() - t0, "final": final})
            tested.append((cand, res))
            log.info("test of island %d's %s (generation %d, training fitness %.1f): "
                     "mean %.1f over %d episodes%s", cand.island, cand.kind, cand.generation,
                     cand.fitness, res["mean"], res["episodes"],
                     " (screened out)" if res.get("screened_out") else "")
            return (target is not None and not res.get("screened_out")
                    and res["mean"] >= target)

        for i in range(n):
            submit(i)
        try:
            while True:
                elapsed = time.monotonic() - t_start
                if self.stop_signal is not None:
                    stop_reason = "interrupted"
                    break
                if coord_retry and time.monotonic() >= coord_retry_at:
                    for ci, cref in coord_retry:
                        coord[self.coordinator.report.remote(ci, cref)] = (ci, cref)
                    coord_retry = []
                for i in [i for i, t in retry_at.items() if time.monotonic() >= t]:
                    del retry_at[i]
                    submit(i, sent[i])  # the same migrants again: none are lost
                if cfg.time_budget is not None and elapsed >= cfg.time_budget:
                    stop_reason = "time budget"
                    break
                if passed is not None:
                    stop_reason = "target"
                    break
                if not pending and not retry_at:
                    stop_reason = "generations" if any(alive) else "all islands failed"
                    if test_ref is None:
                        break
                # Coordinator replies first: when a reply and its island's result are both
                # ready, the migrants are queued before the island is resubmitted.
                refs = list(coord) + list(pending) + ([test_ref] if test_ref else [])
                timeout = 1.0 if cfg.time_budget is None else max(
                    0.0, min(1.0, cfg.time_budget - elapsed))
                if not refs:  # only lost calls waiting to be resubmitted
                    time.sleep(min(timeout, 0.2))
                    continue
                ready, _ = ray.wait(refs, num_returns=1, timeout=timeout)
                if not ready:
                    continue
                ref = ready[0]
                if ref in pending:
                    i = pending.pop(ref)
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayActorError as e:
                        # The island's process died: Ray restarts it (max_restarts) from its
                        # checkpoint; resubmit its call until it answers again.
                        failures[i] += 1
                        self.restarts[i] += 1
                        died = isinstance(e, ray.exceptions.ActorDiedError)
                        if cfg.max_restarts == 0 or failures[i] > (5 if died else 60):
                            alive[i] = False
                            log.error("island %d died and is dropped from the run: %s", i,
                                      _root_message(e))
                        else:
                            log.warning("island %d is unavailable (%s); resubmitting its call",
                                        i, type(e).__name__)
                            retry_at[i] = time.monotonic() + min(0.5 * failures[i], 2.0)
                        continue
                    except ray.exceptions.RayError as e:
                        alive[i] = False
                        log.error("island %d failed and is dropped from the run: %s", i,
                                  _root_message(e))
                        continue
                    failures[i] = 0
                    rep = dict(result["report"])
                    rep["wall_s"] = time.monotonic() - t0
                    rows.append(rep)
                    # The ref, not the value: the coordinator reads it from the object store.
                    coord[self.coordinator.report.remote(i, ref)] = (i, ref)
                    fin = [float(x) for x in result["emigrants"]["fitness"] if np.isfinite(x)]
                    if fin and (best_seen is None or max(fin) > best_seen[0]):
                        best_seen = (max(fin), i, ref)
                    if cfg.generations is None or rep["generation"] < cfg.generations:
                        submit(i)
                    emi = result["emigrants"]
                    if target is not None and len(emi["fitness"]):
                        j = int(np.argmax(emi["fitness"]))
                        f = float(emi["fitness"][j])
                        found = {"sample": emi["params"][j], "center": result.get("center")}
                        for kind, x in found.items():
                            prev = cands[kind]
                            if x is None or f < target or (prev and prev.fitness >= f):
                                continue
                            cands[kind] = Candidate(np.array(x), f, i, rep["generation"],
                                                    result.get("obs_stats"), kind)
                    status["elapsed"] = rep["wall_s"]
                    if on_report is not None:
                        on_report(rep, status)
                elif ref in coord:
                    i, rref = coord.pop(ref)
                    try:
                        reply = ray.get(ref)
                    except ray.exceptions.RayActorError as e:
                        if cfg.max_restarts == 0:
                            log.error("coordinator report for island %d failed: %s", i,
                                      _root_message(e))
                            continue
                        if not coord_retry:
                            log.warning("the coordinator is unavailable (%s); buffering "
                                        "reports for it", type(e).__name__)
                        coord_retry.append((i, rref))
                        if best_seen is not None and all(r is not best_seen[2]
                                                         for _, r in coord_retry):
                            coord_retry.append((best_seen[1], best_seen[2]))
                        coord_retry_at = time.monotonic() + 0.5
                        continue
                    except ray.exceptions.RayError as e:
                        log.error("coordinator report for island %d failed: %s", i,
                                  _root_message(e))
                        continue
                    waiting[i]["immigrants"].extend(reply["immigrants"])
                    if reply["obs_stats"] is not None:
                        waiting[i]["obs_stats"] = reply["obs_stats"]
                    if reply["hof"]["fitness"] >= hof["fitness"]:  # (monotone: see above)
                        hof.update(reply["hof"])
                else:  # the test of a candidate finished
                    res, test_ref = ray.get(test_ref), None
                    if record_test(test_cand, res):
                        passed = (test_cand, res)
                if test_ref is None and passed is None:
                    order = ("sample", "center") if last_kind == "center" else ("center",
                                                                                 "sample")
                    kind = next((k for k in order if cands[k] is not None), None)
                    if kind is not None:
                        test_cand, cands[kind], last_kind = cands[kind], None, kind
                        test_ref = self._submit_test(test_cand, len(tests))
        except KeyboardInterrupt:
            stop_reason = "interrupted"
        wall_s = time.monotonic() - t0

        # Wrap up: a final checkpoint of everything (an island writes its own after its
        # call in flight), then the islands are not needed; the hall of fame is.
        hof_full, cstats = self._coordinator_final(coord, coord_retry)
        self.final_checkpoint([h for h, a in zip(self.islands, alive, strict=True) if a])
        for h in self.islands:
            ray.kill(h, no_restart=True)
        interrupted = stop_reason == "interrupted"
        if test_ref is not None and passed is None and not interrupted:
            try:
                res = ray.get(test_ref, timeout=600)
                if record_test(test_cand, res):
                    passed = (test_cand, res)
            except ray.exceptions.RayError:
                pass
        if passed is not None:
            best, test = passed
        else:
            # The solution is the best genome by a full test: the hall of fame gets one if
            # it has none yet (screens do not count: their few episodes are not comparable).
            full = [(c, r) for c, r in tested if not r.get("screened_out")]
            if hof_full["params"] is not None:
                hc = Candidate(np.array(hof_full["params"]), float(hof_full["fitness"]),
                               int(hof_full["island"]), int(hof_full["generation"]),
                               hof_full["obs_stats"])
                # (Not when interrupted: the user wants out now; a resume tests it later.)
                if not interrupted and not any(np.array_equal(c.params, hc.params)
                                               for c, _ in full):
                    res = ray.get(self._submit_test(hc, len(tests), screen=False))
                    record_test(hc, res, final=True)
                    full.append((hc, res))
            best, test = max(full, key=lambda cr: cr[1]["mean"]) if full else (None, None)
        solved = bool(target is not None and test is not None and test["mean"] >= target)
        return RunResult(
            rows=rows, stop_reason=stop_reason, wall_s=wall_s, best=best, test=test,
            solved=solved, hof={k: hof_full[k] for k in ("fitness", "island", "generation")},
            coordinator_stats=cstats, tests=tests, islands=self.infos,
            restarts=list(self.restarts),
        )
