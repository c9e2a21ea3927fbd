"""An island's cumulative counts, in one record for its report row, checkpoint and info.

Every count an island keeps is a field of :class:`Counters`. The report row
(:class:`~islands.messages.IslandReport`) takes the fields it shares with it
(``reported``); the checkpoint holds all of them as ``{"name": int}`` (``state_dict``, the
dict island checkpoints have always held under ``"counters"``; ``from_state_dict``: a field a
checkpoint lacks starts at 0), and so does ``IslandInfo.counters`` (a resumed island's counts
at start). The process's peak memory (``peak_rss_mb``) is measured here too, for the row.

:class:`ObsDelta` accumulates the observation moments the island's training episodes saw
since its last report (``{count, mean, m2}``, mergeable: Chan et al.), for the coordinator.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..messages import IslandReport

_REPORTED = frozenset(f.name for f in dataclasses.fields(IslandReport))


@dataclass
class Counters:
    """Cumulative counts of one island, over all its strategies' runs."""

    evals: int = 0  # genomes evaluated for training (a probe generation's count once)
    # training episodes: evaluations', ranking probes', candidates' and migrants' re-evaluations
    episodes: int = 0
    env_steps: int = 0
    # the evaluator's rounds (one batched step of all its live envs: EnvPool's send + recv;
    # 0 for evaluators without them): a round's fixed cost is the virtual clock's other term
    rounds: int = 0
    frames: int = 0
    immigrants: int = 0  # migrant genomes accepted
    rejected: int = 0  # migrant genomes refused (wrong dimension)
    held_off: int = 0  # migrant genomes a fresh restart kept out (Restarter.isolated)
    screened_out: int = 0  # migrant genomes that lost to the center on fresh episodes (screen)
    calls: int = 0  # evolve calls
    reevaluations: int = 0  # candidate genomes re-evaluated before an offer (reeval.py)
    adopted: int = 0  # immigrants that became the island's center (--migrant-rule adopt)

    def count(self, res, evals: int = 0) -> None:
        """Add an evaluation's (an ``envs.EvalResult``) episodes, env steps and frames, and
        ``evals`` training evaluations."""
        self.evals += int(evals)
        self.episodes += int(np.size(res.returns))
        self.env_steps += int(res.env_steps)
        self.rounds += int(res.extra.get("rounds", 0))
        self.frames += int(res.frames)

    def state_dict(self) -> dict[str, int]:
        return {k: int(v) for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_state_dict(cls, d: dict[str, Any]) -> Counters:
        """Counters of a checkpoint, also one written under the counters' older names
        (``_RENAMED``), so kept runs resume across the rename."""
        return cls(**{_RENAMED.get(k, k): int(v) for k, v in d.items()})

    def reported(self) -> dict[str, int]:
        """The counts that are fields of the report row."""
        return {k: v for k, v in self.state_dict().items() if k in _REPORTED}


# a counter's older name in checkpoints -> its name now ("confirmation" is the tester's word
# for a passed test's retest; the island's own re-evaluations were once called so too)
_RENAMED = {"confirmations": "reevaluations"}


def peak_rss_mb() -> float:
    """Peak resident memory of this process (an island's actor process), in MiB."""
    try:
        import resource
    except ImportError:  # not on Windows
        return 0.0
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return kib / (1 << 20) if sys.platform == "darwin" else kib / 1024  # macOS: bytes


class ObsDelta:
    """Observation moments since the island's last report (a ``RunningMeanStd``, or None:
    none yet)."""

    def __init__(self) -> None:
        self.rms = None

    def add(self, res) -> None:
        """Merge an evaluation's observation moments (an ``envs.EvalResult``'s)."""
        if not res.obs_count or res.obs_mean is None:
            return
        from policies.obsnorm import RunningMeanStd

        if self.rms is None:
            self.rms = RunningMeanStd(tuple(np.shape(res.obs_mean)))
        self.rms.merge_moments(float(res.obs_count), res.obs_mean, res.obs_m2)

    def take(self) -> dict[str, Any] | None:
        """The moments since the last ``take`` (None: none), and start afresh."""
        d, self.rms = self.rms, None
        if d is None or d.count <= 0:
            return None
        return {"count": d.count, "mean": d.mean, "m2": d.m2}

    def state_dict(self) -> dict[str, Any] | None:
        return None if self.rms is None else self.rms.state_dict()

    def load_state_dict(self, d: dict[str, Any] | None) -> None:
        from policies.obsnorm import RunningMeanStd

        self.rms = None if d is None else RunningMeanStd.from_state_dict(d)
