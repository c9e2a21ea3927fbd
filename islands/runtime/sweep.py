"""An experiment's grid of runs as Ray Tune trials (``python -m islands.experiment``).

One Tune trial per run of the grid (:func:`islands.experiment.spec.trials`): the trial's
function runs one whole archipelago through :func:`islands.runtime.launch.run` into
``<experiment>/runs/<trial>/``, with its islands in the trial's placement group (a
:class:`~ray.tune.PlacementGroupFactory` with an empty head bundle -- the trial function
only waits on the islands -- and one bundle per island, sized as the launcher would size
it) and its actors named in a Ray namespace of its own. Tune runs trials concurrently as
the cluster's free resources allow (one at a time on a laptop whose CPUs one trial takes),
shows them in its progress table and in the dashboard, and keeps its experiment state in
``<experiment>/tune/``. :func:`resume` continues through ``Tuner.restore``: finished trials
are not run again; an unfinished trial's function starts again and continues its run from
the islands' own checkpoints (``--resume``), or starts the run afresh where none were
written yet.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import Any

import ray
from ray import tune

from ..config import ConfigError, resolve
from ..experiment.kinds import EXPERIMENT_JSON, RUNS_DIR, TRIAL_JSON, TUNE_DIR
from ..placement import place_by_node_type
from ..planning import default_cpu_share, plan_hosts, plan_islands
from .cluster import cluster_nodes

REPORT_EVERY_S = 2.0  # tune.report blocks until Tune takes the result: not every report
TRIAL_METRICS = ("generation", "best_fitness", "total_evals", "total_env_steps", "wall_s")


@dataclasses.dataclass(frozen=True)
class TrialPlan:
    """What the driver decided for one trial: its CPU share per island (the bundles' size)
    and the placement group's bundles."""

    trial_id: str
    cpus_per_island: float
    bundles: list[dict[str, float]]


def plan_trials(exp_dir: Path) -> dict[str, TrialPlan]:
    """Bundles per trial, from the connected cluster's nodes, as the launcher would plan
    each run on the whole cluster (its ``--cpus-per-island`` where the experiment sets
    one, else the default share)."""
    from ..experiment.spec import trial_config

    nodes = cluster_nodes()
    node_cpus = [n.get("CPU", 0.0) for n in nodes]
    plans = {}
    for trial in _trials(exp_dir).values():
        cfg = trial_config(trial, out=str(exp_dir / RUNS_DIR / trial.trial_id),
                           namespace=namespace_of(exp_dir, trial.trial_id))
        share = cfg.cpus_per_island or default_cpu_share(cfg.islands, node_cpus)
        cfg = dataclasses.replace(cfg, cpus_per_island=share)
        plan = place_by_node_type(plan_islands(cfg, node_cpus), nodes)
        # One bundle per worker process, as the launcher will group the islands.
        hosts = plan_hosts(plan, nodes, cfg.islands_per_process)
        plans[trial.trial_id] = TrialPlan(trial.trial_id, share, [h.needs() for h in hosts])
    return plans


def _trials(exp_dir: Path) -> dict[str, Any]:
    """The experiment's trials by id, expanded again from the spec it saved."""
    from ..experiment.spec import ExperimentSpec, trials

    meta = json.loads((exp_dir / EXPERIMENT_JSON).read_text())
    return {t.trial_id: t for t in trials(ExperimentSpec.from_dict(meta["spec"]))}


def namespace_of(exp_dir: Path, trial_id: str) -> str:
    """The Ray namespace of a trial's actors: unique per experiment directory and trial."""
    return f"islands-{exp_dir.name}-{trial_id}"


# ---- inside a trial ------------------------------------------------------------------------
def run_trial(config: dict[str, Any], exp_dir: str, plans: dict[str, TrialPlan]) -> None:
    """Tune's function for one trial: one archipelago run into ``runs/<trial>/``."""
    from .launch import run

    exp = Path(exp_dir)
    trial = _trials(exp)[config["trial"]]
    run_dir = exp / RUNS_DIR / trial.trial_id
    done = run_dir / "summary.json"
    if done.exists():  # finished before Tune recorded it (a driver lost at the end)
        tune.report(_final(json.loads(done.read_text())))
        return
    cfg = _trial_config(trial, exp, run_dir, plans[trial.trial_id].cpus_per_island)
    summary = run(cfg, display=False, observer=_Reporter())
    (run_dir / TRIAL_JSON).write_text(json.dumps(
        {"trial": trial.trial_id, "label": trial.label, "seed": trial.seed,
         "params": trial.params, "resumed": cfg.resume is not None}, indent=2) + "\n")
    tune.report(_final(summary))  # after the files: a run Tune counts as done is on disk


def _trial_config(trial, exp: Path, run_dir: Path, share: float):
    """The trial's launcher config; ``resume`` set where its islands left checkpoints."""
    from ..experiment.spec import trial_config
    from ..resume import check_resume

    cfg = trial_config(trial, out=str(run_dir), namespace=namespace_of(exp, trial.trial_id))
    cfg = dataclasses.replace(cfg, cpus_per_island=share)
    if run_dir.exists():
        try:
            check_resume(cfg)
            return resolve(dataclasses.replace(cfg, resume=str(run_dir)), check_env=False)
        except ConfigError:  # stopped before its first checkpoint: start it again
            shutil.rmtree(run_dir)
    return cfg


class _Reporter:
    """Forwards island reports to Tune, at most every ``REPORT_EVERY_S`` seconds."""

    def __init__(self) -> None:
        self.last = 0.0

    def __call__(self, row: dict[str, Any], status: dict[str, Any]) -> None:
        now = time.monotonic()
        if now - self.last < REPORT_EVERY_S:
            return
        self.last = now
        tune.report({"generation": int(row["generation"]),
                     "best_fitness": float(status["hof"]["fitness"]),
                     "total_evals": int(row.get("total_evals", 0)),
                     "total_env_steps": int(row.get("total_env_steps", 0)),
                     "wall_s": float(row["wall_s"]), "solved": False})


def _final(s: dict[str, Any]) -> dict[str, Any]:
    return {"best_fitness": float(s["best_fitness"]), "total_evals": int(s["total_evals"]),
            "total_env_steps": int(s["total_env_steps"]), "wall_s": float(s["wall_s"]),
            "solved": bool(s["solved"]), "final": True,
            "test_mean": float("nan") if s.get("test_mean") is None else s["test_mean"]}


# ---- the driver ----------------------------------------------------------------------------
def _trainable(exp_dir: Path, plans: dict[str, TrialPlan]):
    bundles = {k: p.bundles for k, p in plans.items()}
    fn = tune.with_parameters(run_trial, exp_dir=str(exp_dir), plans=plans)
    return tune.with_resources(
        fn, resources=lambda config: tune.PlacementGroupFactory(
            [{}] + bundles[config["trial"]], strategy="PACK"))


def _run_config(exp_dir: Path, verbose: int, stop: Any = None) -> tune.RunConfig:
    return tune.RunConfig(
        name=TUNE_DIR, storage_path=str(exp_dir.resolve()), verbose=verbose, stop=stop,
        failure_config=tune.FailureConfig(max_failures=0))


def run_experiment(exp_dir: Path, verbose: int = 1, stop: Any = None,
                   max_concurrent: int | None = None) -> Any:
    """Run every trial listed in ``experiment.json`` (the driver must be connected).
    ``stop``: a Tune stopper (``RunConfig(stop=...)``), e.g. one that ends the whole
    experiment early, as an interruption would. ``max_concurrent``: trials at once at most
    (default: as many as the cluster's resources hold)."""
    plans = plan_trials(exp_dir)
    ids = list(_trials(exp_dir))
    tuner = tune.Tuner(_trainable(exp_dir, plans),
                       param_space={"trial": tune.grid_search(ids)},
                       tune_config=tune.TuneConfig(max_concurrent_trials=max_concurrent),
                       run_config=_run_config(exp_dir, verbose, stop))
    return tuner.fit()


def resume_experiment(exp_dir: Path, verbose: int = 1) -> Any:
    """Continue an interrupted experiment: Tune restores its state and runs what is left
    (errored trials too: their runs continue from their checkpoints)."""
    path = str((exp_dir / TUNE_DIR).resolve())
    if not tune.Tuner.can_restore(path):
        raise ConfigError(f"{exp_dir}: no Tune state to resume in {path}")
    plans = plan_trials(exp_dir)
    tuner = tune.Tuner.restore(path, trainable=_trainable(exp_dir, plans),
                               resume_unfinished=True, resume_errored=True)
    return tuner.fit()


def connect(address: str | None, dashboard: bool = True) -> bool:
    """Join the cluster at ``address`` or start an embedded Ray; True when started here."""
    if ray.is_initialized():
        return False
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(address="local", include_dashboard=dashboard, log_to_driver=False)
    return True


def disconnect() -> None:
    """Stop the Ray that :func:`connect` started."""
    ray.shutdown()
