"""What the run loop asks of a runtime: the seam between the loop's logic and whatever runs
the islands, the coordinator and the tester.

The loop (:mod:`.loop`) and its traffic (:mod:`.calls`) submit calls and get futures back,
wait for whichever finish first and read their values; they never name Ray. The Ray
runtime (:class:`.archipelago.Archipelago`: actors, object refs, ``ray.wait``) is one
implementation; a runtime on a virtual clock, where every call is an event whose duration
a cost model gives, is another. A runtime's failures reach the loop as the two exceptions
below, so its fault handling (resubmit a lost call, drop a failed island) is the same on
both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..candidates import Candidate
from ..config import Config
from ..messages import HallOfFame, HofSummary, IslandCall, IslandInfo
from ..planning import HostSpec


class CallLost(Exception):
    """The process serving a call died or is restarting (Ray restarts it from its
    checkpoint): the call may be sent again. ``died``: the actor is gone for good."""

    def __init__(self, message: str, died: bool = False) -> None:
        super().__init__(message)
        self.died = died


class CallFailed(Exception):
    """A call raised (the message is its root cause's one line); sending it again would
    fail again."""


class Runtime(Protocol):
    """The members :class:`.loop.RunLoop` uses, all of them."""

    cfg: Config
    infos: list[IslandInfo]  # by island index, once the islands are ready
    start_hof: HofSummary  # the coordinator's hall of fame at the start (a resumed run's)
    hosts: list[HostSpec]  # the processes, each serving one or more islands
    process_kind: str  # what the live table calls them ("Ray worker", "virtual")

    def clock(self) -> float:
        """Seconds on this runtime's clock (monotonic; virtual for a virtual runtime)."""

    def idle(self, seconds: float) -> None:
        """Let ``seconds`` pass with nothing to wait for."""

    def stop_reason(self) -> str | None:
        """"interrupted" after a signal, a :meth:`request_stop` reason, else None."""

    def request_stop(self, reason: str) -> None:
        """End the run as a budget would, with ``reason`` as its stop reason."""

    def island_hosts(self) -> list[int]:
        """Per island, the number of the host process that serves it (its calls go out
        with the other calls due on that host, as one batch)."""

    def plug_in(self, calls: Any, clock: tuple[float, float], joined: Any) -> Any:
        """The loop's elastic controller (``runtime.elastic``: ``Fixed`` where the islands
        do not follow the cluster)."""

    def evolve(self, host: int, calls: list[IslandCall]) -> Any:
        """Send host process ``host`` one batch of island calls; a future of the list of
        ``EvolveResult`` / ``IslandFailure`` in the calls' order."""

    def report(self, ids: list[int | None], batch: Any) -> Any:
        """Send the coordinator a host batch (the future :meth:`evolve` returned) with the
        island at each position (None: its call failed); a future of its replies."""

    def test(self, kind: str, cand: Candidate, n: int, stop_early: bool = True) -> Any:
        """Test (``kind`` "test") or confirm ("retest") ``cand``, the run's ``n``-th of its
        kind, on fresh episodes; a future of the test's result dict."""

    def wait(self, futures: Sequence[Any], timeout: float) -> list[Any]:
        """The futures among ``futures`` that are done: at least one unless ``timeout``
        seconds pass first; every one that is done by then."""

    def get(self, future: Any, timeout: float | None = None) -> Any:
        """A done future's value; raises :class:`CallLost`, :class:`CallFailed`, or
        TimeoutError."""

    def coordinator_final(self, in_flight: dict[Any, tuple[list, Any]],
                          unsent: list[tuple[list, Any]]
                          ) -> tuple[HallOfFame, dict[str, Any], list[dict[str, Any]]]:
        """Hall of fame and stats once the coordinator has every report, and the errors."""

    def final_checkpoint(self, islands: list[int]) -> list[dict[str, Any]]:
        """Checkpoint the given islands and the coordinator; errors for the summary."""

    def release_islands(self) -> None:
        """The islands are not needed any more (the run's tests may still run)."""


class Fixed:
    """A fixed archipelago (no ``--elastic``): the loop's plug-in that does nothing, so the
    loop calls the same methods either way."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.joining: dict[Any, Any] = {}  # never any: on_joined is never called

    def poll(self, now: float) -> None:
        pass

    def saw(self, i: int, node: str) -> None:
        pass

    def starting(self) -> set[int]:
        return set()

    def summary(self) -> None:
        return None
