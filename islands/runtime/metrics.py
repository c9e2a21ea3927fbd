"""Custom Ray metrics of a run, for Prometheus / Grafana and the Ray dashboard.

Recorded inside the actors of :mod:`islands.runtime.actors` (never in the plain cores):
:class:`IslandMetrics` by each island actor after every ``evolve`` call,
:class:`CoordinatorMonitor` by the coordinator after every report. Ray exports them from
each node's metrics agent (``http://<node ip>:<metrics_export_port>/metrics``) with a
``ray_`` prefix; counters get a ``_total`` suffix, histograms ``_bucket``/``_sum``/``_count``.

===============================  =========  ==============================================
exported name                     kind       value
===============================  =========  ==============================================
``ray_islands_best_fitness``      gauge      island's best fitness so far (strategy's best)
``ray_islands_generation``        gauge      island's generation count
``ray_islands_evals_per_second``  gauge      evaluations per second of the last call
``ray_islands_global_best``       gauge      hall-of-fame fitness (coordinator; ``island``
                                             and ``strategy`` of the record holder)
``ray_islands_env_steps_total``   counter    environment steps
``ray_islands_immigrants_total``  counter    migrant genomes accepted
``ray_islands_restarts_total``    counter    strategy restarts against stagnation
``ray_islands_generation_seconds`` histogram seconds per generation (call time / k)
``ray_islands_live``              gauge      islands in the archipelago now (coordinator;
                                             an elastic run's count moves, ``--elastic``)
===============================  =========  ==============================================

Tags: ``island`` (the actor name, ``island-00``), ``strategy``, ``env``. Ray adds its own
labels (``SessionName``, ``NodeAddress``, ``Version``, ...). A metric must never break a
run: recording errors are logged once and ignored.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from ..messages import HofSummary, IslandReport

log = logging.getLogger("islands.metrics")

TAG_KEYS = ("island", "strategy", "env")
# Seconds per generation: from tiny CartPole populations (~10 ms) to Atari (minutes).
GENERATION_SECONDS_BOUNDARIES = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                                 25.0, 50.0, 100.0, 300.0]
METRIC_NAMES = ("islands_best_fitness", "islands_generation", "islands_evals_per_second",
                "islands_global_best", "islands_env_steps", "islands_immigrants",
                "islands_restarts", "islands_generation_seconds", "islands_live")

_METRICS: dict[str, Any] | None = None


def _metrics() -> dict[str, Any]:
    """The metric objects, created once per process (Ray registers them by name)."""
    global _METRICS
    if _METRICS is None:
        from ray.util.metrics import Counter, Gauge, Histogram

        _METRICS = {
            "best_fitness": Gauge("islands_best_fitness",
                                  "best fitness found so far by the island", TAG_KEYS),
            "generation": Gauge("islands_generation", "generations evolved by the island",
                                TAG_KEYS),
            "evals_per_second": Gauge("islands_evals_per_second",
                                      "fitness evaluations per second in the last call",
                                      TAG_KEYS),
            "global_best": Gauge("islands_global_best",
                                 "hall-of-fame fitness over all islands (tags: record holder)",
                                 TAG_KEYS),
            "env_steps": Counter("islands_env_steps", "environment steps simulated", TAG_KEYS),
            "immigrants": Counter("islands_immigrants", "migrant genomes accepted", TAG_KEYS),
            "restarts": Counter("islands_restarts", "strategy restarts against stagnation",
                                TAG_KEYS),
            "live": Gauge("islands_live", "islands in the archipelago now", ("env",)),
            "generation_seconds": Histogram(
                "islands_generation_seconds", "wall-clock seconds per generation",
                GENERATION_SECONDS_BOUNDARIES, TAG_KEYS),
        }
    return _METRICS


def _create_now(who: str) -> None:
    """Create the metric objects at actor start, not in the first report: the first
    replies (and with them the first migrants) must not wait for it."""
    try:
        _metrics()
    except Exception as e:  # monitoring must never stop a run
        log.warning("%s: Ray metrics unavailable: %s", who, e)


def island_tag(index: int) -> str:
    return f"island-{int(index):02d}"


class IslandMetrics:
    """Records one island's report after each ``evolve`` call (inside the island actor)."""

    def __init__(self, index: int, strategy: str, env: str) -> None:
        self.tags = {"island": island_tag(index), "strategy": str(strategy), "env": str(env)}
        # cumulative counts at the last record (counters take deltas)
        self._env_steps = self._restarts = None
        self._warned = False
        _create_now(self.tags["island"])

    def record(self, report: IslandReport, generations: int) -> None:
        try:
            self._record(report, generations)
        except Exception as e:  # monitoring must never stop evolution
            if not self._warned:
                self._warned = True
                log.warning("%s: recording metrics failed: %s", self.tags["island"], e)

    def _record(self, report: IslandReport, generations: int) -> None:
        m, tags = _metrics(), self.tags
        best = float(report.best_so_far)
        if math.isfinite(best):
            m["best_fitness"].set(best, tags=tags)
        m["generation"].set(float(report.generation), tags=tags)
        m["evals_per_second"].set(float(report.evals_per_s), tags=tags)
        steps = int(report.env_steps)
        # The first record counts everything so far (after a restart from a checkpoint the
        # counter starts again with the process; Prometheus' rate() handles resets).
        delta = steps - (self._env_steps or 0)
        self._env_steps = steps
        if delta > 0:
            m["env_steps"].inc(delta, tags=tags)
        restarts = int(report.restarts)
        delta = restarts - (self._restarts or 0)
        self._restarts = restarts
        if delta > 0:
            m["restarts"].inc(delta, tags=tags)
        if report.immigrants_new > 0:
            m["immigrants"].inc(int(report.immigrants_new), tags=tags)
        if generations > 0:
            m["generation_seconds"].observe(float(report.call_s) / generations, tags=tags)


