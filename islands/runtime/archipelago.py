"""The actors of one run: start them, wait until they are ready, drive them, shut them down.

``Archipelago(cfg, plan)`` creates the named actors (``coordinator``, ``island-NN``, later
``tester``) in the run's Ray namespace; ``run()`` hands them to the event loop
(:mod:`.loop`) and, once it stops, collects the hall of fame, writes final checkpoints,
tests what still needs a test and chooses the solution (``candidates.Validation``).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import ray

from ..candidates import Candidate
from ..config import Config
from ..coordinator import CoordinatorSpec
from ..messages import HallOfFame, HofSummary, IslandCall, IslandInfo
from ..output.progress import budgets_of
from ..persistence.checkpointing import CheckpointSpec
from ..planning import HostSpec, IslandSpec, ResourceError, group_islands
from .actors import (
    COORDINATOR_NAME,
    TESTER_NAME,
    CoordinatorActor,
    IslandActor,
    IslandRef,
    TesterActor,
)
from .cluster import root_message
from .loop import RunResult, run_loop
from .port import CallFailed, CallLost

log = logging.getLogger("islands.driver")


class StartError(RuntimeError):
    """An island actor could not be constructed; one-line message."""


def coordinator_spec(cfg: Config) -> CoordinatorSpec:
    return CoordinatorSpec(
        n_islands=cfg.islands, topology=cfg.topology, topology_degree=cfg.topology_degree,
        edges=cfg.edges, seed=cfg.seed, migrants=cfg.migrants,
        migration_interval=cfg.migration_interval, obs_sync_interval=cfg.obs_sync_interval,
        env=cfg.env, elastic=cfg.elastic is not None, sign=cfg.scale.sign,
        word=cfg.scale.word, budgets=budgets_of(cfg))


def _near_driver() -> dict[str, Any]:
    """Actor options that place the coordinator on the driver's node where it can (the
    head, under ``ray job submit``): a coordinator that needs no CPU could otherwise land on
    any worker, and a spot worker's loss would take the hall of fame's process with it
    (it restarts from its checkpoint, but the run waits; tests/elastic_cluster_run.py)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    try:
        node = ray.get_runtime_context().get_node_id()
    except Exception:  # a client without a node of its own
        return {}
    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=True)}


