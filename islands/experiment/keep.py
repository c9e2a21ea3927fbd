"""``python -m islands.experiment keep DIR --out KEPT``: what a resume needs, and nothing else.

A long experiment (Walker2d, Ant, Humanoid: hours per run on 2 cores) outlives the machine it
started on; its directory's bulk is TensorBoard event files, which a resume does not read.
The kept copy holds the experiment's record (``experiment.json``, results, report), Tune's
state without its event files, and for each trial's run directory its config, trial record,
metrics, summary, solution and, for a trial not finished yet, checkpoints (a linear policy's
are kilobytes; a finished trial is never run again): small enough to commit.
``python -m islands.experiment resume KEPT`` continues it on any machine with the same
commit (its trials' run directories are found under KEPT wherever it lies).

A single run's directory (``islands launch``'s: a ``config.yaml``, no ``experiment.json``) is
kept the same way, as one trial's run directory is, and continues with
``python -m islands.launch --resume KEPT``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .names import EXPERIMENT_JSON, RUNS_DIR, TUNE_DIR
from .spec import ExperimentError

# a trial's run directory: what `--resume` and the report read (not tb/ nor fitness.png)
RUN_CONFIG = "config.yaml"
SUMMARY = "summary.json"
RUN_FILES = (RUN_CONFIG, "trial.json", "metrics.parquet", "summary.json", "solution.npz",
             "solution.json", "segments.json")
SKIP = ("events.out.tfevents*", "tb", "*.png")  # TensorBoard's files, pictures


def is_run(d: str | Path) -> bool:
    """Whether ``d`` is one run's directory (a launch's), not an experiment's."""
    return (Path(d) / RUN_CONFIG).is_file() and not (Path(d) / EXPERIMENT_JSON).is_file()


def keep(src: str | Path, out: str | Path) -> Path:
    """Copy experiment or run ``src`` into the new directory ``out`` (see the module
    docstring)."""
    src, out = Path(src), Path(out)
    if not (src / EXPERIMENT_JSON).is_file() and not is_run(src):
        raise ExperimentError(f"{src} is neither an experiment directory (no "
                              f"{EXPERIMENT_JSON}) nor a run directory (no {RUN_CONFIG})")
    if out.exists():
        raise ExperimentError(f"{out} already exists: keep makes a new directory")
    if is_run(src):
        _keep_run(src, out)
        return out
    out.mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file():
            shutil.copy2(f, out / f.name)
    if (src / TUNE_DIR).is_dir():
        shutil.copytree(src / TUNE_DIR, out / TUNE_DIR, ignore=shutil.ignore_patterns(*SKIP))
    for run in sorted((src / RUNS_DIR).glob("*")) if (src / RUNS_DIR).is_dir() else []:
        # a trial with its summary is done (the runner never runs it again): no checkpoints
        _keep_run(run, out / RUNS_DIR / run.name, checkpoints=not (run / SUMMARY).is_file())
    return out


def _keep_run(run: Path, dst: Path, checkpoints: bool = True) -> None:
    """A run directory's files that ``--resume`` and the reports read, into new ``dst``
    (its checkpoints only with ``checkpoints``)."""
    dst.mkdir(parents=True)
    for name in RUN_FILES:
        if (run / name).is_file():
            shutil.copy2(run / name, dst / name)
    if checkpoints and (run / "checkpoints").is_dir():
        shutil.copytree(run / "checkpoints", dst / "checkpoints")


def size(d: str | Path) -> int:
    """Bytes under ``d``."""
    return sum(p.stat().st_size for p in Path(d).rglob("*") if p.is_file())
