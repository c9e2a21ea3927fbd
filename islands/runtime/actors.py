"""The three actors of a run, each a thin Ray wrapper of a plain-Python core.

- ``island-NN`` / ``islands-NN-MM`` (:class:`IslandActor`): one
  :class:`~islands.island.core.IslandCore`, or several that share a CPU and so a process
  (``planning.HostSpec``), one call at a time; sizes torch and EnvPool threads from the CPU
  share and picks CUDA when Ray gave it a GPU. The loop calls its islands together
  (``evolve_batch``: islands/runtime/calls.py) and checkpoints or asks each through an
  :class:`IslandRef`.
- ``coordinator`` (:class:`CoordinatorActor`): a
  :class:`~islands.coordinator.CoordinatorCore`, plus the live status and global-best metric.
- ``tester`` (:class:`TesterActor`): tests candidate genomes (``evaluate.sequential_test``).

Fault tolerance: the launcher creates islands and the coordinator with ``max_restarts``
and ``max_task_retries=0`` (Ray's retries do not keep the order of calls; the loop
resubmits); a restarted actor reloads its last checkpoint (``was_reconstructed``).
"""

from __future__ import annotations

import logging
import sys
import time
import warnings
from typing import TYPE_CHECKING, Any

import ray

from ..coordinator import CoordinatorCore, CoordinatorSpec
from ..messages import (
    CoordinatorReply,
    EvolveResult,
    HallOfFame,
    HofSummary,
    IslandCall,
    IslandFailure,
    IslandInfo,
)
from ..persistence.checkpointing import CheckpointSpec

if TYPE_CHECKING:  # the island's modules are imported by the island's actor only: the
    # coordinator's process never loads torch, the envs or the strategies (seconds each)
    from ..island.core import IslandCore
    from ..island.spec import IslandSpec

log = logging.getLogger("islands.island")

COORDINATOR_NAME = "coordinator"
TESTER_NAME = "tester"


def was_reconstructed() -> bool:
    """Inside an actor: True when Ray restarted it after a death (reload the checkpoint)."""
    with warnings.catch_warnings():  # Ray 2.60 warns about an internal deprecated call here
        warnings.simplefilter("ignore", DeprecationWarning)
        return bool(ray.get_runtime_context().was_current_actor_reconstructed)


def _pick_device(index: int, device: str) -> str:
    if device != "auto":
        return device
    gpus = ray.get_gpu_ids()
    if not gpus:  # no torch import for a CPU island (its evaluator loads it if it needs it)
        return "cpu"
    import torch

    if gpus and not torch.cuda.is_available():
        log.warning("island %d: Ray assigned GPU %s but torch sees no CUDA; using the CPU",
                    index, gpus)
    return "cuda" if gpus and torch.cuda.is_available() else "cpu"


def _torch_threads(specs: list[IslandSpec], eval_spec) -> int:
    """Torch's intra-op threads in an island process. Ray sets OMP_NUM_THREADS from the CPU
    share, but be explicit. EnvPool steps on as many threads as the island has CPUs and
    torch threads beside them contend for the same cores (docs/results/eval-throughput.md):
    one thread, as ``--islands 1`` on 2 cores asked for 2 beside 2 EnvPool threads. Other
    backends step in this thread, so torch may have the island's CPUs (fractional shares:
    one)."""
    from envs.spaces import pick_backend

    backends = {pick_backend(eval_spec.env_id, s.backend or eval_spec.backend,
                             eval_spec.env_module) for s in specs}
    if "envpool" in backends:
        return 1
    return max(1, round(sum(float(s.num_cpus or 1) for s in specs)))


