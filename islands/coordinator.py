"""Migration coordinator: mailboxes between islands, hall of fame, merged observation stats.

:class:`CoordinatorCore` is plain Python; ``islands.runtime.actors`` wraps it as the named
Ray actor ``coordinator``. The coordinator never calls an island and never waits: the run
loop forwards each island's :class:`~islands.messages.EvolveResult` to it (non-blocking)
and hands the :class:`~islands.messages.CoordinatorReply` to that island with its next
call.

Per report of island ``i`` at generation ``g`` (``report(i, result)``):

1. Hall of fame: the best emigrant seen so far over all islands (genome, fitness, island,
   generation, and the observation statistics it was evaluated under).
2. Observation statistics: ``i``'s moment delta is merged into the global summary (Chan et
   al., ``RunningMeanStd.merge_moments``); every island's deltas are disjoint data, so the
   global summary counts every observation once.
3. Emigration: if ``g`` is at least ``migration_interval`` generations past ``i``'s last
   emigration, its best ``migrants`` genomes are posted to the mailboxes of
   ``topology.targets(i)`` (a random topology redraws its targets here). A mailbox keeps the
   newest batch per source, so a slow receiver gets current genomes, not a backlog; the batch
   it replaces is dropped undelivered, and counted (``superseded``: the migration latency of
   summary.json covers delivered batches only, and states this count beside it).
4. Reply to ``i``: its mailbox contents (emptied), the global statistics when ``i`` has not
   had them for ``obs_sync_interval`` generations, and the hall-of-fame summary (with the
   genome when this report improved it).

A slow island reports less often, so it emigrates less often and collects its mail less
often; nobody waits for it.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .messages import CoordinatorReply, Emigrants, EvolveResult, HallOfFame, HofSummary
from .persistence.checkpointing import CheckpointClock, CheckpointSpec
from .topology import Topology


@dataclass(frozen=True)
class CoordinatorSpec:
    """The coordinator's settings (from the run config)."""

    n_islands: int
    topology: str = "ring"
    topology_degree: int = 1
    edges: str | None = None
    seed: int = 0  # of a random topology's draws
    migrants: int = 2
    migration_interval: int = 5
    obs_sync_interval: int = 5
    env: str = ""  # for the status table and metric tags
    # for islands.status: the scale values are shown in (a user's cost: sign -1, "cost")
    # and the run's budgets (its ETA, islands/output/progress.py)
    sign: float = 1.0
    word: str = "fitness"
    budgets: dict[str, float] = dataclasses.field(default_factory=dict)
    elastic: bool = False  # islands join and retire during the run (islands/elastic.py)

    def make_topology(self, n: int | None = None, draw: int = 0) -> Topology:
        """The graph over ``n`` islands (default: the start's); ``draw`` seeds a random
        topology's draws apart after each change of the live islands."""
        return Topology(self.topology, self.n_islands if n is None else n,
                        self.topology_degree, self.edges,
                        seed=self.seed if draw == 0 else [self.seed, draw])


