"""An island's state and checkpoints: the part of :class:`~islands.island.core.IslandCore`
that turns it into plain data, writes it on the checkpoint clock and loads it back.

A mixin, so the core keeps one public surface (``get_state``, ``checkpoint``, ``restore``)
while its module stays about the algorithm. Where checkpoints go and how they are
written: :mod:`islands.persistence.storage`; when:
:class:`~islands.persistence.checkpointing.CheckpointClock`.
"""

from __future__ import annotations

import logging
from typing import Any

from ..persistence.checkpointing import CheckpointClock, CheckpointSpec
from .counters import Counters

log = logging.getLogger("islands.island")


class Checkpointing:
    """State and checkpoints of an :class:`~islands.island.core.IslandCore` (which owns the
    attributes used here: ``index``, ``dim``, ``runs``, ``hooks``, ``evaluator``...)."""

    def _init_checkpoints(self, ck: CheckpointSpec | None) -> None:
        """Open the checkpoint storage (restoring from it when asked) and start the clock."""
        self.storage = None
        if ck is not None:
            from ..persistence.storage import Storage

            self.storage = Storage(ck.uri)
            if ck.load or self.reconstructed:
                self.restore()
        self.clock = CheckpointClock(0 if ck is None else ck.interval,
                                     0.0 if ck is None else ck.seconds,
                                     self.generation)

    def get_state(self) -> dict[str, Any]:
        """Plain-data state: the strategy's state dict and its runs (how it was built, the
        runs before it), observation statistics, counters and the hooks' states."""
        from ..persistence.storage import CHECKPOINT_FORMAT

        stats = self.evaluator.obs_stats
        return {
            "format": CHECKPOINT_FORMAT, "kind": "island", "dim": self.dim,
            "index": self.index, "strategy": self.strategy.state_dict(),
            "obs_stats": None if stats is None else stats.state_dict(),
            "obs_delta": self.obs_delta.state_dict(), "counters": self.counters.state_dict(),
            **self.runs.state_dict(),
            **{h.state_key: h.state_dict() for h in self.hooks if h.state_key},
        }

    def set_state(self, state: dict[str, Any]) -> None:
        if state.get("index", self.index) != self.index or "strategy" not in state:
            raise ValueError(f"the state is not island {self.index}'s")
        self.runs.load_state_dict(state)
        for hook in self.hooks:
            if hook.state_key:
                hook.load_state(self, state.get(hook.state_key))
        self.strategy.load_state_dict(state["strategy"])
        if state.get("obs_stats") is not None:
            self.set_obs_stats(state["obs_stats"])
        self.obs_delta.load_state_dict(state.get("obs_delta"))
        self.counters = Counters.from_state_dict(state["counters"])

    def checkpoint(self, restart_episodes: bool = False) -> int:
        """Write the state now; returns the generation written (-1: no storage). With
        ``restart_episodes`` the evaluator's episode streams restart here (see
        ``maybe_checkpoint``)."""
        if self.storage is None:
            return -1
        from ..persistence.storage import island_file

        self.storage.save(island_file(self.index), self.get_state())
        if restart_episodes:
            self.evaluator.restart_episodes()
        self.clock.mark(self.generation)
        return self.clock.count

    def maybe_checkpoint(self) -> None:
        due = None if self.storage is None else self.clock.due(self.generation)
        if due is not None:
            # A resumed island builds its evaluator afresh; at a checkpoint that falls on a
            # generation this one restarts its episode streams too, so both see the same
            # episodes from here on (EnvPool episodes otherwise depend on every call since
            # the pool was built). Not at wall-clock checkpoints: resuming from those is not
            # exact anyway, and an Atari pool takes seconds to rebuild.
            self.checkpoint(restart_episodes=due == "count")

    def restore(self) -> bool:
        """Load this island's last checkpoint, if there is one (ValueError naming the file
        when it is corrupt or belongs to another island / strategy / dimension)."""
        from ..persistence.storage import island_file

        if not self.storage.restore(island_file(self.index), self.set_state,
                                    f"island {self.index}"):
            return False
        self.restored_generation = self.generation
        log.warning("island %d: restored from its checkpoint at generation %d", self.index,
                    self.restored_generation)
        return True
