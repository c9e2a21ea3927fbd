"""Migration coordinator: mailboxes between islands, hall of fame, merged observation stats.

:class:`CoordinatorCore` is plain Python; :func:`coordinator_actor_class` wraps it as the
named Ray actor ``coordinator``. The coordinator never calls an island and never waits: the
driver forwards each island report to it (``report.remote``, non-blocking) and hands the
reply to that island with its next call.

Per report of island ``i`` at generation ``g`` (``report(i, result)``):

1. Hall of fame: the best emigrant seen so far over all islands (genome, fitness, island,
   generation, and the observation statistics it was evaluated under).
2. Observation statistics: ``i``'s moment delta is merged into the global summary (Chan et
   al., ``RunningMeanStd.merge_moments``); every island's deltas are disjoint data, so the
   global summary counts every observation once.
3. Emigration: if ``g`` is at least ``migration_interval`` generations past ``i``'s last
   emigration, its best ``migrants`` genomes are posted to the mailboxes of
   ``topology.targets(i)`` (a random topology redraws its targets here). A mailbox keeps the
   newest batch per source, so a slow receiver gets current genomes, not a backlog.
4. Reply to ``i``: its mailbox contents (emptied), the global statistics when ``i`` has not
   had them for ``obs_sync_interval`` generations, and the hall-of-fame summary (with the
   genome when this report improved it).

A slow island reports less often, so it emigrates less often and collects its mail less
often; nobody waits for it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .topology import Topology


class CoordinatorCore:
    def __init__(
        self,
        n_islands: int,
        topology: Topology,
        migrants: int = 2,
        migration_interval: int = 5,
        obs_sync_interval: int = 5,
    ) -> None:
        self.n = int(n_islands)
        self.topology = topology
        self.migrants = int(migrants)
        self.migration_interval = int(migration_interval)
        self.obs_sync_interval = int(obs_sync_interval)
        self.mailbox: list[dict[int, dict[str, Any]]] = [{} for _ in range(self.n)]
        self.last_emigration = [0] * self.n
        self.last_obs_sync = [0] * self.n
        self.sent = [0] * self.n  # genomes emigrated, cumulative, per source island
        self.delivered = [0] * self.n  # genomes handed to each island, cumulative
        self.rounds = 0  # emigration events
        self.reports = 0
        self.hof: dict[str, Any] = {"fitness": -np.inf, "params": None, "island": None,
                                    "generation": None, "obs_stats": None}
        self.obs = None  # RunningMeanStd of every island's deltas

    # ---- the one entry point ---------------------------------------------------------
    def report(self, i: int, result: dict[str, Any]) -> dict[str, Any]:
        """Take island ``i``'s evolve() result; return its reply (see module docstring)."""
        self.reports += 1
        rep, emi = result["report"], result["emigrants"]
        g = int(rep["generation"])
        P = np.asarray(emi["params"], dtype=np.float64)
        f = np.asarray(emi["fitness"], dtype=np.float64).reshape(-1)
        improved = False
        if len(f) and np.isfinite(f).any():
            j = int(np.nanargmax(np.where(np.isfinite(f), f, -np.inf)))
            if f[j] > self.hof["fitness"]:
                self.hof = {"fitness": float(f[j]), "params": P[j].copy(), "island": int(i),
                            "generation": g, "obs_stats": result.get("obs_stats")}
                improved = True
        if result.get("obs_delta") is not None:
            self._merge_obs(result["obs_delta"])
        if (self.migrants > 0 and len(f)
                and g - self.last_emigration[i] >= self.migration_interval):
            self.last_emigration[i] = g
            self.rounds += 1
            order = np.argsort(-f, kind="stable")[: self.migrants]
            batch = {"params": P[order].copy(), "fitness": f[order].copy(), "source": int(i),
                     "generation": g}
            for dst in self.topology.targets(int(i)):
                self.mailbox[dst][int(i)] = batch
                self.sent[i] += len(order)
        mail = list(self.mailbox[i].values())
        self.mailbox[i] = {}
        self.delivered[i] += sum(len(b["fitness"]) for b in mail)
        obs = None
        if self.obs is not None and g - self.last_obs_sync[i] >= self.obs_sync_interval:
            self.last_obs_sync[i] = g
            obs = self.obs.state_dict()
        return {
            "immigrants": mail,
            "obs_stats": obs,
            "hof": self.hof_summary(),
            "hof_params": self.hof["params"] if improved else None,
            "hof_obs_stats": self.hof["obs_stats"] if improved else None,
        }

    def _merge_obs(self, delta: dict[str, Any]) -> None:
        from policies.obsnorm import RunningMeanStd

        mean = np.asarray(delta["mean"], dtype=np.float64)
        if self.obs is None:
            self.obs = RunningMeanStd(mean.shape)
        self.obs.merge_moments(float(delta["count"]), mean, delta["m2"])

    # ---- queries ---------------------------------------------------------------------
    def hof_summary(self) -> dict[str, Any]:
        return {k: self.hof[k] for k in ("fitness", "island", "generation")}

    def hall_of_fame(self) -> dict[str, Any]:
        return dict(self.hof)

    def obs_stats(self) -> dict[str, Any] | None:
        return None if self.obs is None else self.obs.state_dict()

    def stats(self) -> dict[str, Any]:
        return {"reports": self.reports, "rounds": self.rounds, "sent": list(self.sent),
                "delivered": list(self.delivered), "hof": self.hof_summary()}

    # ---- state (for checkpoints) -------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        from .storage import CHECKPOINT_FORMAT

        return {
            "format": CHECKPOINT_FORMAT,
            "kind": "coordinator",
            "n": self.n,
            "mailbox": [{str(s): b for s, b in box.items()} for box in self.mailbox],
            "last_emigration": list(self.last_emigration),
            "last_obs_sync": list(self.last_obs_sync),
            "sent": list(self.sent), "delivered": list(self.delivered),
            "rounds": self.rounds, "reports": self.reports,
            "hof": dict(self.hof), "obs": self.obs_stats(),
            "topology": self.topology.state_dict(),
        }

    def set_state(self, s: dict[str, Any]) -> None:
        from policies.obsnorm import RunningMeanStd

        if int(s.get("n", self.n)) != self.n:
            raise ValueError(f"the state is for {s.get('n')} islands, this run has {self.n}")
        self.mailbox = [{int(k): b for k, b in box.items()} for box in s["mailbox"]]
        self.last_emigration = [int(x) for x in s["last_emigration"]]
        self.last_obs_sync = [int(x) for x in s["last_obs_sync"]]
        self.sent = [int(x) for x in s["sent"]]
        self.delivered = [int(x) for x in s["delivered"]]
        self.rounds, self.reports = int(s["rounds"]), int(s["reports"])
        self.hof = dict(s["hof"])
        self.obs = None if s["obs"] is None else RunningMeanStd.from_state_dict(s["obs"])
        self.topology.load_state_dict(s["topology"])


