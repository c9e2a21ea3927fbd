"""An experiment's grid of runs as Ray Tune trials (``python -m islands.experiment``).

What the trials are comes from a source object (ids, each one's launcher config and
``trial.json`` record, Tune's storage path:
:class:`islands.experiment.source.ExperimentTrials`), so this layer imports nothing from
the experiment package above it. One Tune trial per run of the grid: the trial's function
runs one whole archipelago through :func:`islands.runtime.driver.run` into
``<experiment>/runs/<trial>/``, with its islands in the trial's placement group (a
:class:`~ray.tune.PlacementGroupFactory` with an empty head bundle -- the trial function
only waits on the islands -- and one bundle per island, sized as the launcher would size
it) and its actors named in a Ray namespace of its own. A trial whose islands ask for more
CPUs each than the cluster can give them all gets equal shares instead (``shared_cpus`` in
its ``trial.json``). Wall clock and throughput are measured quantities, so by default Tune
runs only as many trials at once as can each keep their cores to themselves
(:func:`exclusive_concurrency`: one at a time on a 2-core laptop); it shows them in its
progress table and in the dashboard, and keeps its experiment state in
``<experiment>/tune/``. :func:`resume` continues through ``Tuner.restore``: finished trials
are not run again; an unfinished trial's function starts again and continues its run from
the islands' own checkpoints (``--resume``), or starts the run afresh where none were
written yet.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import time
from pathlib import Path
from typing import Any

import ray
from ray import tune

from ..config import ConfigError, resolve
from ..placement import place_by_node_type
from ..planning import default_cpu_share, plan_hosts, plan_islands
from .cluster import cluster_nodes

REPORT_EVERY_S = 2.0  # tune.report blocks until Tune takes the result: not every report
TRIAL_METRICS = ("generation", "best_fitness", "total_evals", "total_env_steps", "wall_s")


@dataclasses.dataclass(frozen=True)
class TrialPlan:
    """What the driver decided for one trial: its CPU share per island (the bundles' size),
    the placement group's bundles, and the real cores it occupies when it runs alone
    (:func:`exclusive_cpus`). ``shared``: the experiment asked for a share per island that
    the cluster cannot give this many islands, so they share its CPUs (default share)."""

    trial_id: str
    cpus_per_island: float
    bundles: list[dict[str, float]]
    exclusive_cpus: int = 1
    shared: bool = False


def exclusive_cpus(bundles: list[dict[str, float]]) -> int:
    """Cores a trial keeps busy: each worker process's CPUs rounded up (an island with a
    0.25 share still runs a whole thread), plus one for the trial's coordinator, tester
    and driver loop, which Ray books at 0 CPUs but which do run."""
    return sum(math.ceil(b.get("CPU", 0.0) - 1e-9) for b in bundles) + 1


def _plan_one(cfg, nodes: list[dict[str, float]]) -> tuple[float, list, bool]:
    """(share, host bundles, shared) of one trial's config on ``nodes``. A virtual run keeps
    its own share (its islands live on its cluster file's nodes, not these) and books one
    node's CPUs whole: it runs in the trial's process, its evaluators on all the cores."""
    node_cpus = [n.get("CPU", 0.0) for n in nodes]
    if cfg.runtime == "virtual":
        return cfg.cpus_per_island, [{"CPU": max(node_cpus, default=1.0)}], False
    fitting = default_cpu_share(cfg.islands, node_cpus)
    share, shared = cfg.cpus_per_island or fitting, False
    if share > fitting:  # e.g. 16 islands x 1 CPU on a 2-core laptop: share the cores
        share, shared = fitting, True
    cfg = dataclasses.replace(cfg, cpus_per_island=share)
    plan = place_by_node_type(plan_islands(cfg, node_cpus), nodes)
    # One bundle per worker process, as the launcher will group the islands.
    hosts = plan_hosts(plan, nodes, cfg.islands_per_process)
    return share, [h.needs() for h in hosts], shared


def plan_trials(source) -> dict[str, TrialPlan]:
    """Bundles per trial, from the connected cluster's nodes, as the launcher would plan
    each run on the whole cluster (its ``--cpus-per-island`` where the experiment sets
    one and the cluster has room for it, else the default share)."""
    nodes = cluster_nodes()
    plans = {}
    for trial_id in source.ids():
        share, bundles, shared = _plan_one(source.config(trial_id), nodes)
        plans[trial_id] = TrialPlan(trial_id, share, bundles, exclusive_cpus(bundles), shared)
    return plans


def exclusive_concurrency(plans: dict[str, TrialPlan], total_cpus: float) -> int:
    """Trials at once such that each keeps its cores to itself: wall-clock times and
    throughputs are the measured quantities, and two trials packed onto the same cores
    slow each other (two 1-island trials on a 2-core laptop did). One at a time where the
    cluster has fewer CPUs than two of the largest trials need."""
    need = max((p.exclusive_cpus for p in plans.values()), default=1)
    return max(1, int(total_cpus // need))


# ---- inside a trial ------------------------------------------------------------------------
def run_trial(config: dict[str, Any], source, plans: dict[str, TrialPlan]) -> None:
    """Tune's function for one trial: one archipelago run into ``runs/<trial>/``. Its
    ``trial.json`` records when it ran (the report counts the trials that overlapped it),
    its CPU share, and, for a run that raised, ``status`` crashed or oom with the reason:
    a trial that failed stays a row of the results."""
    from .driver import run

    trial_id = config["trial"]
    plan, cfg = plans[trial_id], source.config(trial_id)
    run_dir = Path(cfg.out)
    done = run_dir / "summary.json"
    if done.exists():  # finished before Tune recorded it (a driver lost at the end)
        tune.report(_final(json.loads(done.read_text())))
        return
    cfg = _trial_config(cfg, plan.cpus_per_island)
    record = {**source.record(trial_id), "resumed": cfg.resume is not None,
              "started_at": time.time(), "cpus_per_island": plan.cpus_per_island,
              "shared_cpus": plan.shared, "exclusive_cpus": plan.exclusive_cpus}
    try:
        summary = run(cfg, display=False, observer=_Reporter())
    except BaseException as e:
        _write_trial(run_dir / source.trial_file,
                     record | {"ended_at": time.time(), **failure_of(e)})
        raise
    _write_trial(run_dir / source.trial_file, record | {"ended_at": time.time()})
    tune.report(_final(summary))  # after the files: a run Tune counts as done is on disk


def failure_of(e: BaseException) -> dict[str, str]:
    """``status`` (oom or crashed) and a one-line ``reason`` for a run that raised."""
    text = f"{type(e).__name__}: {e}"
    oom = (isinstance(e, (MemoryError, ray.exceptions.OutOfMemoryError))
           or "out of memory" in text.lower() or "OutOfMemoryError" in text)
    if isinstance(e, KeyboardInterrupt):
        return {"status": "interrupted", "reason": "KeyboardInterrupt"}
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return {"status": "oom" if oom else "crashed", "reason": (lines[-1] if lines else text)[:300]}


def _write_trial(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(path)


def _trial_config(cfg, share: float):
    """The trial's launcher config at its CPU share; ``resume`` set where its islands left
    checkpoints."""
    from ..config.resume import check_resume

    cfg = dataclasses.replace(cfg, cpus_per_island=share)
    run_dir = Path(cfg.out)
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

    def __call__(self, row: dict[str, Any], status) -> None:  # a messages.RunStatus
        now = time.monotonic()
        best = float(status.hof["fitness"])
        # nothing evaluated yet (-inf): Tune's TensorBoard logger would print "NaN or Inf
        # found in input tensor" for it, so the first report waits for a finite best
        if now - self.last < REPORT_EVERY_S or not math.isfinite(best):
            return
        self.last = now
        tune.report({"generation": int(row["generation"]), "best_fitness": best,
                     "total_evals": int(row.get("total_evals", 0)),
                     "total_env_steps": int(row.get("total_env_steps", 0)),
                     "wall_s": float(row["wall_s"]), "solved": False})


def _final(s: dict[str, Any]) -> dict[str, Any]:
    """The run's outcome for Tune; the test means only where a test ran (a NaN would print
    "NaN or Inf found in input tensor" from Tune's TensorBoard logger)."""
    tests = {k: float(s[k]) for k in ("test_mean", "confirmation_mean")
             if s.get(k) is not None}
    return {"best_fitness": float(s["best_fitness"]), "total_evals": int(s["total_evals"]),
            "total_env_steps": int(s["total_env_steps"]), "wall_s": float(s["wall_s"]),
            "solved": bool(s["solved"]), "final": True, **tests}


# ---- users' own sweeps ---------------------------------------------------------------------
def user_trainable(base: dict[str, Any]):
    """A Tune trainable for a user's own sweep (``islands.trainable``): each trial runs one
    archipelago with the launcher options ``base`` and the trial's ``config`` on top (both by
    field name; Tune's search spaces go in ``param_space``), into ``<trial dir>/run``, its
    actors in a namespace of their own, in a placement group sized as the launcher would
    size the run on the connected cluster. It reports ``best_fitness`` (the archipelago's
    hall of fame), ``generation``, ``total_evals``, ``total_env_steps`` and ``wall_s`` every
    few seconds, then the run's outcome (``solved``, ``test_mean``, ``final``)."""
    from ..config import from_options

    from_options(dict(base))  # unknown names fail here, before Tune starts a trial

    def resources(config: dict[str, Any]) -> tune.PlacementGroupFactory:
        cfg = resolve(from_options({**base, **config, "out": "unused"}))
        _, bundles, _ = _plan_one(cfg, cluster_nodes())
        return tune.PlacementGroupFactory([{}] + bundles, strategy="PACK")

    return tune.with_resources(tune.with_parameters(_user_trial, base=dict(base)),
                               resources=resources)


def _user_trial(config: dict[str, Any], base: dict[str, Any]) -> None:
    from ..config import from_options
    from .driver import run

    ctx = tune.get_context()
    cfg = resolve(from_options({**base, **config, "quiet": True,
                                "out": str(Path(ctx.get_trial_dir()) / "run"),
                                "namespace": f"tune-{ctx.get_trial_id()}"}))
    share, _, _ = _plan_one(cfg, cluster_nodes())
    cfg = dataclasses.replace(cfg, cpus_per_island=share)
    tune.report(_final(run(cfg, display=False, observer=_Reporter())))


# ---- the driver ----------------------------------------------------------------------------
def _trainable(source, plans: dict[str, TrialPlan]):
    bundles = {k: p.bundles for k, p in plans.items()}
    fn = tune.with_parameters(run_trial, source=source, plans=plans)
    return tune.with_resources(
        fn, resources=lambda config: tune.PlacementGroupFactory(
            [{}] + bundles[config["trial"]], strategy="PACK"))


def _run_config(source, verbose: int, stop: Any = None, wandb: str | None = None
                ) -> tune.RunConfig:
    """Tune's storage in ``source.tune_path``; its TensorBoard logger (each trial's results
    under ``<tune_path>/<trial>/``) and, with ``wandb``, its W&B logger into that project."""
    from ray.tune.logger import TBXLoggerCallback

    callbacks = [TBXLoggerCallback()]
    if wandb is not None:
        from ray.air.integrations.wandb import WandbLoggerCallback

        callbacks.append(WandbLoggerCallback(project=wandb, group=source.name))
    path = source.tune_path.resolve()
    return tune.RunConfig(
        name=path.name, storage_path=str(path.parent), verbose=verbose, stop=stop,
        failure_config=tune.FailureConfig(max_failures=0), callbacks=callbacks)


def run_experiment(source, verbose: int = 1, stop: Any = None,
                   max_concurrent: int | None = None, wandb: str | None = None) -> Any:
    """Run every trial of ``source`` (the driver must be connected).
    ``stop``: a Tune stopper (``RunConfig(stop=...)``), e.g. one that ends the whole
    experiment early, as an interruption would. ``max_concurrent``: trials at once at most
    (default: :func:`exclusive_concurrency`, each trial on cores of its own). ``wandb``: a
    Weights & Biases project that Tune logs every trial's results to."""
    plans = plan_trials(source)
    ids = source.ids()
    if max_concurrent is None:
        max_concurrent = exclusive_concurrency(plans, ray.cluster_resources().get("CPU", 1))
    tuner = tune.Tuner(_trainable(source, plans),
                       param_space={"trial": tune.grid_search(ids)},
                       tune_config=tune.TuneConfig(max_concurrent_trials=max_concurrent),
                       run_config=_run_config(source, verbose, stop, wandb))
    try:
        return tuner.fit()
    finally:
        close_stopped_segments(source)


def resume_experiment(source, verbose: int = 1) -> Any:
    """Continue an interrupted experiment: Tune restores its state and runs what is left
    (errored trials too: their runs continue from their checkpoints)."""
    path = str(source.tune_path.resolve())
    if not tune.Tuner.can_restore(path):
        raise ConfigError(f"{source.name}: no Tune state to resume in {path}")
    plans = plan_trials(source)
    tuner = tune.Tuner.restore(path, trainable=_trainable(source, plans),
                               resume_unfinished=True, resume_errored=True)
    try:
        return tuner.fit()
    finally:
        close_stopped_segments(source)


def close_stopped_segments(source) -> list[str]:
    """Once Tune is done (all trials finished, or stopped by an interrupt): the trials
    whose run segment is still open, closed as stopped. Tune stops a trial by ending its
    process, so a run busy in a long island call (an Ant generation: tens of seconds)
    never returns to close its segment itself; its end stays the last metrics flush."""
    from ..output.segments import close_open

    return [t for t in source.ids() if close_open(Path(source.config(t).out))]


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