@ray.remote
class IslandActor:
    """Ray wrapper around one or more :class:`~islands.island.core.IslandCore` s that share a
    worker process (``planning.HostSpec``; named ``island-NN`` or ``islands-NN-MM``). Calls
    name the island and run one after another, as the islands' shares of one CPU would be
    time-sliced anyway; that beat both a thread per island (the GIL) and a process per
    island (docs/results/island-hosts.md)."""

    def __init__(self, specs: list[IslandSpec], eval_spec, run_seed: int = 0,
                 device: str = "auto", checkpoint: CheckpointSpec | None = None) -> None:
        from envs.synthetic import evaluator_waits

        from ..island.core import IslandCore
        from .metrics import IslandMetrics

        logging.basicConfig(level=logging.INFO, format="%(message)s")
        reconstructed = was_reconstructed()
        self.cores: dict[int, IslandCore] = {}
        self.metrics: dict[int, Any] = {}
        for spec in specs:
            self.cores[spec.index] = IslandCore(
                spec, eval_spec, run_seed=run_seed,
                num_threads=max(1, round(float(spec.num_cpus or 1))),
                device=_pick_device(spec.index, device), checkpoint=checkpoint,
                reconstructed=reconstructed)
            self.metrics[spec.index] = IslandMetrics(spec.index, spec.strategy,
                                                     eval_spec.env_id)
        # evaluators that wait rather than compute (synthetic ``wait_ms``): the batch
        # waits once for its longest, as if each island's simulator ran on its own
        torch = sys.modules.get("torch")  # loaded by evaluators and policies that use it;
        if torch is not None:  # synthetic islands never import it (seconds per process)
            torch.set_num_threads(_torch_threads(specs, eval_spec))
        self.node = ray.get_runtime_context().get_node_id()  # stamped on every result
        self.waits = evaluator_waits(eval_spec)
        for core in self.cores.values():
            core.evaluator.defer_waits = self.waits

    def evolve(self, i: int, k: int = 1, immigrants=None, obs_stats=None,
               want_offers: bool = True) -> EvolveResult:
        out = self.cores[i].evolve(k, immigrants, obs_stats, want_offers)
        self.metrics[i].record(out.report, int(k))  # Ray metrics (runtime.metrics)
        return out

    def evolve_batch(self, calls: list[IslandCall]) -> list[EvolveResult | IslandFailure]:
        """``evolve`` for each call, one after another, the results in order
        (islands/runtime/calls.py); evaluators that wait have deferred their waits, and the
        batch waits once, for the longest. A call that raises gives an
        :class:`IslandFailure` (logged with its traceback) and the others go on."""
        t0 = time.monotonic()
        out = [self._evolve_one(c) for c in calls]
        for r in out:  # where it ran: a restarted process may be on another node now
            if isinstance(r, EvolveResult):
                r.node = self.node
        if self.waits:
            owed = max(self.cores[c.island].evaluator.take_owed() for c in calls)
            time.sleep(max(0.0, t0 + owed - time.monotonic()))
            now = time.time()  # the calls end, and their emigrants leave, only now
            for r in out:
                if isinstance(r, EvolveResult):
                    r.emigrants.sent_at = now
        return out

    def _evolve_one(self, c: IslandCall) -> EvolveResult | IslandFailure:
        try:
            return self.evolve(c.island, c.k, c.immigrants, c.obs_stats, c.want_offers)
        except Exception as e:
            log.exception("island %d failed", c.island)
            return IslandFailure(c.island, f"{type(e).__name__}: {e}")

    def checkpoint(self, i: int) -> int:
        return self.cores[i].checkpoint()

    def info(self, i: int) -> IslandInfo:
        info = self.cores[i].info()
        info.node = ray.get_runtime_context().get_node_id()
        info.gpu_ids = [str(g) for g in ray.get_gpu_ids()]
        return info


class IslandRef:
    """One island inside its :class:`IslandActor`: the per-island calls, routed by island
    index; each returns an ObjectRef. ``actor`` is the process's handle (to kill, and for
    the loop's batched ``evolve_batch``: islands/runtime/calls.py), ``host`` its number
    among the run's processes (``Archipelago.hosts``)."""

    def __init__(self, actor, index: int, host: int = 0) -> None:
        self.actor, self.index, self.host = actor, index, host

    def checkpoint(self):
        return self.actor.checkpoint.remote(self.index)

    def info(self):
        return self.actor.info.remote(self.index)