def _actor_class():
    import ray

    @ray.remote(num_cpus=0)
    class CoordinatorActor:
        """Ray wrapper around :class:`CoordinatorCore` (named ``coordinator``). Needs no CPU
        of its own: its work per report is a few array copies."""

        def __init__(self, n_islands: int, topology: dict[str, Any], migrants: int,
                     migration_interval: int, obs_sync_interval: int,
                     obs_norm: bool = True, env: str = "",
                     checkpoint: dict[str, Any] | None = None) -> None:
            import time

            from .island import was_reconstructed
            from .metrics import CoordinatorMonitor
            from .storage import COORDINATOR_FILE, Storage

            # Latest report per island (islands.status) and the global-best Ray metric.
            self.monitor = CoordinatorMonitor(env)
            if obs_norm:
                # Import now (it pulls in torch via the policies package): a first import
                # inside report() would stall every reply for seconds.
                import policies.obsnorm  # noqa: F401

            self.core = CoordinatorCore(
                n_islands, Topology(**topology), migrants, migration_interval,
                obs_sync_interval)
            # Checkpoints: hall of fame, mailboxes, counters; written every
            # ``interval * n_islands`` reports or ``seconds``, and on request. A restarted
            # coordinator (or a resumed run) starts from the last one.
            ck = dict(checkpoint or {})
            self._time = time.monotonic
            self.storage = Storage(ck["uri"]) if ck.get("uri") else None
            self.ckpt_reports = int(ck.get("interval") or 0) * int(n_islands)
            self.ckpt_seconds = float(ck.get("seconds") or 0.0)
            self._ckpt_reports, self._ckpt_t = 0, self._time()
            self._file = COORDINATOR_FILE
            self.restored = False
            rec = was_reconstructed()
            if self.storage is not None and (ck.get("load") or rec):
                state = self.storage.load(COORDINATOR_FILE)
                if state is not None:
                    try:
                        self.core.set_state(state)
                    except (KeyError, TypeError, ValueError) as e:
                        raise ValueError(f"checkpoint {self.storage.path(COORDINATOR_FILE)} "
                                         f"does not fit this run: {e}") from None
                    self.restored = True
            self._ckpt_reports = self.core.reports

        def report(self, i, result):
            reply = self.core.report(i, result)
            self.monitor.observe(i, result["report"], reply["hof"])
            if self.storage is not None and (
                    (self.ckpt_reports and self.core.reports - self._ckpt_reports
                     >= self.ckpt_reports)
                    or (self.ckpt_seconds and self._time() - self._ckpt_t >= self.ckpt_seconds)):
                self.checkpoint()
            return reply

        def checkpoint(self):
            """Write the state now; returns the number of reports it covers (-1: none)."""
            if self.storage is None:
                return -1
            self.storage.save(self._file, self.core.get_state())
            self._ckpt_reports, self._ckpt_t = self.core.reports, self._time()
            return self.core.reports

        def status(self):
            """Latest report per island, hall-of-fame summary, migration stats."""
            return self.monitor.status(self.core.hof_summary(), self.core.stats())

        def hall_of_fame(self):
            return self.core.hall_of_fame()

        def hof_summary(self):
            return self.core.hof_summary()

        def obs_stats(self):
            return self.core.obs_stats()

        def stats(self):
            return self.core.stats()

        def get_state(self):
            return self.core.get_state()

        def set_state(self, s):
            self.core.set_state(s)

        def ping(self):
            return True

    return CoordinatorActor


_ACTOR = None


def coordinator_actor_class():
    global _ACTOR
    if _ACTOR is None:
        _ACTOR = _actor_class()
    return _ACTOR


COORDINATOR_NAME = "coordinator"