class Archipelago:
    """Creates the named actors for a plan and drives them (see the module docstring)."""

    process_kind = "Ray worker"  # what the live table calls its host processes

    def __init__(self, cfg: Config, plan: list[IslandSpec], resume: bool = False,
                 hosts: list[HostSpec] | None = None) -> None:
        self.cfg = cfg
        self.plan = plan
        # Worker processes and the islands each hosts (planning.plan_hosts).
        self.hosts = hosts or group_islands(plan, cfg.islands_per_process)
        self.resume = resume  # islands and coordinator start from their checkpoints
        self.stop_signal: int | None = None  # the signal that stops the run (on_signal)
        self.stop_request: str | None = None  # request_stop's reason
        self.islands: list[IslandRef] = []  # by island index
        self.actors: list[Any] = []  # one per host, as ``hosts``
        self.coordinator = None
        self.tester = None
        self.infos: list[IslandInfo] = []
        self.start_hof = HofSummary(-math.inf, None, None)  # wait_ready: a resumed run's

    # ---- actors ----------------------------------------------------------------------
    def _names(self) -> list[str]:
        return [COORDINATOR_NAME, TESTER_NAME] + [h.name for h in self.hosts]

    def start(self) -> None:
        cfg, ns = self.cfg, self.cfg.namespace
        for name in self._names():
            try:
                ray.get_actor(name, namespace=ns)
            except ValueError:
                continue
            raise ResourceError(f"actor {name!r} already exists in Ray namespace {ns!r}: "
                                f"another run is active there; pass --namespace")
        ckpt = self.cfg.checkpoint_spec(self.resume)
        self.coordinator = CoordinatorActor.options(
            name=COORDINATOR_NAME, namespace=ns, **self._fault_tolerance(), **_near_driver()
        ).remote(coordinator_spec(cfg), ckpt, bool(cfg.obs_norm))
        refs: dict[int, IslandRef] = {}
        for host in self.hosts:
            refs.update(self._start_host(host, ckpt))
        self.islands = [refs[s.index] for s in self.plan]

    def _fault_tolerance(self) -> dict[str, int]:
        # Restarted actors reload their checkpoints; failed calls are resubmitted by the
        # loop (max_task_retries=0: Ray's retries do not keep the order of calls).
        return dict(max_restarts=self.cfg.max_restarts, max_task_retries=0)

    def _start_host(self, host: HostSpec, ckpt: CheckpointSpec | None) -> dict[int, IslandRef]:
        """Create one host's actor (it builds its islands while the caller goes on); the
        caller adds ``host`` to ``hosts``, after the actors started before it."""
        need = host.needs()
        opts: dict[str, Any] = dict(name=host.name, namespace=self.cfg.namespace,
                                    num_cpus=need.pop("CPU", 0.0),
                                    num_gpus=need.pop("GPU", 0.0), **self._fault_tolerance())
        if need:
            opts["resources"] = need
        actor = IslandActor.options(**opts).remote(
            list(host.islands), self.cfg.eval_spec(), self.cfg.seed, self.cfg.device, ckpt)
        self.actors.append(actor)
        return {s.index: IslandRef(actor, s.index, len(self.actors) - 1) for s in host.islands}

    def add_islands(self, specs: list[IslandSpec]) -> list[tuple[IslandSpec, IslandRef]]:
        """Start islands that join a running archipelago (``--elastic``): new hosts, placed
        by Ray wherever their resources are free (the nodes that joined). Returns each
        island's spec and handle; the caller waits for their ``info()``."""
        hosts = group_islands(specs, self.cfg.islands_per_process)
        ckpt = self.cfg.checkpoint_spec(self.resume)
        out = []
        for host in hosts:
            refs = self._start_host(host, ckpt)
            out += [(s, refs[s.index]) for s in host.islands]
        self.hosts += hosts
        self.plan += [s for s, _ in out]
        self.islands += [h for _, h in out]
        return out

    def joined(self, info: IslandInfo) -> None:
        """An island from :meth:`add_islands` is built: its info, in island order."""
        self.infos.append(info)
        self.infos.sort(key=lambda x: x.island)

    def wait_ready(self, timeout: float = 300) -> list[IslandInfo]:
        """Block until every island is constructed; StartError with the island's own
        one-line error if one fails (bad strategy option, env that will not build)."""
        try:
            ray.get(self.coordinator.ping.remote(), timeout=timeout)
        except ray.exceptions.RayError as e:
            raise StartError(f"the coordinator failed to start: {root_message(e)}") from None
        self.infos = [self._wait_island(spec, h, timeout)
                      for spec, h in zip(self.plan, self.islands, strict=True)]
        self.start_hof = ray.get(self.coordinator.hof_summary.remote())
        # The tester starts now, not with the islands: its imports (seconds of CPU) then
        # overlap the first generations, when there is nothing to test yet, instead of
        # slowing the islands' start. Stateless: after a restart Ray may re-run its calls.
        if self.tester is None:
            self.tester = TesterActor.options(
                name=TESTER_NAME, namespace=self.cfg.namespace,
                max_restarts=self.cfg.max_restarts, max_task_retries=-1).remote(
                    policy=self.cfg.uses_policy)
        return self.infos

    @staticmethod
    def _wait_island(spec: IslandSpec, handle, timeout: float) -> IslandInfo:
        try:
            return ray.get(handle.info(), timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise StartError(f"island {spec.index} did not start within {timeout:g} s "
                             f"(resources {spec.needs()} not available?)") from None
        except ray.exceptions.RayError as e:
            raise StartError(f"island {spec.index} failed to start: "
                             f"{root_message(e)}") from None

    def shutdown(self) -> None:
        """Kill the actors and wait (briefly) until their names are free again."""
        handles = [(h.name, a) for h, a in zip(self.hosts, self.actors, strict=False)]
        handles += [(n, h) for n, h in ((COORDINATOR_NAME, self.coordinator),
                                         (TESTER_NAME, self.tester)) if h is not None]
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
        self.islands, self.actors, self.coordinator, self.tester = [], [], None, None

    # ---- calls the loop makes (port.Runtime) ----------------------------------------
    def clock(self) -> float:
        return time.monotonic()

    def idle(self, seconds: float) -> None:
        time.sleep(seconds)

    def on_signal(self, signum: int) -> None:
        """A signal handler's: end the run as interrupted (signals.SIGNALS)."""
        self.stop_signal = signum

    def stop_reason(self) -> str | None:
        if self.stop_signal is not None:
            return "interrupted"
        return self.stop_request

    def island_hosts(self) -> list[int]:
        """Per island, the number of the host process that serves it."""
        return [r.host for r in self.islands]

    def evolve(self, host: int, calls: list[IslandCall]):
        return self.actors[host].evolve_batch.remote(calls)

    def report(self, ids: list[int | None], batch):
        # the batch's ref, not its values: the coordinator reads it from the object store
        return self.coordinator.report_batch.remote(ids, batch)

    def test(self, kind: str, cand: Candidate, n: int, stop_early: bool = True):
        """Test ``cand`` (the run's ``n``-th test, ``kind`` "test") on fresh episodes, or
        confirm it ("retest") on ``retest_episodes`` episodes that no test, training or
        other run meets (``seeds.retest_seed``); with ``stop_early`` a sequential test stops
        once a candidate is clearly below the target (``evaluate.sequential_test``)."""
        spec, seed = self.cfg.test_call(kind, n)
        return self.tester.test.remote(spec, cand.params, cand.obs_stats, seed,
                                       self.cfg.fitness_target if stop_early else None)

    @staticmethod
    def wait(futures: Sequence[Any], timeout: float) -> list[Any]:
        """At 1,024 islands, thousands of events a second: every ready ref is taken per
        pass over the refs (docs/results/scale.md)."""
        refs = list(futures)
        ready, _ = ray.wait(refs, num_returns=1, timeout=timeout)
        if ready and len(refs) > 1:
            ready = ray.wait(refs, num_returns=len(refs), timeout=0)[0] or ready
        return ready

    @staticmethod
    def get(future, timeout: float | None = None) -> Any:
        try:
            return ray.get(future, timeout=timeout)
        except ray.exceptions.GetTimeoutError as e:
            raise TimeoutError(str(e)) from None
        except ray.exceptions.RayActorError as e:
            raise CallLost(root_message(e) or type(e).__name__,
                           died=isinstance(e, ray.exceptions.ActorDiedError)) from e
        except ray.exceptions.RayError as e:
            raise CallFailed(root_message(e) or type(e).__name__) from e

    def release_islands(self) -> None:
        for actor in self.actors:
            ray.kill(actor, no_restart=True)

    def kill_host(self, host: int) -> None:
        """Kill host process ``host`` for good (an elastic run lets its islands go)."""
        ray.kill(self.actors[host], no_restart=True)

    def plug_in(self, calls, clock: tuple[float, float], joined):
        """The elastic controller of an ``--elastic`` run (a no-op one otherwise)."""
        from .elastic import plug_in

        return plug_in(self.cfg, self, calls, clock, joined)

    def coordinator_final(self, in_flight: dict[Any, tuple[list, Any]],
                          unsent: list[tuple[list, Any]], timeout: float = 120.0
                          ) -> tuple[HallOfFame, dict[str, Any], list[dict[str, Any]]]:
        """Hall of fame and stats from the coordinator after it has taken every report, and
        the errors met on the way. No report is dropped: the hall of fame is asked for after
        the reports in flight (an actor runs one caller's calls in order), reports lost to a
        coordinator restart (``unsent``, or in flight when it died) are sent again, and a
        report the coordinator failed on is logged and returned as an error."""
        deadline = time.monotonic() + timeout
        replies, resend, errors = list(in_flight.items()), list(unsent), []
        while True:
            try:
                for ids, r in resend:
                    ray.get(self.coordinator.report_batch.remote(ids, r))
                resend = []
                hof = ray.get(self.coordinator.hall_of_fame.remote())
                stats = ray.get(self.coordinator.stats.remote())
            except ray.exceptions.RayActorError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
                continue
            replies, resend = [], self._settle(replies, errors, deadline)
            if not resend:
                return hof, stats, errors

    @staticmethod
    def _settle(replies: list[tuple[Any, tuple[list, Any]]], errors: list[dict[str, Any]],
                deadline: float) -> list[tuple[int, Any]]:
        """The reports among ``replies`` to send again (their coordinator died before
        answering); a report that failed or is still unanswered is logged into ``errors``."""
        resend = []
        for reply, (ids, r) in replies:
            try:
                ray.get(reply, timeout=max(0.1, deadline - time.monotonic()))
            except ray.exceptions.RayActorError:
                resend.append((ids, r))
            except (ray.exceptions.RayError, TimeoutError) as e:
                named = ",".join(str(i) for i in ids if i is not None)
                where = f"coordinator report of island {named} at shutdown"
                log.warning("%s: %s", where, root_message(e))
                errors.append({"where": where, "message": root_message(e)})
        return resend

    def final_checkpoint(self, islands: list[int], timeout: float = 120.0
                         ) -> list[dict[str, Any]]:
        """Checkpoint the given islands and the coordinator; a call that fails or takes
        longer than ``timeout`` leaves that actor's previous checkpoint in place (a resume
        starts from there) and is returned as an error for the summary."""
        refs = [(f"final checkpoint of island {i}", self.islands[i].checkpoint())
                for i in islands]
        refs.append(("final checkpoint of the coordinator", self.coordinator.checkpoint.remote()))
        deadline = time.monotonic() + timeout
        errors = []
        for where, r in refs:
            try:
                ray.get(r, timeout=max(0.1, deadline - time.monotonic()))
            except (ray.exceptions.RayError, TimeoutError) as e:
                msg = root_message(e) or type(e).__name__
                log.warning("%s incomplete (its previous checkpoint stays): %s", where, msg)
                errors.append({"where": where, "message": f"incomplete (its previous "
                               f"checkpoint stays): {msg}"})
        return errors

    # ---- the run ---------------------------------------------------------------------
    def request_stop(self, reason: str = "requested") -> None:
        """End the run as a budget would (final checkpoints, the hall of fame's test), with
        ``reason`` as its stop reason: for a caller whose ``on_report`` has seen what it
        waited for. Safe from ``on_report`` and from another thread."""
        self.stop_request = str(reason)

    def run(self, on_report: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
            prior_rows: list[dict[str, Any]] | None = None) -> RunResult:
        """Drive the islands until a stop condition (:class:`.loop.RunLoop`); then wrap up.
        ``on_report(row, status)`` is called after each island report; ``prior_rows``: the
        metrics of the run being resumed."""
        return run_loop(self, on_report, prior_rows)