class CoordinatorCore:
    def __init__(self, spec: CoordinatorSpec, checkpoint: CheckpointSpec | None = None,
                 reconstructed: bool = False) -> None:
        self.spec = spec
        self.n = int(spec.n_islands)  # island indices 0..n-1 (retired ones included)
        self.live = list(range(self.n))  # the islands in the topology, in index order
        self.resizes = 0  # joins and retirements so far
        self.retired: set[int] = set()  # islands an elastic run let go
        self.topology = spec.make_topology()
        self._pos = {i: i for i in self.live}  # island -> its node in the topology
        self.mailbox: list[dict[int, Emigrants]] = [{} for _ in range(self.n)]
        self.last_emigration = [0] * self.n
        self.last_obs_sync = [0] * self.n
        self.sent = [0] * self.n  # genomes emigrated, cumulative, per source island
        self.delivered = [0] * self.n  # genomes handed to each island, cumulative
        self.batches_delivered = 0  # emigrant batches handed to islands
        self.superseded = 0  # batches replaced in a mailbox by a newer one before delivery
        self.rounds = 0  # emigration events
        self.reports = 0
        self.hof = HallOfFame()
        self.obs = None  # RunningMeanStd of every island's deltas
        self._init_checkpoints(checkpoint, reconstructed)

    # ---- the one entry point ---------------------------------------------------------
    def report(self, i: int, result: EvolveResult) -> CoordinatorReply:
        """Take island ``i``'s evolve() result; return its reply (see module docstring)."""
        self.reports += 1
        if self.spec.elastic and i not in self._pos and i not in self.retired:
            self.join([i])  # its join was lost (this coordinator restarted meanwhile)
        emi, g = result.emigrants, int(result.report.generation)
        P = np.asarray(emi.params, dtype=np.float64)
        f = np.asarray(emi.fitness, dtype=np.float64).reshape(-1)
        self._update_hof(i, g, P, f, result.obs_stats)
        if result.obs_delta is not None:
            self._merge_obs(result.obs_delta)
        if (self.spec.migrants > 0 and len(f)
                and g - self.last_emigration[i] >= self.spec.migration_interval):
            self._emigrate(i, g, P, f, float(emi.sent_at), emi.hyperparameters)
        mail = list(self.mailbox[i].values())
        self.mailbox[i] = {}
        self.delivered[i] += sum(len(b) for b in mail)
        self.batches_delivered += len(mail)
        obs = None
        if self.obs is not None and g - self.last_obs_sync[i] >= self.spec.obs_sync_interval:
            self.last_obs_sync[i] = g
            obs = self.obs.state_dict()
        self.maybe_checkpoint()
        return CoordinatorReply(immigrants=mail, obs_stats=obs, hof=self.hof_summary())

    def _update_hof(self, i: int, g: int, P: np.ndarray, f: np.ndarray, obs_stats) -> None:
        if len(f) and np.isfinite(f).any():
            j = int(np.nanargmax(np.where(np.isfinite(f), f, -np.inf)))
            if f[j] > self.hof.fitness:
                self.hof = HallOfFame(float(f[j]), int(i), g, P[j].copy(), obs_stats)

    def _emigrate(self, i: int, g: int, P: np.ndarray, f: np.ndarray, sent_at: float = 0.0,
                  hyperparameters: dict[str, float] | None = None) -> None:
        """Post island ``i``'s best genomes to its targets' mailboxes (newest per source),
        stamped with when they left the island (migration latency: island/core.py) and
        the settings it ran with (what an adopting island takes: island/spread.py)."""
        self.last_emigration[i] = g
        self.rounds += 1
        order = np.argsort(-f, kind="stable")[: self.spec.migrants]
        batch = Emigrants(P[order].copy(), f[order].copy(), int(i), g, sent_at,
                          dict(hyperparameters or {}))
        for dst in self.targets(int(i)):
            self.superseded += int(int(i) in self.mailbox[dst])
            self.mailbox[dst][int(i)] = batch
            self.sent[i] += len(order)

    def targets(self, i: int) -> list[int]:
        """Where island ``i``'s emigrants go: the topology over the live islands (none for
        an island that has retired)."""
        p = self._pos.get(int(i))
        return [] if p is None else [self.live[q] for q in self.topology.targets(p)]

    # ---- an elastic archipelago --------------------------------------------------------
    def join(self, indices: list[int]) -> None:
        """Islands ``indices`` join the topology; an index past every one so far makes room
        up to it (islands may finish starting out of order: 5 may join before 4)."""
        new = sorted({int(i) for i in indices} - set(self.live) - self.retired)
        if not new:
            return
        grow = max(0, new[-1] + 1 - self.n)
        self.mailbox += [{} for _ in range(grow)]
        for lst in (self.last_emigration, self.last_obs_sync, self.sent, self.delivered):
            lst += [0] * grow
        self.n += grow
        self._relink(self.live + new)

    def retire(self, indices: list[int]) -> None:
        """Islands ``indices`` leave the topology; their mail is dropped (the hall of fame
        already holds anything they were the best at)."""
        self.retired |= {int(i) for i in indices}
        gone = {int(i) for i in indices} & set(self.live)
        for i in gone:
            self.mailbox[i] = {}
        if gone:
            self._relink([i for i in self.live if i not in gone])

    def _relink(self, live: list[int]) -> None:
        """The topology over ``live`` (ring: around the live islands in index order), then a
        checkpoint, so that a coordinator restarted by Ray knows the islands of now."""
        self.live, self.resizes = sorted(live), self.resizes + 1
        self._pos = {i: p for p, i in enumerate(self.live)}
        if self.live:
            self.topology = self.spec.make_topology(len(self.live), self.resizes)
        if self.storage is not None:
            self.checkpoint()

    def _merge_obs(self, delta: dict[str, Any]) -> None:
        from policies.obsnorm import RunningMeanStd

        mean = np.asarray(delta["mean"], dtype=np.float64)
        if self.obs is None:
            self.obs = RunningMeanStd(mean.shape)
        self.obs.merge_moments(float(delta["count"]), mean, delta["m2"])

    # ---- queries ---------------------------------------------------------------------
    def hof_summary(self) -> HofSummary:
        return self.hof.summary()

    def hall_of_fame(self) -> HallOfFame:
        return self.hof

    def obs_stats(self) -> dict[str, Any] | None:
        return None if self.obs is None else self.obs.state_dict()

    def stats(self) -> dict[str, Any]:
        return {"reports": self.reports, "rounds": self.rounds, "sent": list(self.sent),
                "delivered": list(self.delivered), "hof": vars(self.hof_summary()),
                "live": len(self.live), "batches_delivered": self.batches_delivered,
                "superseded": self.superseded}

    # ---- checkpoints -------------------------------------------------------------------
    def _init_checkpoints(self, ck: CheckpointSpec | None, reconstructed: bool) -> None:
        """Hall of fame, mailboxes, counters; written every ``interval * n_islands``
        reports or ``seconds``, and on request. A restarted coordinator (or a resumed run)
        starts from the last one."""
        from .persistence.storage import Storage

        self.storage = None if ck is None else Storage(ck.uri)
        self.restored = False
        if self.storage is not None and (ck.load or reconstructed):
            self.restored = self.restore()
        self.clock = CheckpointClock(0 if ck is None else ck.interval * self.n,
                                     0.0 if ck is None else ck.seconds, self.reports,
                                     clock=time.monotonic)

    def maybe_checkpoint(self) -> None:
        if self.storage is not None and self.clock.due(self.reports):
            self.checkpoint()

    def checkpoint(self) -> int:
        """Write the state now; returns the number of reports it covers (-1: none)."""
        from .persistence.storage import COORDINATOR_FILE

        if self.storage is None:
            return -1
        self.storage.save(COORDINATOR_FILE, self.get_state())
        self.clock.mark(self.reports)
        return self.reports

    def restore(self) -> bool:
        from .persistence.storage import COORDINATOR_FILE

        return self.storage.restore(COORDINATOR_FILE, self.set_state, "this run")

    def get_state(self) -> dict[str, Any]:
        from .persistence.storage import CHECKPOINT_FORMAT

        return {
            "format": CHECKPOINT_FORMAT,
            "kind": "coordinator",
            "n": self.n, "live": list(self.live), "resizes": self.resizes,
            "retired": sorted(self.retired),
            "mailbox": [{str(s): vars(b) for s, b in box.items()} for box in self.mailbox],
            "last_emigration": list(self.last_emigration),
            "last_obs_sync": list(self.last_obs_sync),
            "sent": list(self.sent), "delivered": list(self.delivered),
            "rounds": self.rounds, "reports": self.reports,
            "batches_delivered": self.batches_delivered, "superseded": self.superseded,
            "hof": vars(self.hof), "obs": self.obs_stats(),
            "topology": self.topology.state_dict(),
        }

    def set_state(self, s: dict[str, Any]) -> None:
        from policies.obsnorm import RunningMeanStd

        n = int(s.get("n", self.n))
        if n != self.n and not self.spec.elastic:
            raise ValueError(f"the state is for {s.get('n')} islands, this run has {self.n}")
        self.n = n  # an elastic run's islands of the checkpoint (joined since the start)
        self.mailbox = [{int(k): Emigrants(**b) for k, b in box.items()}
                        for box in s["mailbox"]]
        self.last_emigration = [int(x) for x in s["last_emigration"]]
        self.last_obs_sync = [int(x) for x in s["last_obs_sync"]]
        self.sent = [int(x) for x in s["sent"]]
        self.delivered = [int(x) for x in s["delivered"]]
        self.rounds, self.reports = int(s["rounds"]), int(s["reports"])
        # (checkpoints written before these counts existed have none)
        self.batches_delivered = int(s.get("batches_delivered", 0))
        self.superseded = int(s.get("superseded", 0))
        self.hof = HallOfFame(**s["hof"])
        self.obs = None if s["obs"] is None else RunningMeanStd.from_state_dict(s["obs"])
        live = [int(i) for i in s.get("live", range(n))]
        self.resizes = int(s.get("resizes", 0))
        self.retired = {int(i) for i in s.get("retired", [])}
        self.live, self._pos = live, {i: p for p, i in enumerate(live)}
        if live:
            self.topology = self.spec.make_topology(len(live), self.resizes)
            self.topology.load_state_dict(s["topology"])
