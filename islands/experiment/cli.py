"""``python -m islands.experiment run|resume|report``: a research question, one command.

    python -m islands.experiment run experiments/network-scaling.yaml --scale laptop \\
        [--out DIR] [--address auto]
    python -m islands.experiment resume DIR      # after Ctrl-C or a lost driver
    python -m islands.experiment report DIR      # re-render report.md from the results
                                                 # (a copy kept without runs/: its parquet)
    python -m islands.experiment merge DIR DIR ... --out OUT   # pool more seeds of one
                                                 # question into one report
    python -m islands.experiment keep DIR --out KEPT   # what a resume needs, small enough
                                                 # to commit; resume KEPT anywhere

``run`` checks the whole grid first (an unknown field, a malformed YAML, an unknown scale, a
trial whose launcher config does not resolve: exit 2, one line, nothing written), writes
``DIR/experiment.json``, runs every trial through Ray Tune (:mod:`islands.runtime.sweep`),
then collects ``results.parquet`` / ``curves.parquet`` and writes ``report.md`` with its
figures. The experiment YAMLs are data: any user-written file works the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from .names import EXPERIMENT_JSON, REPORT_MD, SCALES, TUNE_DIR
from .narrow import narrowed
from .spec import ExperimentError, check_trials, load_experiment, trials

PROG = "islands.experiment"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run a research question (an experiment YAML: a grid of launcher runs "
        "x seeds) on Ray Tune and write its report.",
        epilog=__doc__.split("\n\n")[1] + "\n\nExperiments of the research plan: "
        "experiments/*.yaml (scales: " + ", ".join(SCALES) + ").")
    sub = p.add_subparsers(dest="command", required=True,
                           metavar="{run,resume,report,merge,keep}")
    r = sub.add_parser("run", help="run an experiment YAML at a scale")
    r.add_argument("file", help="experiment YAML (see experiments/)")
    r.add_argument("--scale", default=None, help=f"one of {', '.join(SCALES)} as the file "
                   "defines them (default: the file's top level as written)")
    r.add_argument("--out", help="experiment directory (default: "
                   "runs/experiments/<name>-<scale>-<time>)")
    r.add_argument("--seeds", default=None, metavar="SEEDS",
                   help="other seeds than the file's (e.g. 4010-4019): more runs of the same "
                   "question, pooled with an earlier directory by merge")
    r.add_argument("--only", action="append", default=[], metavar="FIELD=V1,V2",
                   help="run only these values of a grid field (repeatable), e.g. --only "
                   "arm=islands-4,one-x4 --only env=Hopper-v4; arm takes any of the file's "
                   "arms, listed in a grid or not")
    r.add_argument("--budget", action="append", default=[], metavar="FIELD=N",
                   help="a budget field over the file's (repeatable), e.g. --budget "
                   "time_budget=900: a shorter cap for choosing runs (runs it stops unsolved "
                   "are censored where they stopped)")
    r.add_argument("--max-concurrent", type=int, default=None, metavar="N",
                   help="trials at once at most (default: as many as can each have cores of "
                   "their own, since wall clock and throughput are measured: one at a time "
                   "where the cluster has fewer CPUs than two trials need)")
    r.add_argument("--wandb", default=None, metavar="PROJECT",
                   help="also log every trial's results to this Weights & Biases project "
                   "(Tune's WandbLoggerCallback; needs pip install wandb). TensorBoard "
                   "files are always written: tensorboard --logdir DIR")
    _ray_flags(r)
    s = sub.add_parser("resume", help="continue an interrupted experiment")
    s.add_argument("dir", help="the experiment directory")
    _ray_flags(s)
    t = sub.add_parser("report", help="collect the results and write report.md again")
    t.add_argument("dir", help="the experiment directory")
    m = sub.add_parser("merge", help="pool directories of one experiment (more seeds) into "
                       "one kept copy and write its report")
    m.add_argument("dirs", nargs="+", metavar="dir", help="experiment directories of the same "
                   "question (same name, report, base, budget and arms of the same name; other "
                   "seeds)")
    m.add_argument("--out", required=True, help="the pooled copy (a new directory)")
    m.add_argument("--arms", action="append", default=[], metavar="DIR:ARM[,ARM]",
                   help="take only these arms' runs from DIR (one of the dirs, as written; "
                   "repeatable), e.g. a kept copy's real runs beside a newer virtual arm of "
                   "the same name as one the copy also holds")
    k = sub.add_parser("keep", help="copy what a resume needs (no TensorBoard files) into "
                       "a new directory small enough to commit; resume it on any machine")
    k.add_argument("dir", help="the experiment directory, or one run's (islands launch's) "
                   "directory (stop it first: Ctrl-C)")
    k.add_argument("--out", required=True, help="the kept copy (a new directory)")
    return p


def _ray_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--address", default=os.environ.get("RAY_ADDRESS"),
                   help="Ray cluster to join (auto: the local cluster's head); default: an "
                   "embedded Ray on this machine")
    p.add_argument("--dashboard", choices=("on", "off"), default="on",
                   help="Ray dashboard with the embedded Ray (default: on)")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "wandb", None) is not None:
            _check_wandb()
        if args.command == "run":
            exp_dir = prepare(args.file, args.scale, args.out, args.seeds, args.only,
                              args.budget)
        elif args.command == "merge":
            from .merge import arms_of, merge

            exp_dir = merge(args.dirs, args.out, arms_of(args.arms, args.dirs))
        elif args.command == "keep":
            from .keep import is_run, keep, size

            kept = keep(args.dir, args.out)
            again = (f"python -m islands.launch --resume {kept}" if is_run(kept)
                     else f"python -m {PROG} resume {kept}")
            print(f"{PROG}: kept {size(kept) / 1024:,.0f} KiB in {kept}; continue it with: "
                  f"{again}")
            return 0
        else:
            exp_dir = existing(args.dir)
            if args.command == "resume":
                _resumable(exp_dir)
    except ExperimentError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    if args.command in ("report", "merge"):
        return _report(exp_dir)
    return _execute(exp_dir, args.command == "resume", args.address, args.dashboard == "on",
                    getattr(args, "max_concurrent", None), getattr(args, "wandb", None))


def _resumable(exp_dir: Path) -> None:
    """A merged copy has no trials of its own to continue: resume its sources."""
    from .collect import read_meta

    sources = read_meta(exp_dir).get("sources")
    if sources:
        dirs = " and ".join(str(s["dir"]) for s in sources)
        raise ExperimentError(f"{exp_dir} was merged from {dirs}: resume those, then merge "
                              "again")


def _check_wandb() -> None:
    from ..config.checks import wandb_missing

    missing = wandb_missing()
    if missing:
        raise ExperimentError(f"--wandb: {missing}")


def prepare(file: str, scale: str | None, out: str | None, seeds: str | None = None,
            only: list[str] | None = None, budget: list[str] | None = None) -> Path:
    """Check the experiment and every trial; only then create DIR and experiment.json."""
    spec = narrowed(load_experiment(file, scale), seeds, only or [], budget)
    check_trials(spec)
    exp_dir = Path(out or Path("runs", "experiments",
                               f"{spec.name}-{scale or 'base'}-{time.strftime('%Y%m%d-%H%M%S')}"))
    if exp_dir.exists() and (not exp_dir.is_dir() or any(exp_dir.iterdir())):
        raise ExperimentError(f"{exp_dir} already exists and is not empty (to continue it: "
                              f"python -m {PROG} resume {exp_dir})")
    exp_dir.mkdir(parents=True, exist_ok=True)
    from .provenance import record

    flags = ([] if seeds is None else ["--seeds", seeds]) + [
        x for item in only or [] for x in ("--only", item)] + [
        x for item in budget or [] for x in ("--budget", item)]
    meta = {"spec": spec.to_dict(), "provenance": record(spec.to_dict()), "run_flags": flags,
            "trials": [{"trial_id": t.trial_id, "label": t.label, "params": t.params,
                        "seed": t.seed} for t in trials(spec)]}
    (exp_dir / EXPERIMENT_JSON).write_text(json.dumps(meta, indent=2) + "\n")
    return exp_dir


def existing(d: str) -> Path:
    """An experiment directory: ExperimentError (one line) for anything else."""
    exp_dir = Path(d)
    if not (exp_dir / EXPERIMENT_JSON).is_file():
        raise ExperimentError(f"{d} is not an experiment directory (no {EXPERIMENT_JSON}; "
                              f"start one with: python -m {PROG} run FILE)")
    return exp_dir


def _execute(exp_dir: Path, resume: bool, address: str | None, dashboard: bool,
             max_concurrent: int | None = None, wandb: str | None = None) -> int:
    from ..config import ConfigError
    from ..runtime import sweep
    from .source import ExperimentTrials

    n = len(json.loads((exp_dir / EXPERIMENT_JSON).read_text())["trials"])
    print(f"{PROG}: {'resuming' if resume else 'running'} {n} trials in {exp_dir} "
          f"(Tune state: {exp_dir / TUNE_DIR})", flush=True)
    started = sweep.connect(address, dashboard)
    try:
        source = ExperimentTrials(exp_dir)
        if resume:
            grid = sweep.resume_experiment(source)
        else:
            grid = sweep.run_experiment(source, max_concurrent=max_concurrent, wandb=wandb)
    except ConfigError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    finally:
        if started:
            sweep.disconnect()
    failed = [r.error for r in grid if r.error is not None]
    code = _report(exp_dir)
    if failed:
        print(f"{PROG}: {len(failed)} of {len(grid)} trials failed; first: "
              f"{str(failed[0]).strip().splitlines()[-1]}", file=sys.stderr)
        return 1
    return code


def _report(exp_dir: Path) -> int:
    from .cells import ran
    from .collect import read_meta
    from .provenance import table_changes
    from .reports import write_report
    from .store import kept, load, write_results

    # the runs' files collected again (the reading code may have changed since); a copy kept
    # without its runs (docs/results) renders from its results.parquet
    results = load(exp_dir)[1] if kept(exp_dir) else write_results(exp_dir)[0]
    path = write_report(exp_dir)
    print(f"{PROG}: {len(ran(results))} runs; report: {path}")
    changes = table_changes(read_meta(exp_dir))
    if changes:
        print(f"{PROG}: warning: the environment table changed since these runs: "
              + "; ".join(changes), file=sys.stderr)
    return 0 if (exp_dir / REPORT_MD).exists() else 1
