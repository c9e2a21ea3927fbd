"""An experiment directory's trials, as the process layer runs them.

:mod:`islands.runtime.sweep` runs trials through Ray Tune without knowing what an
experiment is: it asks an :class:`ExperimentTrials` for the trial ids, each trial's launcher
config and the record its ``trial.json`` starts from, and where Tune keeps its state. So the
runtime imports nothing from this package (tests/test_layout.py: layers). Built on the
driver from the spec saved in ``experiment.json``; Tune pickles it into each trial.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..config import Config
from .names import EXPERIMENT_JSON, RUNS_DIR, TRIAL_JSON, TUNE_DIR
from .spec import ExperimentSpec, Trial, trial_config, trials


class ExperimentTrials:
    """The trials of the experiment in ``exp_dir`` (what ``runtime.sweep`` asks of one)."""

    trial_file = TRIAL_JSON  # written into each run directory by the trial

    def __init__(self, exp_dir: str | Path) -> None:
        # absolute: Tune runs each trial in a working directory of its own under the Ray
        # session, so a relative run directory (``--out runs/x``) landed there, and a
        # resume, in a new session, found no checkpoints and started the trial again
        self.exp_dir = Path(exp_dir).resolve()
        self.name = self.exp_dir.name  # W&B's group; in messages
        self.tune_path = self.exp_dir / TUNE_DIR
        meta = json.loads((self.exp_dir / EXPERIMENT_JSON).read_text())
        self._trials = {t.trial_id: t for t in trials(ExperimentSpec.from_dict(meta["spec"]))}

    def ids(self) -> list[str]:
        return list(self._trials)

    def trial(self, trial_id: str) -> Trial:
        return self._trials[trial_id]

    def config(self, trial_id: str) -> Config:
        """The launcher config of a trial: its run directory ``runs/<trial>/`` and a Ray
        namespace unique per experiment directory and trial."""
        return trial_config(self._trials[trial_id], out=str(self.exp_dir / RUNS_DIR / trial_id),
                            namespace=f"islands-{self.name}-{trial_id}")

    def record(self, trial_id: str) -> dict[str, Any]:
        """What the trial's ``trial.json`` starts with (the runtime adds when and how it ran)."""
        t = self._trials[trial_id]
        return {"trial": t.trial_id, "label": t.label, "seed": t.seed, "params": t.params}
