"""An elastic archipelago in a running loop (``--elastic MIN:MAX``): islands follow the nodes.

Every ``POLL_S`` the run loop calls :meth:`Elastic.poll`: it reads the cluster's nodes
(``ray.nodes()``), asks :func:`islands.elastic.decide` what to do, and does it:

- **grow**: new islands, numbered after every island so far, start as new host actors
  wherever Ray finds their resources free (the nodes that joined; the autoscaler's or
  ``Cluster.add_node``'s). Each starts at the hall of fame's genome with the run's initial
  step size (a fresh search around the best genome known) and gets the observation
  statistics that genome was evaluated under. The loop waits for nothing: once an island's
  ``info()`` answers (:meth:`on_joined`), it joins the coordinator's topology and gets its
  first call.
- **lost**: a host whose node is gone is resubmitted by the loop as any lost call is, and
  Ray restarts it from its last checkpoint on free capacity ("moved" once it reports from
  another node); when the target leaves no room for it, it **retires**: its actor is killed
  (Ray must not place it later), the coordinator drops it from the topology, the loop stops
  calling it. The hall of fame, in the coordinator, keeps whatever it found.

Every change is an event: logged, shown in the live table, counted in ``summary.json``
(``elastic``) and in the ``ray_islands_live`` gauge.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import ray

from ..elastic import Host, Node, decide
from ..planning import new_island_spec
from .cluster import root_message
from .port import Fixed

log = logging.getLogger("islands.driver")
POLL_S = 2.0  # seconds between looks at the cluster's nodes
JOIN_TIMEOUT_S = 120.0  # an island not built by then (no room after all) is given up
# new islands wait up to this long into the run for a hall of fame to start from (the first
# reports come within seconds; a run whose fitness is never finite starts them at random)
SEED_WAIT_S = 30.0


def plug_in(cfg, arch, calls, clock: tuple[float, float],
            on_join: Callable[[int, dict[str, Any]], None]) -> Elastic | Fixed:
    """The loop's elastic plug-in for ``cfg``: :class:`Elastic` with ``--elastic``, else
    :class:`Fixed`."""
    return Fixed() if cfg.elastic_span is None else Elastic(cfg, arch, calls, clock, on_join)


class Elastic:
    """The elastic part of a :class:`~islands.runtime.loop.RunLoop` (module docstring). It
    works through what it is given: the config, the archipelago, the loop's
    :class:`~islands.runtime.calls.IslandCalls`, the run's clock ``(t0, t_start)`` and
    ``on_join(index, counters)``, the loop's hook for an island that joined."""

    def __init__(self, cfg, arch, calls, clock: tuple[float, float],
                 on_join: Callable[[int, dict[str, Any]], None]) -> None:
        self.arch, self.cfg, self.calls = arch, cfg, calls
        (self.t0, self.t_start), self.on_join = clock, on_join
        self.lo, self.hi = self.cfg.elastic_span
        self.need = self.arch.plan[0].needs()
        self.share = float(self.arch.plan[0].num_cpus)
        self.node_of: dict[int, str | None] = {i.island: i.node for i in self.arch.infos}
        self.joining: dict[Any, tuple[Any, Any, float]] = {}  # info ref -> (spec, ref, t)
        self.events: list[dict[str, Any]] = []
        self.moving: set[int] = set()  # hosts lost with their node, kept to restart
        self.told: dict[Any, tuple[str, list[int]]] = {}  # coordinator calls unanswered
        self.obs_stats = None  # the hall of fame genome's statistics, for new islands
        self.next_poll = 0.0
        self.target = len(self.arch.plan)

    # ---- the cluster -----------------------------------------------------------------
    def poll(self, now: float) -> None:
        if now < self.next_poll:
            return
        self.next_poll = now + POLL_S
        self._retell()
        nodes = [Node(n["NodeID"], bool(n.get("Alive")), dict(n.get("Resources") or {}))
                 for n in ray.nodes()]
        hosts = self._hosts()
        d = decide(nodes, hosts, self.need, self.lo, self.hi)
        self.target = d.target
        for h in d.retire:
            self._retire(h)
        self._note_lost(hosts, {n.id for n in nodes if n.alive}, set(d.retire))
        if d.grow:
            self._grow(d.grow)
        for ref in [r for r, (_, _, t) in self.joining.items() if now - t > JOIN_TIMEOUT_S]:
            self._join_failed(ref, f"not built within {JOIN_TIMEOUT_S:g} s")

    def _hosts(self) -> list[Host]:
        """The run's live hosts, and the ones still starting (node unknown)."""
        calls, hosts = self.calls, {}
        for i, alive in enumerate(calls.alive()):
            if alive:
                hosts.setdefault(calls.host(i), []).append(i)
        return [Host(h, tuple(ii), self.node_of.get(ii[0])) for h, ii in hosts.items()]

    def _note_lost(self, hosts: list[Host], alive: set[str], retired: set[int]) -> None:
        """Log the hosts that lost their node and are kept, to restart elsewhere."""
        skip = self.moving | retired
        for h in hosts:
            if h.key not in skip and h.node is not None and h.node not in alive:
                self.moving.add(h.key)
                self._event("lost", list(h.islands), h.node,
                            "node gone; Ray restarts it from its checkpoint")

    def saw(self, i: int, node: str) -> None:
        """Island ``i`` reported from ``node``: a lost host that reports again has moved."""
        if not node or self.node_of.get(i) == node:
            return
        before, self.node_of[i] = self.node_of.get(i), node
        h = self.calls.host(i)
        self.moving.discard(h)
        if before is not None:  # (also when Ray restarted it before a poll saw it lost)
            self._event("moved", [i], node, f"from {before[:8]}")

    # ---- changes ---------------------------------------------------------------------
    def _grow(self, k: int) -> None:
        hof, calls = self._hall_of_fame(), self.calls
        if hof is None and time.monotonic() - self.t_start < SEED_WAIT_S:
            return  # the next poll: islands seeded from the best genome beat random ones
        first = len(calls)  # islands are numbered on, never reused
        specs = [new_island_spec(self.cfg, first + j, self.share,
                                 None if hof is None else hof.params) for j in range(k)]
        now = time.monotonic()
        for spec, handle in self.arch.add_islands(specs):
            # counted (and not called) from now on: a host still starting has no node yet
            index = calls.add(handle.host)
            assert index == spec.index, (index, spec.index)
            self.node_of[spec.index] = None
            self.joining[handle.info()] = (spec, handle, now)
        self.obs_stats = None if hof is None else hof.obs_stats
        log.info("elastic: starting %d island%s (%d -> %d)", k, "s" * (k > 1),
                 self.live(), self.live() + k)

    def _hall_of_fame(self):
        try:
            hof = ray.get(self.arch.coordinator.hall_of_fame.remote(), timeout=5)
        except (ray.exceptions.RayError, TimeoutError) as e:
            log.warning("elastic: no hall of fame to seed new islands (%s)", root_message(e))
            return None
        return hof if hof.params is not None else None

    def on_joined(self, ref) -> None:
        """An island's ``info()`` answered: it joins the topology and gets its first call."""
        spec, handle, _ = self.joining[ref]
        try:
            info = ray.get(ref)
        except ray.exceptions.RayError as e:
            self._join_failed(ref, root_message(e))
            return
        del self.joining[ref]
        self.arch.joined(info)
        self.node_of[spec.index] = info.node
        self._tell("join", [spec.index])  # before its first report: calls run in order
        self.on_join(spec.index, {"generation": 0, **info.counters})
        if self.obs_stats is not None:
            self.calls.set_obs_stats(spec.index, self.obs_stats)
        self.calls.submit(spec.index)
        self._event("joined", [spec.index], info.node, "seeded from the hall of fame"
                    if spec.x0 is not None else "random start")

    def _join_failed(self, ref, why: str) -> None:
        spec, handle, _ = self.joining.pop(ref)
        self.calls.retire_host(self.calls.host(spec.index))
        ray.kill(handle.actor, no_restart=True)
        self._event("join_failed", [spec.index], None, why)

    def _retire(self, h: int) -> None:
        calls = self.calls
        islands = calls.retire_host(h)
        if not islands:
            return
        self.arch.kill_host(h)
        self._tell("retire", islands)
        self.moving.discard(h)
        self._event("retired", islands, self.node_of.get(islands[0]),
                    "node gone and no room for it")

    def _tell(self, what: str, islands: list[int]) -> None:
        """``coordinator.join`` / ``retire``, kept until it answers: a call that reaches a
        dead or restarting coordinator is lost, and is sent again (:meth:`_retell`)."""
        self.told[getattr(self.arch.coordinator, what).remote(islands)] = (what, islands)

    def _retell(self) -> None:
        if not self.told:
            return
        done, _ = ray.wait(list(self.told), num_returns=len(self.told), timeout=0)
        for ref in done:
            what, islands = self.told.pop(ref)
            try:
                ray.get(ref)
            except ray.exceptions.RayActorError:
                self._tell(what, islands)
            except ray.exceptions.RayError as e:
                log.warning("elastic: coordinator %s of islands %s failed: %s", what,
                            islands, root_message(e))

    # ---- what happened ---------------------------------------------------------------
    def starting(self) -> set[int]:
        """Islands whose host is still being built (no checkpoint of theirs to write)."""
        return {spec.index for spec, _, _ in self.joining.values()}

    def live(self) -> int:
        return sum(self.calls.alive())

    def _event(self, kind: str, islands: list[int], node: str | None, why: str) -> None:
        t = time.monotonic() - self.t0
        ev = {"t": round(t, 2), "kind": kind, "islands": list(islands),
              "node": node, "live": self.live(), "why": why}
        self.events.append(ev)
        log.info("elastic: island%s %s %s (%s); %d live", "s" * (len(islands) > 1),
                 ",".join(map(str, islands)), kind, why, ev["live"])

    def summary(self) -> dict[str, Any]:
        """``summary.json``'s ``elastic``: the range, the counts and every event."""
        kinds = [e["kind"] for e in self.events]
        return {"min": self.lo, "max": self.hi, "live": self.live(), "target": self.target,
                "joined": sum(len(e["islands"]) for e in self.events if e["kind"] == "joined"),
                "retired": sum(len(e["islands"]) for e in self.events
                               if e["kind"] == "retired"),
                "moved": kinds.count("moved"), "lost": kinds.count("lost"),
                "events": list(self.events)}