@ray.remote(num_cpus=0)
class CoordinatorActor:
    """Ray wrapper around :class:`~islands.coordinator.CoordinatorCore` (named
    ``coordinator``). Needs no CPU of its own: its work per report is a few array copies."""

    def __init__(self, spec: CoordinatorSpec, checkpoint: CheckpointSpec | None = None,
                 obs_norm: bool = True) -> None:
        from .metrics import CoordinatorMonitor

        # Latest report per island (islands.status) and the global-best Ray metric.
        self.monitor = CoordinatorMonitor(spec.env)
        self.spec = spec
        if obs_norm:
            # Import now (numpy only, no torch): a first import inside report()
            # would stall that reply.
            import policies.obsnorm  # noqa: F401
        self.core = CoordinatorCore(spec, checkpoint, reconstructed=was_reconstructed())
        self.stop_request: str | None = None

    def report(self, i: int, result: EvolveResult) -> CoordinatorReply:
        reply = self.core.report(i, result)
        self.monitor.observe(i, result.report, reply.hof, len(self.core.live))
        reply.stop = self.stop_request
        return reply

    def request_stop(self, reason: str) -> None:
        """Ask the run to end (``islands.status --stop``): the next reply carries ``reason``
        to the driver, which ends the run as on a budget (final checkpoints, last test)."""
        self.stop_request = str(reason)

    def report_batch(self, ids: list[int | None], results: list
                     ) -> list[CoordinatorReply | None]:
        """``report`` for each island of a host's batch (islands/runtime/calls.py), in order;
        None where ``ids`` has None (that island's call failed)."""
        return [None if i is None else self.report(i, r)
                for i, r in zip(ids, results, strict=True)]

    def checkpoint(self) -> int:
        return self.core.checkpoint()

    def join(self, indices: list[int]) -> int:
        """New islands join the topology (an elastic run); returns the live count."""
        self.core.join(indices)
        return len(self.core.live)

    def retire(self, indices: list[int]) -> int:
        """Islands leave the topology (an elastic run); returns the live count."""
        self.core.retire(indices)
        return len(self.core.live)

    def status(self) -> dict[str, Any]:
        """Latest report per island, hall-of-fame summary, migration stats, the run's totals
        and clock (this coordinator's), its budgets and the scale of its values."""
        return {**self.monitor.status(self.core.hof_summary(), self.core.stats()),
                "budgets": dict(self.spec.budgets),
                "scale": {"sign": self.spec.sign, "word": self.spec.word}}

    def hall_of_fame(self) -> HallOfFame:
        return self.core.hall_of_fame()

    def hof_summary(self) -> HofSummary:
        return self.core.hof_summary()

    def stats(self) -> dict[str, Any]:
        return self.core.stats()

    def ping(self) -> bool:
        return True

    def pid(self) -> int:
        """The process id (benchmarks read its CPU time and memory)."""
        import os

        return os.getpid()


@ray.remote(num_cpus=0)
class TesterActor:
    """Tests candidate genomes off the islands' critical path. An actor rather than a task
    so that its process (torch, EnvPool imports: seconds) starts once, with the run."""

    def __init__(self, policy: bool = True) -> None:
        import scipy.stats  # noqa: F401 - a test's interval: imported before the first test

        import envs  # noqa: F401
        import policies  # noqa: F401

        from .. import evaluate  # noqa: F401
        if policy:  # a genome's backend (a function, rastrigin:D) has no network: no torch
            import torch

            torch.set_num_threads(1)  # tests run beside the islands; one thread each

    def test(self, test_spec, params, obs_stats, seed: int, target=None) -> dict[str, Any]:
        from ..evaluate import sequential_test

        return sequential_test(test_spec, params, obs_stats, seed, target)

    def ping(self) -> bool:
        return True