class CoordinatorMonitor:
    """Inside the coordinator actor: the latest report of each island (for
    ``python -m islands.status``) and the ``islands_global_best`` gauge."""

    def __init__(self, env: str = "") -> None:
        self.env = str(env)
        self.latest: dict[int, dict[str, Any]] = {}
        # the run's totals at this coordinator's first report and when (a resumed run's
        # rate is measured from there: islands.status's ETA)
        self.first: tuple[float, dict[str, int]] | None = None
        self._warned = False
        self._live: int | None = None  # the islands_live gauge's last value
        self._live_at = 0.0  # ... and when it was set
        _create_now("coordinator")

    def observe(self, i: int, report: IslandReport, hof: HofSummary, live: int) -> None:
        self.latest[int(i)] = report.row()
        if self.first is None:
            self.first = (time.monotonic(), self.totals())
        try:
            # when it changes, and once a second: Ray exports a gauge only while it is
            # recorded (set once, in the constructor or on a change, it never showed up in
            # the scrapes of tests/test_metrics.py); not with every report at 1,000/s
            now = time.monotonic()
            if live != self._live or now - self._live_at >= 1.0:
                _metrics()["live"].set(float(live), tags={"env": self.env})
                self._live, self._live_at = live, now
            f = hof.fitness
            if f is not None and math.isfinite(float(f)) and hof.island is not None:
                holder = int(hof.island)
                strategy = self.latest.get(holder, {}).get("strategy", "")
                _metrics()["global_best"].set(float(f), tags={
                    "island": island_tag(holder), "strategy": str(strategy), "env": self.env})
        except Exception as e:  # monitoring must never stop the coordinator
            if not self._warned:
                self._warned = True
                log.warning("coordinator: recording metrics failed: %s", e)

    def status(self, hof: HofSummary, stats: dict[str, Any]) -> dict[str, Any]:
        """Plain values for ``python -m islands.status`` (which needs no islands code)."""
        t0, start = self.first or (time.monotonic(), {})
        return {"env": self.env, "islands": [self.latest[i] for i in sorted(self.latest)],
                "hof": vars(hof), "stats": dict(stats), "totals": self.totals(),
                "start_totals": start, "elapsed": time.monotonic() - t0}

    def totals(self) -> dict[str, int]:
        """The islands' cumulative counts summed: ``total_episodes``, ``total_evals``,
        ``total_env_steps``."""
        return {f"total_{k}": int(sum(r.get(k, 0) for r in self.latest.values()))
                for k in ("episodes", "evals", "env_steps")}
