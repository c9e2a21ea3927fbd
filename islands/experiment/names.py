"""Names shared by the experiment modules: scales, the experiment directory's files, the
launcher fields an experiment may not set.

Plain data, no imports from the rest of the package, so every experiment module can use it
without cycles.
"""

from __future__ import annotations

SCALES = ("smoke", "laptop", "cluster")

# The experiment directory.
EXPERIMENT_JSON = "experiment.json"  # the resolved experiment (spec at its scale) + trials
RUNS_DIR = "runs"  # runs/<trial>/: one launcher run directory per trial (+ trial.json)
TRIAL_JSON = "trial.json"  # in a run directory: {"trial", "seed", "params"}
TUNE_DIR = "tune"  # Ray Tune's storage (Tuner.restore reads it)
RESULTS = "results.parquet"  # one row per run
CURVES = "curves.parquet"  # learning curves: one row per island report, archipelago totals
REPORT_MD = "report.md"
FIGURES_DIR = "figures"

# Launcher fields an experiment may not set: the runner sets them per trial.
RUNNER_FIELDS = ("out", "namespace", "address", "quiet", "resume", "config", "dashboard")
# Launcher fields a ``budget:`` block may hold.
BUDGET_FIELDS = ("max_evals", "max_episodes", "max_env_steps", "time_budget", "generations")
