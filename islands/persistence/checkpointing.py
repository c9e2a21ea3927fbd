"""When islands and the coordinator write checkpoints: one clock shared by both.

An island counts generations, the coordinator counts reports; either writes when its count
has advanced ``every`` since the last checkpoint or ``seconds`` have passed (0 disables
either rule). Where checkpoints go and how they are written: :mod:`islands.persistence.storage`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class CheckpointSpec:
    """Checkpoint settings handed to an actor: where (a directory or pyarrow.fs URI), how
    often, and whether to start from the checkpoint there (a resumed run)."""

    uri: str
    interval: int = 0  # generations of an island (the coordinator: per island's report)
    seconds: float = 0.0
    load: bool = False


class CheckpointClock:
    """``due(count)``: "count" when ``count`` advanced ``every`` since the last ``mark``,
    "time" when ``seconds`` passed, else None."""

    def __init__(self, every: int, seconds: float, count: int = 0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.every, self.seconds, self._clock = int(every), float(seconds), clock
        self.mark(count)

    def mark(self, count: int) -> None:
        self.count, self.t = int(count), self._clock()

    def due(self, count: int) -> str | None:
        if self.every and count - self.count >= self.every:
            return "count"
        if self.seconds and self._clock() - self.t >= self.seconds:
            return "time"
        return None
