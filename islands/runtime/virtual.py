"""The archipelago on a virtual clock: the same island cores, coordinator core, tester and
run loop as on Ray, in one process, with every call an event whose duration a cost model
gives (``--runtime virtual --cluster FILE``).

Each call is computed for real when it is sent (real episodes on this machine's cores, so
episodes and fitness are the algorithm's own) and completes at a virtual time: an island
batch after its islands' environment steps, evaluator rounds and episodes at the
calibrated seconds per step, round and episode (``costmodel.StepCost``, from
``runtime/calibration.py``), sped up by the island's evaluator threads as far as each
term's serial fraction allows (Amdahl) and by its node's speed, times a straggler draw,
plus one message latency each way; a coordinator report after its latency, in turn behind the
reports before it (one coordinator, one report at a time) and its own cost; a candidate
test after its steps on one core of the head. Island state depends only on its own calls,
so computing a batch when it is sent is exact; the coordinator's state depends on the order
of reports, so a report is processed when its event comes due, in virtual-time order (ties
by submission order). Nothing depends on the real clock: a run is reproducible from its
seed, cluster file and calibration, bit for bit, on the same machine (the episodes'
floating point differed between two machines with the same code and packages in the last
digits, and a run's couplings amplify that: virtual-time.md stage 13). Given a real run's
own schedule, it is that real run (``benchmarks/trace_replay.py``).

Seams: this class is a :class:`.port.Runtime` and the loop cannot tell it from the Ray one.
A worker node's failures (``failures_per_hour``) lose its processes' calls; their islands
come back from their checkpoints (by generations only) after ``restart_s``, and the loop
resubmits the lost calls as it does on Ray. ``--eval-workers N`` models a synchronous
population instead of an island's own cores (:mod:`.syncpop`). Not yet modelled: elastic
runs (refused at start).
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..candidates import Candidate
from ..config import Config
from ..coordinator import CoordinatorCore
from ..costmodel import ClusterModel, Node, StepCost
from ..messages import HallOfFame, HofSummary, IslandCall, IslandFailure, IslandInfo
from ..planning import HostSpec, IslandSpec, ResourceError, group_islands
from .port import CallFailed, CallLost, Fixed
from .syncpop import GenerationSteps, generation_seconds, place_workers

# Each island core's evaluator threads on this machine: all its cores, since a call runs
# alone here (one at a time, in virtual-time order). The replay does not depend on them
# (EnvPool's synchronous mode returns every env's steps in send order: tested), only this
# machine's seconds do: on 2 cores a Hopper or LunarLander call takes ~0.69x the seconds of
# one thread (their calibrations' two-thread figures), so a study of virtual runs does too.
THREADS = os.cpu_count() or 1


@dataclasses.dataclass(eq=False)  # identity: futures are dict keys in the loop
class Event:
    """A call's future: done at virtual time ``at``; ``work`` (the coordinator's) runs when
    it comes due, in virtual-time order."""

    at: float
    seq: int
    value: Any = None
    error: Exception | None = None
    work: Callable[[], Any] | None = None
    done: bool = False

    def __lt__(self, other: Event) -> bool:
        return (self.at, self.seq) < (other.at, other.seq)


def one_torch_thread(load: bool = False) -> None:
    """Torch on one thread beside the evaluators' (as an island actor with EnvPool sets it):
    no contention, and the same arithmetic wherever a replay runs. ``load``: import it now
    (before the evaluators are built, which warn about contention otherwise)."""
    torch = sys.modules.get("torch")  # loaded by evaluators and policies that use it
    if torch is None and load:
        import torch
    if torch is not None:
        torch.set_num_threads(1)


def place_hosts(hosts: list[HostSpec], nodes: Sequence[Node]) -> list[int]:
    """Each host's node: first fit by CPUs (GPUs where it needs them), as Ray packs a
    placement; ResourceError naming the host that fits nowhere."""
    free = [[n.cpus, n.gpus] for n in nodes]
    out = []
    for h in hosts:
        need = h.needs()
        cpu, gpu = float(need.get("CPU", 0.0)), float(need.get("GPU", 0.0))
        for j, f in enumerate(free):
            if f[0] + 1e-9 >= cpu and f[1] + 1e-9 >= gpu:
                f[0] -= cpu
                f[1] -= gpu
                out.append(j)
                break
        else:
            raise ResourceError(f"the virtual cluster has no room for {h.name} ({cpu:g} CPU"
                                f"{f', {gpu:g} GPU' if gpu else ''}); it has "
                                f"{sum(n.cpus for n in nodes):g} CPUs in {len(nodes)} nodes")
    return out


class VirtualArchipelago:
    """A :class:`.port.Runtime` on a virtual clock (see the module docstring)."""

    process_kind = "virtual"  # what the live table calls its host processes

    def __init__(self, cfg: Config, plan: list[IslandSpec], cluster: ClusterModel,
                 cost: StepCost | float, resume: bool = False) -> None:
        """``cost``: the calibration's (a float: seconds per env step, nothing else)."""
        if cfg.elastic is not None:
            raise ResourceError("--elastic is not modelled by the virtual runtime yet; use "
                                "--runtime ray")
        self.cfg, self.plan, self.cluster, self.resume = cfg, plan, cluster, resume
        self.cost = cost if isinstance(cost, StepCost) else StepCost(float(cost))
        self.hosts = group_islands(plan, cfg.islands_per_process)
        self.workers = int(cfg.eval_workers or 0)  # a synchronous population's (syncpop)
        if self.workers:  # masters on the head, holding no CPU; their workers hold it all
            head = next((j for j, n in enumerate(cluster.nodes)
                         if n.node_type == cluster.head_type), 0)
            self.node_of_host = [head] * len(self.hosts)
            self.worker_nodes = place_workers(len(plan), self.workers, cluster.nodes)
            self.gen_steps: dict[int, GenerationSteps] = {}
        else:
            self.node_of_host = place_hosts(self.hosts, cluster.nodes)
        self.host_of = {s.index: h for h, host in enumerate(self.hosts) for s in host.islands}
        self.now = 0.0
        self.seq = itertools.count()
        self.queue: list[Event] = []  # events not yet done, by (at, seq)
        self.coordinator_free = 0.0  # when the coordinator finishes the reports it has
        self.rng = np.random.default_rng([int(cfg.seed), 0x7157])  # stragglers
        self.fail_rng = np.random.default_rng([int(cfg.seed), 0xFA11])  # node failures
        self.jitter_rng = np.random.default_rng([int(cfg.seed), 0x717E])  # calls' noise
        self.host_ready = [0.0] * len(self.hosts)  # a restarting process's islands wait
        self.failures: list[dict[str, Any]] = []  # (the summary's)
        self.stop_signal: int | None = None
        self.stop_request: str | None = None
        self.cores: dict[int, Any] = {}
        self.coordinator: CoordinatorCore | None = None
        self.infos: list[IslandInfo] = []
        self.start_hof = HofSummary(-math.inf, None, None)
        self.events = 0  # calls modelled (the run's summary)
        # real seconds in the islands' calls and the tests (the rest of a virtual run's
        # real time is the simulator's own cost: the loop, the events, the coordinator)
        self.compute_s = 0.0
        self.loop_s = 0.0  # the run loop's real seconds (the driver's)

    # ---- start and stop ----------------------------------------------------------------
    def start(self) -> None:
        from .archipelago import coordinator_spec

        ckpt = self.cfg.checkpoint_spec(self.resume, by_seconds=False)
        one_torch_thread(load=self.cfg.uses_policy)
        self.coordinator = CoordinatorCore(coordinator_spec(self.cfg), ckpt,
                                           reconstructed=self.resume)
        for spec in self.plan:
            self.cores[spec.index] = self._core(spec, self.resume)
        one_torch_thread()

    def _core(self, spec: IslandSpec, reconstructed: bool):
        """Island ``spec``'s core; ``reconstructed``: from its checkpoint (a resumed run, or
        its process restarted after its node failed). A slow island's sleep is virtual
        time, not real."""
        from ..island.core import IslandCore

        ckpt = self.cfg.checkpoint_spec(self.resume, by_seconds=False)
        core = IslandCore(spec.replace(slowdown_s=0.0), self.cfg.eval_spec(),
                          run_seed=self.cfg.seed, num_threads=THREADS, device="cpu",
                          checkpoint=ckpt, reconstructed=reconstructed)
        if self.workers:  # its generations' steps, for syncpop to share out
            self.gen_steps[spec.index] = GenerationSteps()
            core.hooks.append(self.gen_steps[spec.index])
        return core

    def wait_ready(self) -> list[IslandInfo]:
        self.infos = [self.cores[s.index].info() for s in self.plan]
        for info in self.infos:
            info.node = f"virtual-{self.node_of_host[self.host_of[info.island]]}"
        self.start_hof = self.coordinator.hof_summary()
        return self.infos

    def shutdown(self) -> None:
        for core in self.cores.values():
            core.close()
        self.cores = {}

    # ---- port.Runtime --------------------------------------------------------------------
    def clock(self) -> float:
        return self.now

    def idle(self, seconds: float) -> None:
        self.now += max(0.0, seconds)

    def on_signal(self, signum: int) -> None:
        self.stop_signal = signum

    def stop_reason(self) -> str | None:
        return "interrupted" if self.stop_signal is not None else self.stop_request

    def request_stop(self, reason: str) -> None:
        self.stop_request = str(reason)

    def island_hosts(self) -> list[int]:
        return [self.host_of[s.index] for s in self.plan]

    def plug_in(self, calls, clock, joined) -> Fixed:
        return Fixed()

    def _event(self, at: float, value=None, error=None, work=None) -> Event:
        ev = Event(at, next(self.seq), value, error, work)
        heapq.heappush(self.queue, ev)
        self.events += 1
        return ev

    def evolve(self, host: int, calls: list[IslandCall]) -> Event:
        """The host's islands, one after another, computed now; done when their modelled
        time has passed."""
        node = self.cluster.nodes[self.node_of_host[host]]
        results, seconds = [], 0.0  # the batch's: its islands run one after another
        for c in calls:
            core = self.cores[c.island]
            c0 = dataclasses.replace(core.counters)  # its counts before the call
            # its checkpoint waits until the call is known to complete: a node that fails
            # during the call leaves the checkpoint from before it, as on a real node
            store, core.storage = core.storage, None
            t0 = time.perf_counter()
            try:
                r = core.evolve(c.k, c.immigrants, c.obs_stats, c.want_offers)
            except Exception as e:  # as the actor's: the island is dropped, the others go on
                results.append(IslandFailure(c.island, f"{type(e).__name__}: {e}"))
                continue
            finally:
                core.storage = store
                self.compute_s += time.perf_counter() - t0
            spec = self.plan[c.island]
            steps = core.counters.env_steps - c0.env_steps
            rounds = core.counters.rounds - c0.rounds
            episodes = core.counters.episodes - c0.episodes
            if self.workers:
                own = (self._synchronous_s(c.island, steps, rounds, episodes)
                       + spec.slowdown_s * c.k)
            else:
                own = ((self.work_s(host, spec, steps, rounds, episodes) / node.speed
                        + spec.slowdown_s * c.k) * self.cluster.straggle(self.rng)
                       * self.cluster.jitter_factor(self.jitter_rng))
            r.report.call_s = own  # the modelled seconds, not this machine's
            seconds += own
            results.append(r)
        start = max(self.now, self.host_ready[host])  # a restarted process first comes back
        fail = self._failure(host, calls, node, seconds)
        if fail is not None:
            return self._fail(host, start + fail)
        for c in calls:  # the checkpoints the calls were due (exactly where evolve writes)
            self.cores[c.island].maybe_checkpoint()
        return self._event(start + seconds + 2 * self.cluster.latency_s, results)

    def _failure(self, host: int, calls: list[IslandCall], node: Node, seconds: float
                 ) -> float | None:
        """When during the call a node it runs on fails (seconds into it), or None: the
        host's node, or for a synchronous population any of its workers' nodes (the
        generation in progress is lost with the worker)."""
        if not self.workers:
            return self.cluster.fails(node, seconds, self.fail_rng)
        used = sorted({j for c in calls for j in self.worker_nodes[c.island]})
        times = [self.cluster.fails(self.cluster.nodes[j], seconds, self.fail_rng)
                 for j in used]
        return min((t for t in times if t is not None), default=None)

    def _synchronous_s(self, island: int, steps: int, rounds: int, episodes: int) -> float:
        """The call's generations, each waiting for the slowest of the island's workers;
        the call's other ``steps`` and ``rounds`` (re-evaluations of offers, on fresh
        episodes) shared evenly by the workers, at the slowest one's speed."""
        gens = self.gen_steps[island].take()
        nodes = self.cluster.nodes
        mine = self.worker_nodes[island]
        seconds = sum(generation_seconds(g, mine, nodes, self.cost,
                                         lambda: self.cluster.straggle(self.rng),
                                         self.cluster.latency_s) for g in gens)
        rest = max(0.0, steps - sum(float(g.steps.sum()) for g in gens))
        rest_rounds = max(0.0, rounds - sum(g.rounds for g in gens))
        rest_episodes = max(0.0, episodes - sum(float(g.episodes.sum()) for g in gens))
        return seconds + (self.cost.seconds(rest, rest_rounds, 1.0, rest_episodes) / len(mine)
                          / min(nodes[j].speed for j in mine))

    def _fail(self, host: int, at: float) -> Event:
        """Host ``host``'s node fails at ``at``: the call is lost, its islands come back
        from their checkpoints after ``restart_s`` (as Ray restarts an actor), and the loop
        resubmits the call as it does any lost call."""
        for spec in self.hosts[host].islands:
            self.cores[spec.index].close()
            self.cores[spec.index] = self._core(self.plan[spec.index], True)
        self.host_ready[host] = at + self.cluster.restart_s
        self.failures.append({"host": host, "at": at,
                              "islands": [s.index for s in self.hosts[host].islands]})
        return self._event(at + self.cluster.latency_s,
                           error=CallLost(f"node {self.node_of_host[host]} failed (virtual)"))

    def work_s(self, host: int, spec: IslandSpec, steps: float, rounds: float,
               episodes: float = 0.0) -> float:
        """Seconds of ``steps`` env steps (``episodes`` episodes) in ``rounds`` rounds of
        ``spec``'s island in process ``host``, on cores of speed 1. Its evaluator runs
        ``round(num_cpus)`` threads (at least one, as the island actor builds it), within
        its process's CPUs, which its islands take one after another; each term's serial
        fraction does not speed up with threads (Amdahl). A process with less than one CPU
        shares a core: its work takes 1 / CPUs as long."""
        cpus = sum(float(s.num_cpus or 0.0) for s in self.hosts[host].islands) or 1.0
        threads = max(1, round(float(spec.num_cpus or 1.0)))
        return self.cost.seconds(steps, rounds, min(cpus, threads), episodes)

    def report(self, ids: list[int | None], batch: Event) -> Event:
        """Processed when it comes due: behind the coordinator's earlier reports."""
        arrive = self.now + self.cluster.latency_s
        start = max(arrive, self.coordinator_free)
        self.coordinator_free = start + self.cluster.coordinator_s * sum(
            i is not None for i in ids)
        results = batch.value

        def work():
            return [None if i is None else self.coordinator.report(i, r)
                    for i, r in zip(ids, results, strict=True)]

        return self._event(self.coordinator_free + self.cluster.latency_s, work=work)

    def test(self, kind: str, cand: Candidate, n: int, stop_early: bool = True) -> Event:
        """On one core of speed 1 (the head's tester), computed now."""
        from ..evaluate import sequential_test

        spec, seed = self.cfg.test_call(kind, n)
        t0 = time.perf_counter()
        res = sequential_test(spec, cand.params, cand.obs_stats, seed,
                              self.cfg.fitness_target if stop_early else None)
        self.compute_s += time.perf_counter() - t0
        seconds = self.cost.seconds(float(res.get("env_steps", 0)), float(res.get("rounds", 0)),
                                    1.0, float(res.get("episodes", 0)))
        return self._event(self.now + seconds + 2 * self.cluster.latency_s, res)

    def wait(self, futures: Sequence[Event], timeout: float) -> list[Event]:
        """Advance the clock to the first of ``futures`` to finish (or by ``timeout``),
        completing every event due by then in virtual-time order; those of ``futures``
        that are done."""
        pending = [f for f in futures if not f.done]
        first = min((f.at for f in pending), default=-math.inf)
        if pending and first > self.now + timeout:
            self.now += timeout
            self._complete(self.now)
            return [f for f in futures if f.done]
        self.now = max(self.now, first)
        self._complete(self.now)
        return [f for f in futures if f.done]

    def _complete(self, until: float) -> None:
        while self.queue and self.queue[0].at <= until:
            ev = heapq.heappop(self.queue)
            if ev.work is not None:
                try:
                    ev.value = ev.work()
                except Exception as e:
                    ev.error = CallFailed(f"{type(e).__name__}: {e}")
            ev.done = True

    def get(self, future: Event, timeout: float | None = None) -> Any:
        if not future.done:  # waited for on its own (the end of the run's tests)
            self.now = max(self.now, future.at)
            self._complete(self.now)
        if future.error is not None:
            raise future.error
        return future.value

    def coordinator_final(self, in_flight, unsent) -> tuple[HallOfFame, dict[str, Any],
                                                            list[dict[str, Any]]]:
        for reply in list(in_flight):
            self.get(reply)
        return self.coordinator.hall_of_fame(), self.coordinator.stats(), []

    def final_checkpoint(self, islands: list[int]) -> list[dict[str, Any]]:
        if self.cfg.checkpoint_uri is None:
            return []
        for i in islands:
            self.cores[i].checkpoint()
        self.coordinator.checkpoint()
        return []

    def release_islands(self) -> None:
        """The islands' evaluators close at :meth:`shutdown` (the tests run in-process)."""
