"""Experiments: a research question as a grid of launcher runs (``python -m
islands.experiment run experiments/X.yaml --scale laptop``).

- ``names``: shared names (scales, the experiment directory's files).
- ``spec``: the experiment YAML -> :class:`ExperimentSpec` at one scale, its
  :class:`Trial` s and their launcher configs (plain Python, no Ray).
- ``provenance``: commit, machine, versions and env-table rows, recorded when it starts.
- ``collect``: every trial of an experiment directory -> a row with its status, and the
  learning curves; ``store``: those tables as ``results.parquet`` / ``curves.parquet``.
- ``cells``, ``stats``: per-cell statistics with 95% intervals (Kaplan-Meier, Wilson,
  log-rank on scipy), the speedup table.
- ``reports`` (a module per question, ``common`` for what they share), ``figures``:
  ``report.md`` and its figures.
- ``cli`` (``__main__``): the command; the Tune runner is ``islands.runtime.sweep``.
"""

from .spec import ExperimentError, ExperimentSpec, Trial, load_experiment, trials

__all__ = ["ExperimentError", "ExperimentSpec", "Trial", "load_experiment", "trials"]
