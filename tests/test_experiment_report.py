"""Results collection and reports of an experiment directory (fast, no Ray).

The directories are built the way the launcher and the runner write them: ``config.yaml``
from a resolved ``islands.config.Config`` and ``metrics.parquet`` / ``summary.json`` through
``islands.output.rundir.RunDir``, ``trial.json`` and ``experiment.json`` as the runner writes them;
only the numbers in them are made up, so that the answers are known.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from islands.config import from_dict, resolve
from islands.envdefaults import env_defaults
from islands.experiment import names
from islands.experiment.cells import per_config, speedup_table
from islands.experiment.collect import CURVE_COLUMNS, RUN_COLUMNS, collect
from islands.experiment.reports import REPORTS, write_report
from islands.experiment.reports.scaling import scaling_answer, scaling_sentence, speedup_sentence
from islands.experiment.store import load, write_results
from islands.output.rundir import METRIC_COLUMNS, RunDir

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "experiment_analysis.ipynb"


# ---- building real-format directories --------------------------------------------------
def island_rows(spec: list[dict]) -> list[dict]:
    """Metrics rows of islands that report every ``dt`` seconds: ``best`` is the island's
    best so far per generation; the totals are the sums of each island's latest counts, as
    the run loop records them."""
    rows = []
    for i, s in enumerate(spec):
        for g, best in enumerate(s["best"], start=1):
            rows.append({c: 0 for c in METRIC_COLUMNS} | {
                "island": i, "strategy": s.get("strategy", "cmaes"), "generation": g,
                "wall_s": g * s["dt"], "evals": g * s.get("evals", 10),
                "env_steps": g * s.get("steps", 1000), "episodes": g * s.get("evals", 10),
                "fitness_max": best, "fitness_mean": best - 1, "best_so_far": best,
                "peak_rss_mb": s.get("peak", 100.0), "call_s": 0.1})
    rows.sort(key=lambda r: r["wall_s"])
    latest: dict[int, dict] = {}
    for r in rows:
        latest[r["island"]] = r
        for k in ("evals", "episodes", "env_steps"):
            r[f"total_{k}"] = sum(x[k] for x in latest.values())
    return rows


def make_run(exp: Path, trial: str, seed: int, params: dict, cfg: dict, metrics: list[dict],
             record: dict | None = None, **summary) -> Path:
    """runs/<trial>/ as the launcher (config.yaml, metrics.parquet, summary.json) and the
    runner (trial.json, with ``record`` in it) leave it; ``summary`` overrides the
    summary's numbers."""
    run = exp / names.RUNS_DIR / trial
    fields = {k: v for k, v in params.items() if k != "arm"}  # an arm's fields are in cfg
    config = resolve(from_dict({**cfg, **fields, "seed": seed, "out": str(run)}),
                     check_env=False)
    rd = RunDir.create(str(run))
    rd.write_config(config.to_yaml_dict())
    rd.write_metrics(metrics)
    last = metrics[-1]
    solved = bool(summary.get("solved", False))
    out = {
        "env": config.env, "islands": config.islands,
        "strategies": [s.strip() for s in config.strategy.split(",")] * config.islands,
        "best_fitness": max(r["best_so_far"] for r in metrics), "test_mean": None,
        "test_std": None, "test_episodes": 0, "solved": solved, "target": config.target,
        "stop_reason": "target" if solved else "evaluation budget", "wall_s": last["wall_s"],
        "startup_s": 2.0, "total_evals": last["total_evals"],
        "total_env_steps": last["total_env_steps"], "total_episodes": last["total_episodes"],
        "evals_to_solve": None, "episodes_to_solve": None, "env_steps_to_solve": None,
        "wall_to_solve": None, "num_params": 58, "backend": "envpool",
    } | summary
    out["strategies"] = out["strategies"][: config.islands]
    rd.write_summary(out)
    (run / names.TRIAL_JSON).write_text(json.dumps(
        {"trial": trial, "label": f"{trial} seed={seed}", "seed": seed, "params": params}
        | (record or {})))
    return run


def failed_run(exp: Path, trial: str, seed: int, params: dict, *, status: str | None = None,
               reason: str = "", tune_error: str = "") -> Path:
    """A trial that raised: the runner's trial.json with its status and reason (when the
    trial function could still write it), or only Tune's error.txt (when it could not)."""
    run = exp / names.RUNS_DIR / trial
    run.mkdir(parents=True)
    record = {"trial": trial, "label": f"{trial} seed={seed}", "seed": seed, "params": params}
    if status:
        record |= {"status": status, "reason": reason}
    (run / names.TRIAL_JSON).write_text(json.dumps(record))
    if tune_error:
        d = exp / names.TUNE_DIR / f"run_trial_ab12c_00009_9_trial={trial}_2026-11-26_10-00-00"
        d.mkdir(parents=True)
        (d / "error.txt").write_text(f"Failure # 1 (occurred at 2026-11-26)\n"
                                     f"Traceback (most recent call last):\n  ...\n{tune_error}\n")
    return run


def make_experiment(exp: Path, report: str, grid: dict, seeds: list[int],
                    trials: list[tuple[str, dict, int]], base: dict | None = None) -> Path:
    exp.mkdir(parents=True)
    spec = {"name": f"test-{report}", "report": report, "question": f"What does {report} say?",
            "description": "A constructed experiment.", "base": base or {}, "grid": grid,
            "seeds": seeds, "budget": {"max_evals": 5000}, "scale": "laptop",
            "source": f"experiments/{report}.yaml"}
    meta = {"spec": spec, "trials": [{"trial_id": t, "label": f"{t} seed={s}", "params": p,
                                      "seed": s} for t, p, s in trials]}
    (exp / names.EXPERIMENT_JSON).write_text(json.dumps(meta, indent=2))
    return exp


def solved_run(exp, trial, seed, params, cfg, *, wall, evals, steps_per_s=1000.0, test=None,
               solved=True, record=None, **summary):
    """A one-island run of 5 reports ending at ``wall`` s and ``evals`` evaluations."""
    dt = wall / 5
    rows = island_rows([{"dt": dt, "best": [1, 2, 3, 4, 5], "evals": evals // 5,
                         "steps": int(steps_per_s * dt)}])
    to_solve = {"evals_to_solve": evals, "wall_to_solve": wall, "env_steps_to_solve": 1,
                "episodes_to_solve": 1} if solved else {}
    return make_run(exp, trial, seed, params, cfg, rows, record, solved=solved,
                    test_mean=test, **to_solve, **summary)


def collect_one(exp: Path, trial: str) -> pd.Series:
    """The results row of ``trial`` in a directory holding only runs/ (no experiment.json)."""
    return collect(exp)[0].set_index("trial").loc[trial]


def figure_links(report: Path) -> list[str]:
    return re.findall(r"\]\((figures/[^)]+\.png)\)", report.read_text())


def assert_report_ok(exp: Path) -> str:
    path = write_report(exp)
    text = path.read_text()
    links = figure_links(path)
    assert links and all((exp / link).is_file() for link in links)
    assert "## Results per configuration" in text
    assert "| runs | solved/runs [95% CI] | median evals to solve [95% CI] |" in text
    assert "python -m islands.experiment run experiments/" in text and "--scale laptop" in text
    return text


# ---- independent checks ------------------------------------------------------------------
def exact_mann_whitney_p(a: list[float], b: list[float]) -> float:
    """Two-sided exact p of the Mann-Whitney U test by enumerating every split of the pooled
    (tie-free) samples: 2 x the smaller tail, at most 1."""
    pooled, n = sorted(a + b), len(a)
    rank = {v: i + 1 for i, v in enumerate(pooled)}
    u_of = lambda xs: sum(rank[x] for x in xs) - n * (n + 1) / 2  # noqa: E731
    u = u_of(a)
    us = [u_of(c) for c in itertools.combinations(pooled, n)]
    return min(1.0, 2 * min(sum(x <= u for x in us), sum(x >= u for x in us)) / len(us))


def logrank_p(times_a, solved_a, times_b, solved_b) -> float:
    """The log-rank test by its formula (observed minus expected events of group a over the
    distinct event times, hypergeometric variance), p from the normal tail via erfc."""
    t = np.r_[times_a, times_b]
    e = np.r_[solved_a, solved_b].astype(bool)
    g = np.r_[np.zeros(len(times_a)), np.ones(len(times_b))]
    o_minus_e = var = 0.0
    for s in np.unique(t[e]):
        at_risk = t >= s
        n, n_a = at_risk.sum(), (at_risk & (g == 0)).sum()
        d, d_a = (e & (t == s)).sum(), (e & (t == s) & (g == 0)).sum()
        o_minus_e += d_a - d * n_a / n
        var += d * (n_a / n) * (1 - n_a / n) * (n - d) / (n - 1) if n > 1 else 0.0
    return math.erfc(abs(o_minus_e) / math.sqrt(var) / math.sqrt(2))


def wilson_by_hand(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    mid, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (mid - half) / (1 + z * z / n), (mid + half) / (1 + z * z / n)


# ---- tests -----------------------------------------------------------------------------
def test_report_kinds_match(tmp_path):
    """An experiment file may name exactly the kinds that have a writer (the registry)."""
    from islands.experiment import ExperimentError, load_experiment

    for kind in [*REPORTS, "no-such-kind"]:
        path = tmp_path / f"{kind}.yaml"
        path.write_text(f"name: x\nreport: {kind}\nseeds: [0]\n")
        if kind in REPORTS:
            assert load_experiment(path, None).report == kind
        else:
            with pytest.raises(ExperimentError, match="allowed: " + ", ".join(REPORTS)):
                load_experiment(path, None)


@pytest.fixture(scope="module")
def generic_exp(tmp_path_factory) -> Path:
    exp = make_experiment(
        tmp_path_factory.mktemp("generic") / "exp", "generic",
        {"hidden": [[32, 16], []], "migration_interval": [5]}, [0, 1],
        [("t0", {"hidden": [32, 16], "migration_interval": 5}, 0),
         ("t1", {"hidden": [], "migration_interval": 5}, 1),
         ("t2", {"hidden": [32, 16], "migration_interval": 5}, 1),
         ("t3", {"hidden": [], "migration_interval": 5}, 0)])
    cfg = {"env": "LunarLander-v3", "islands": 2, "strategy": "cmaes,openai-es"}
    # t0: island 0 reports at 1, 2, 3, 4 s, island 1 at 1.7, 3.4 s
    rows = island_rows([{"dt": 1.0, "best": [1, 2, 3, 20], "peak": 100.0},
                        {"dt": 1.7, "best": [10, 12], "peak": 250.0}])
    make_run(exp, "t0", 0, {"hidden": [32, 16], "migration_interval": 5}, cfg, rows,
             solved=True, test_mean=210.5, evals_to_solve=50, wall_to_solve=3.9,
             env_steps_to_solve=4000, episodes_to_solve=300, num_params=2788)
    # t1: an older run without peak_rss_mb, unsolved and untested
    run = make_run(exp, "t1", 1, {"hidden": [], "migration_interval": 5},
                   {**cfg, "islands": 1, "strategy": "cmaes"},
                   island_rows([{"dt": 0.5, "best": [-5, -3], "peak": 80.0}]),
                   evals_to_solve=99, num_params=36)
    pd.read_parquet(run / "metrics.parquet").drop(columns="peak_rss_mb").to_parquet(
        run / "metrics.parquet")
    # t3 is still running (a directory without summary, no failure recorded); t2 has not run
    (exp / names.RUNS_DIR / "t3").mkdir()
    (exp / names.RUNS_DIR / "t3" / names.TRIAL_JSON).write_text('{"trial": "t3"}')
    return exp


def test_results_columns_and_values(generic_exp):
    results, curves = collect(generic_exp)
    fixed = [c for c in RUN_COLUMNS if c != "hidden"]
    assert list(results.columns) == ["trial", "label", "seed", "config", "hidden",
                                     "migration_interval", *fixed]
    assert list(curves.columns) == list(CURVE_COLUMNS)
    by = results.set_index("trial")
    assert list(results["trial"]) == ["t0", "t1", "t2", "t3"]  # every trial is a row
    assert list(results["status"]) == ["solved", "unsolved", "missing", "missing"]
    t0, t1 = by.loc["t0"], by.loc["t1"]
    assert (t0.hidden, t1.hidden) == ("32-16", "linear")
    assert t0.config == "hidden=32-16, migration_interval=5"
    assert (t0.strategy, t1.strategy) == ("cmaes,openai-es", "cmaes")
    popsize = env_defaults("LunarLander-v3")["popsize"]  # the trial leaves it to the table
    assert (t0.policy, t0.islands, t0.popsize, t0.seed, t0.num_params) == ("mlp", 2, popsize,
                                                                            0, 2788)
    assert t0.s_per_gen == pytest.approx((4.0 / 4 + 3.4 / 2) / 2)  # mean over islands
    assert t0.peak_mem_mb == 250.0 and np.isnan(t1.peak_mem_mb)
    assert t0.solved and t0.evals_to_solve == 50 and t0.wall_to_solve == 3.9
    assert (t0.evals_used, t0.wall_used) == (50, 3.9)  # solved: its time to solve
    assert t0.test_mean == 210.5 and t0.target == 200.0
    assert t0.total_env_steps == 4000 + 2000 and t0.wall_s == 4.0
    assert t0.env_steps_per_s == pytest.approx(6000 / 4.0)
    assert t0.evals_per_s_island == pytest.approx(60 / 4.0 / 2)
    # unsolved: no time to solve even if the summary had a number; censored at its budget
    assert not t1.solved and np.isnan(t1.evals_to_solve) and np.isnan(t1.test_mean)
    assert (t1.evals_used, t1.wall_used) == (20, 1.0) and t1.reason == "evaluation budget"
    # solved by the final test after the budget: no time to solve recorded, the run's end
    final = make_run(generic_exp.parent / "final", "t0", 0, {}, {"env": "CartPole-v1"},
                     island_rows([{"dt": 1.0, "best": [1, 2]}]), solved=True, test_mean=480.0,
                     stop_reason="evaluation budget")
    row = collect_one(final.parent.parent, final.name)
    assert row.status == "solved" and (row.evals_used, row.wall_used) == (20, 2.0)
    assert row.solved_at_total and row.episodes_used == row.total_episodes == 20
    assert not t0.solved_at_total and t0.episodes_used == 300
    # summaries without ``confirmed`` predate confirmations: solved on the test alone
    assert t0.confirmed is None and np.isnan(t0.confirmation_mean)
    c0 = curves[curves["trial"] == "t0"]
    assert list(c0["wall_s"]) == [1.0, 1.7, 2.0, 3.0, 3.4, 4.0]
    assert list(c0["best_fitness"]) == [1, 10, 10, 10, 12, 20]  # archipelago running max
    assert list(c0["total_evals"]) == [10, 20, 30, 40, 50, 60]


def test_load_writes_then_reads_parquet(generic_exp):
    meta, results, curves = load(generic_exp)
    assert (generic_exp / names.RESULTS).is_file() and (generic_exp / names.CURVES).is_file()
    assert meta["spec"]["report"] == "generic" and len(meta["trials"]) == 4
    _, again, curves_again = load(generic_exp)  # from the files this time
    pd.testing.assert_frame_equal(again, results, check_dtype=False)
    pd.testing.assert_frame_equal(curves_again, curves, check_dtype=False)


def test_generic_report_states_missing_trials(generic_exp):
    text = assert_report_ok(generic_exp)
    assert "**Runs:** 2 of 4 trials ran (1 solved, 1 unsolved); 2 not run yet (t2, t3)." in text
    assert "| 32-16 | 5 | 1 | 1/1 = 100% [21%, 100%] | 50 [50, 50] | 3.9 [3.9, 3.9] |" in text
    assert "| linear | 5 | 1 | 0/1 = 0% [0%, 79%] | not reached | not reached |" in text
    assert "commit, machine, versions: not recorded" in text


@pytest.fixture(scope="module")
def failure_exp(tmp_path_factory) -> Path:
    """cmaes: 4 seeds solve at 1,000-4,000 evaluations, seed 4 runs out of memory (the
    runner recorded it); openai-es never solves (5,000-evaluation budget) and its seed 4
    crashed so hard that only Tune's error.txt tells."""
    trials = [(f"t{i}", {"strategy": s}, seed) for i, (s, seed) in enumerate(
        (s, seed) for s in ("cmaes", "openai-es") for seed in range(5))]
    exp = make_experiment(tmp_path_factory.mktemp("fail") / "exp", "generic",
                          {"strategy": ["cmaes", "openai-es"]}, list(range(5)), trials)
    cfg = {"env": "LunarLander-v3", "islands": 1}
    for trial, params, seed in trials:
        if trial == "t4":
            failed_run(exp, trial, seed, params, status="oom",
                       reason="OutOfMemoryError: Task was killed due to the node running low "
                              "on memory.")
        elif trial == "t9":
            failed_run(exp, trial, seed, params, tune_error="ValueError: boom in the island")
        elif params["strategy"] == "cmaes":
            solved_run(exp, trial, seed, params, cfg, wall=10.0 * (seed + 1),
                       evals=1000 * (seed + 1), test=220.0)
        else:
            solved_run(exp, trial, seed, params, cfg, wall=50.0, evals=5000, solved=False)
    return exp


def test_every_trial_is_a_row_and_failures_count(failure_exp):
    results, _ = collect(failure_exp)
    assert len(results) == 10
    by = results.set_index("trial")
    assert (by.loc["t4", "status"], by.loc["t9", "status"]) == ("oom", "crashed")
    assert by.loc["t9", "reason"] == "ValueError: boom in the island"
    assert list(by.loc[["t5", "t6", "t7", "t8"], "status"]) == ["unsolved"] * 4
    t = per_config(results, "strategy").set_index("strategy")
    assert (t.loc["cmaes", "runs"], t.loc["cmaes", "solved"]) == (5, 4)  # the OOM: a failure
    assert (t.loc["cmaes", "n_oom"], t.loc["openai-es", "n_crashed"]) == (1, 1)
    assert (t.loc["cmaes", "success_low"], t.loc["cmaes", "success_high"]) == pytest.approx(
        wilson_by_hand(4, 5))
    # Kaplan-Meier by hand: the OOM run left no count, so it is out of the fit (and
    # counted): 4 at risk, S = 3/4 after 1,000, 2/4 after 2,000: the median is 2,000
    assert t.loc["cmaes", "evals_to_solve"] == 2000
    assert (t.loc["cmaes", "evals_no_count"], t.loc["openai-es", "wall_no_count"]) == (1, 1)
    assert math.isinf(t.loc["openai-es", "evals_to_solve"])  # never solved: not reached
    text = assert_report_ok(failure_exp)
    assert "**Runs:** 10 of 10 trials ran (4 solved, 4 unsolved, 1 oom, 1 crashed)." in text
    assert ("- t4 (t4 seed=4): oom: OutOfMemoryError: Task was killed due to the node "
            "running low on memory.") in text
    assert "- t9 (t9 seed=4): crashed: ValueError: boom in the island" in text
    assert ("| openai-es | 5 | 0/5 = 0% [0%, 43%] | not reached; 1 no count | not reached; "
            "1 no count |") in text
    assert "| cmaes | 5 | 4/5 = 80% [38%, 96%] | 2,000 [1,000, 4,000]; 1 no count | " in text
    assert ("- 2 run(s) left no count (they failed before their first report): each counts "
            "as unsolved in its cell's success rate and is left out of its Kaplan-Meier fit "
            "(\"no count\" in the cell)") in text and "(t4, t9)." in text
    assert "unconfirmed (t0, t1, t2, t3)." in text  # older summaries: no confirmation


@pytest.fixture(scope="module")
def scaling_exp(tmp_path_factory) -> Path:
    """5 seeds per cell. cmaes solves every seed at 100 parameters, none at 1,000 (the clock
    stopped them all) and every seed again at 10,000; sep-cmaes solves everywhere."""
    sizes = {(4,): 100, (16,): 1000, (64,): 10000}
    trials = [(f"t{n}", {"hidden": list(h), "strategy": s}, seed)
              for n, ((h, s), seed) in enumerate(
                  ((h, s), seed) for h in sizes for s in ("cmaes", "sep-cmaes")
                  for seed in range(5))]
    exp = make_experiment(tmp_path_factory.mktemp("scaling") / "exp", "network-scaling",
                          {"hidden": [[4], [16], [64]], "strategy": ["cmaes", "sep-cmaes"]},
                          list(range(5)), trials)
    for trial, params, seed in trials:
        size = sizes[tuple(params["hidden"])]
        fails = params["strategy"] == "cmaes" and size == 1000
        solved_run(exp, trial, seed, params, {"env": "LunarLander-v3", "islands": 1},
                   wall=10.0 * (1 + size / 1000), evals=1000 * (seed + 1), solved=not fails,
                   test=None if fails else 250.0, num_params=size,
                   stop_reason="time budget" if fails else "target")
    return exp


def test_network_scaling_n_max_stops_at_the_first_failure(scaling_exp):
    results, _ = collect(scaling_exp)
    ans = scaling_answer(results)
    assert ans["n_max"] == 100 and ans["n_max_hidden"] == "4"  # not 10,000: 1,000 failed
    assert int(ans["broke"].num_params) == 1000 and ans["broke"].stopped_by_clock == 5
    c = ans["crossover"]  # 5/5 vs 0/5: Wilson [57%, 100%] vs [0%, 43%] do not overlap
    assert (c["num_params"], c["strategy"]) == (1000, "sep-cmaes")
    assert c["why"] == "success 5/5 = 100% [57%, 100%] vs 0/5 = 0% [0%, 43%]"
    text = assert_report_ok(scaling_exp)
    assert "up to N_max = 10,000" not in text
    assert "at every size up to N_max = 100 parameters (hidden 4: 5/5 = 100% [57%, 100%])" \
        in text
    assert ("at 1,000 (hidden 16) it solved 0/5 = 0% [0%, 43%], but 5 of its 5 runs were "
            "stopped by the clock") in text
    # two seeds per cell: nothing is claimed
    two = results[results["seed"] < 2]
    assert scaling_answer(two)["crossover"] is None
    assert "no difference shown" in scaling_sentence(scaling_answer(two), "LunarLander-v3")


@pytest.fixture(scope="module")
def worker_exp(tmp_path_factory) -> Path:
    """k = 1, 2, 4 islands x 5 seeds. Evaluations to solve: k = 1 800-1,200; k = 2 900,
    1,100, 1,200, 1,400 and one run unsolved at its 5,000-evaluation budget; k = 4 2,000
    each. Per island: 100 evals/s at k = 1, 90 at k = 2 (each trial alone, a core per
    island); k = 4 ran on shared CPUs, two trials at once."""
    spec = {1: ([800, 900, 1000, 1100, 1200], 100.0), 2: ([900, 1100, 1200, 5000, 1400], 90.0),
            4: ([2000] * 5, 40.0)}
    trials = [(f"k{k}s{s}", {"islands": k}, s) for k in spec for s in range(5)]
    exp = make_experiment(tmp_path_factory.mktemp("workers") / "exp", "worker-scaling",
                          {"islands": list(spec)}, list(range(5)), trials)
    clock = 0.0
    for trial, params, seed in trials:
        k = params["islands"]
        evals, rate = spec[k][0][seed], spec[k][1]
        wall = evals / rate / k
        start = clock - (wall / 2 if k == 4 and seed % 2 else 0.0)  # k = 4: overlapping
        record = {"started_at": 1e9 + start, "ended_at": 1e9 + start + wall + 5,
                  "shared_cpus": k == 4, "cpus_per_island": 0.5 if k == 4 else 1.0}
        clock = start + wall + 10
        unsolved = k == 2 and seed == 3
        solved_run(exp, trial, seed, params, {"env": "CartPole-v1", "islands": k},
                   wall=wall, evals=evals, solved=not unsolved, test=500.0, record=record)
    return exp


def test_worker_scaling_is_algorithm_times_system(worker_exp):
    results, _ = collect(worker_exp)
    t = speedup_table(results).set_index("islands")
    assert list(t.index) == [1, 2, 4]
    # the unsolved k = 2 run is censored, not dropped: KM median 1,200 (solved-only: 1,150)
    assert list(t["evals_to_solve"]) == [1000, 1200, 2000]
    np.testing.assert_allclose(t["algorithmic"], [1, 1000 / 1200, 0.5])
    np.testing.assert_allclose(t.loc[[1, 2], "rate"], [100, 90], rtol=1e-6)
    assert list(t["system_measured"]) == [True, True, False]  # k = 4: shared CPUs
    assert list(t["concurrency"]) == [1, 1, 2]
    np.testing.assert_allclose(t.loc[2, "efficiency"], 1000 / 1200 * 0.9)
    np.testing.assert_allclose(t.loc[2, "speedup"], 2 * 1000 / 1200 * 0.9)
    sentence = speedup_sentence(speedup_table(results), cores=2)
    assert "k = 4: algorithmic factor A = 0.5 [" in sentence
    assert "system factor not measured here (this machine has 2 cores)" in sentence
    assert "k = 2: efficiency 0.75 [" in sentence and "its interval contains 0.7" in sentence
    text = assert_report_ok(worker_exp)
    assert "| 4 | 5/5 = 100% [57%, 100%] | 2,000 [2,000, 2,000] | 0.5 [" in text
    assert "## Resolved launcher configuration" in text and "| islands=4 | 4 |" in text


def neuromod_exp(root: Path, seeds: list[int], policies=("neuromod", "mlp"),
                 clock: bool = False) -> Path:
    """neuromod: final tests 210-240 and one run that never reached a test (its training
    best, 240, must not stand in); solved at 2,000-5,000 evaluations but seed 4. mlp: tests
    100-140, solved at 500-900 evaluations."""
    scores = {"neuromod": [210.0, 220.0, 230.0, 240.0, None],
              "mlp": [100.0, 110.0, 120.0, 130.0, 140.0]}
    evals = {"neuromod": [2000, 3000, 4000, 5000, 10000], "mlp": [500, 600, 700, 800, 900]}
    trials = [(f"{p}-{s}", {"policy": p}, s) for p in policies for s in seeds]
    exp = make_experiment(root, "neuromod-vs-cmaes", {"policy": ["neuromod", "mlp"]}, seeds,
                          trials, base={"hidden": [16]})
    for trial, params, seed in trials:
        p = params["policy"]
        solved = not (p == "neuromod" and seed == 4)
        stop = "time budget" if clock and trial == "neuromod-4" else None
        solved_run(exp, trial, seed, params, {"env": "LunarLander-v3", "hidden": [16]},
                   wall=30.0, evals=evals[p][seed], solved=solved, test=scores[p][seed],
                   best_fitness=240.0 if p == "neuromod" else 140.0,
                   **({"stop_reason": stop} if stop else {}))
    return exp


@pytest.fixture(scope="module")
def neuromod_five(tmp_path_factory) -> Path:
    return neuromod_exp(tmp_path_factory.mktemp("neuromod") / "exp", list(range(5)))


def test_neuromod_vs_cmaes_tests_on_test_means_and_all_runs(neuromod_five):
    text = assert_report_ok(neuromod_five)
    p = exact_mann_whitney_p([210, 220, 230, 240], [100, 110, 120, 130, 140])
    assert p == pytest.approx(2 / 126)
    # p < 0.05, but the untested run leaves neuromod 4 test means: no claim below 5
    assert ("Final selecting-test means (the runs predate confirmations): no difference "
            f"shown (median 225 vs 120; Mann-Whitney U = 20, p = {p:.3g}; runs with a final "
            "test: 4 of 5 vs 5 of 5; fewer than 5 runs with a final test in an arm)") in text
    assert ("neuromod-4 (unsolved: no final test: no candidate reached the target in "
            "training)") in text and "stands in" in text  # named: no training fitness
    lr = logrank_p([2000, 3000, 4000, 5000, 10000], [1, 1, 1, 1, 0],
                   [500, 600, 700, 800, 900], [1] * 5)
    assert f"log-rank p = {lr:.3g} < 0.05" in text
    assert "mlp solves in fewer evaluations than neuromod" in text


def test_neuromod_needs_runs_and_both_arms_and_the_evaluation_budget(tmp_path):
    two = assert_report_ok(neuromod_exp(tmp_path / "two", [0, 1]))
    assert "No difference shown in evaluations to solve" in two
    assert "fewer than 5 runs per arm" in two
    half = assert_report_ok(neuromod_exp(tmp_path / "half", [0, 1], policies=("mlp",)))
    assert "No test: arm neuromod has no finished runs." in half
    clock = assert_report_ok(neuromod_exp(tmp_path / "clock", list(range(5)), clock=True))
    assert ("Cannot conclude at equal evaluations: 1 run(s) were stopped by the clock before "
            "the evaluation budget.") in clock


def test_bipedal_and_pong_answers(tmp_path):
    exp = make_experiment(tmp_path / "bip", "bipedal", {}, [0, 1],
                          [("t0", {}, 0), ("t1", {}, 1)], base={"env": "BipedalWalker-v3"})
    cfg = {"env": "BipedalWalker-v3", "islands": 1}
    solved_run(exp, "t0", 0, {}, cfg, wall=1200.0, evals=400_000, test=310.0)
    solved_run(exp, "t1", 1, {}, cfg, wall=3000.0, evals=500_000, test=250.0, solved=False)
    text = assert_report_ok(exp)
    # one of two solved: the KM median (S = 1/2 at 400,000) is 400,000
    assert ("BipedalWalker-v3: reached 300 in 1/2 = 50% [9%, 91%] runs; median 400,000 ["
            in text) and "(Kaplan-Meier, unsolved runs censored)" in text
    pong = make_experiment(tmp_path / "pong", "pong", {}, [0, 1],
                           [("t0", {}, 0), ("t1", {}, 1)])
    for seed, test in ((0, -15.0), (1, -12.5)):
        solved_run(pong, f"t{seed}", seed, {}, {"env": "Pong-v5", "islands": 1}, wall=600.0,
                   evals=10_000, test=test, solved=False)
    assert ("Pong-v5: not reached (target 0) in 2 runs; best selecting test -12.5 (no "
            "confirmations: the runs predate them).") in assert_report_ok(pong)


@pytest.mark.parametrize("kind", REPORTS)
def test_report_of_an_experiment_without_runs(tmp_path, kind):
    exp = make_experiment(tmp_path / "exp", kind, {"islands": [1, 2]}, [0],
                          [("a", {"islands": 1}, 0), ("b", {"islands": 2}, 0)])
    results, curves = write_results(exp)
    assert list(results["status"]) == ["missing", "missing"] and curves.empty
    text = write_report(exp).read_text()
    assert "0 of 2 trials ran; 2 not run yet (a, b)" in text
    assert "No finished runs yet." in text
    assert all((exp / link).is_file() for link in figure_links(exp / names.REPORT_MD))


def test_head_to_head_arms_by_another_grid_field(tmp_path):
    trials = [(f"{s}-{seed}", {"strategy": s}, seed) for s in ("cmaes", "openai-es")
              for seed in (0, 1)]
    exp = make_experiment(tmp_path / "exp", "neuromod-vs-cmaes",
                          {"strategy": ["cmaes", "openai-es"]}, [0, 1], trials)
    for trial, params, seed in trials:
        solved_run(exp, trial, seed, params, {"env": "LunarLander-v3", "islands": 1},
                   wall=10.0, evals=1000, solved=False, test=100.0 + seed)
    text = assert_report_ok(exp)
    assert "Arms by `strategy` (the grid field with two values)." in text
    assert "Final selecting-test means (the runs predate confirmations): no difference shown" \
        in text and "p = 1;" in text
    assert "fewer than 5 runs with a final test in an arm" in text
    # five tests per arm, the second arm higher: the sentence names it first, its median first
    more = [(f"{s}-{seed}", {"strategy": s}, seed) for s in ("cmaes", "openai-es")
            for seed in range(5)]
    exp5 = make_experiment(tmp_path / "exp5", "neuromod-vs-cmaes",
                           {"strategy": ["cmaes", "openai-es"]}, list(range(5)), more)
    for trial, params, seed in more:
        solved_run(exp5, trial, seed, params, {"env": "LunarLander-v3", "islands": 1},
                   wall=10.0, evals=1000, solved=False,
                   test=(0.0 if params["strategy"] == "cmaes" else 100.0) + seed)
    assert "means (the runs predate confirmations): openai-es higher than cmaes (median 102 " \
        "vs 2;" in assert_report_ok(exp5)


def test_provenance_is_stated_and_a_moved_env_table_warned(tmp_path, generic_exp, capsys):
    from islands.experiment.provenance import record

    exp = tmp_path / "exp"
    shutil.copytree(generic_exp, exp)
    meta = json.loads((exp / names.EXPERIMENT_JSON).read_text())
    meta["provenance"] = record({"base": {"env": "LunarLander-v3"}})
    (exp / names.EXPERIMENT_JSON).write_text(json.dumps(meta))
    text = write_report(exp).read_text()
    p = meta["provenance"]
    assert f"commit `{p['commit']}`" in text and f"{p['cpus']} CPUs" in text
    assert f"ray {p['versions']['ray']}" in text and "changed since" not in text
    meta["provenance"]["env_table"]["LunarLander-v3"]["popsize"] = 7
    (exp / names.EXPERIMENT_JSON).write_text(json.dumps(meta))
    text = write_report(exp).read_text()
    popsize = env_defaults("LunarLander-v3")["popsize"]
    assert ("**Warning: the environment table changed since these runs** (a rerun would use "
            f"other defaults): LunarLander-v3 popsize: 7 then, {popsize} now.") in text
    from islands.experiment import cli

    assert cli.main(["report", str(exp)]) == 0
    err = capsys.readouterr().err
    assert ("warning: the environment table changed since these runs: LunarLander-v3 "
            f"popsize: 7 then, {popsize} now") in err
    # a setting every arm fixes never took the table's value: its change is no drift
    meta["spec"] = dict(meta.get("spec") or {}, arms={"a": {"popsize": 4}, "b": {"popsize": 8}})
    (exp / names.EXPERIMENT_JSON).write_text(json.dumps(meta))
    assert "changed since" not in write_report(exp).read_text()
    meta["spec"]["arms"]["b"] = {"islands": 1}
    (exp / names.EXPERIMENT_JSON).write_text(json.dumps(meta))
    assert "LunarLander-v3 popsize: 7 then" in write_report(exp).read_text()


@pytest.mark.parametrize("fixture,runs,images", [
    ("scaling_exp", 30, 5), ("worker_exp", 15, 4), ("neuromod_five", 10, 4)])
def test_notebook_executes(fixture, runs, images, request, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    exp = request.getfixturevalue(fixture)
    monkeypatch.setenv("EXPERIMENT_DIR", str(exp))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                     for o in outputs)
    assert f"experiment {exp}" in text and f"{runs} runs" in text
    # the kernel is this interpreter's environment (jupyter_client runs "python" of the
    # python3 kernel spec as sys.executable), so it imports this checkout's islands
    assert f"kernel prefix: {sys.prefix}" in text
    assert sum("image/png" in o.get("data", {}) for o in outputs) == images


def two_k_experiment(root: Path, evals_of, solved_k: int) -> Path:
    """k = 1 and 2 islands x 5 seeds, each trial alone with a core per island at 100
    evaluations/s per island; ``evals_of(k, seed)`` evaluations, solved only at
    ``solved_k``."""
    trials = [(f"k{k}s{s}", {"islands": k}, s) for k in (1, 2) for s in range(5)]
    exp = make_experiment(root, "worker-scaling", {"islands": [1, 2]}, list(range(5)), trials)
    for n, (trial, params, seed) in enumerate(trials):
        k = params["islands"]
        evals = evals_of(k, seed)
        wall = evals / 100.0 / k
        solved_run(exp, trial, seed, params, {"env": "CartPole-v1", "islands": k}, wall=wall,
                   evals=evals, solved=k == solved_k, test=500.0,
                   record={"started_at": 1e9 + 1000 * n, "ended_at": 1e9 + 1000 * n + wall,
                           "shared_cpus": False})
    return exp


def test_worker_scaling_bounds_the_factor_when_one_island_never_solves(tmp_path):
    # k = 1: every run unsolved at its 5,000-evaluation budget (E(1) not reached, so
    # E(1) > 5,000); k = 2 solves at 1,000-1,400 (KM median 1,200): A(2) > 5,000 / 1,200
    exp = two_k_experiment(tmp_path / "exp", lambda k, seed: 5000 if k == 1 else 1000 + 100 * seed,
                           solved_k=2)
    t = speedup_table(collect(exp)[0]).set_index("islands")
    assert math.isinf(t.loc[1, "evals_to_solve"]) and t.loc[2, "evals_to_solve"] == 1200
    assert t.loc[2, "algorithmic_bound"] == pytest.approx(5000 / 1200)
    text = assert_report_ok(exp)
    assert "k = 2: efficiency > 4.17 (A > 4.17 (E(k0) not reached within its budget), " \
           "R = 1)" in text and "meets the plan's > 0.7x linear" in text


def test_worker_scaling_bounds_the_factor_when_more_islands_never_solve(tmp_path):
    # k = 1 solves at 800-1,200 (median 1,000); k = 2 never solves within 4,000 evaluations:
    # E(2) > 4,000, so A(2) < 0.25, and with R = 1 measured, efficiency < 0.25 < 0.7
    exp = two_k_experiment(tmp_path / "exp", lambda k, seed: 800 + 100 * seed if k == 1 else 4000,
                           solved_k=1)
    t = speedup_table(collect(exp)[0]).set_index("islands")
    assert t.loc[2, "algorithmic_upper"] == pytest.approx(0.25)
    text = assert_report_ok(exp)
    assert "falls short of 0.7x linear: k = 2: efficiency < 0.25 (A < 0.25 (E(2) not " \
           "reached within its budget), R = 1)" in text
    assert "| 2 | 0/5 = 0% [0%, 43%] | not reached | < 0.25 |" in text


def test_mujoco_report_compares_training_episodes_with_ars(tmp_path):
    grid = {"env": ["Swimmer-v4", "Hopper-v4"]}
    trials = [(f"t{i}", {"env": env}, s) for i, (env, s) in enumerate(
        (e, s) for e in grid["env"] for s in (1000, 1001))]
    exp = make_experiment(tmp_path / "mj", "mujoco", grid, [1000, 1001], trials)
    # (episodes when solved, or None: unsolved; episodes spent)
    runs = {"t0": (300, 400), "t1": (500, 600), "t2": (5000, 5200), "t3": (None, 6000)}
    for trial, params, seed in trials:
        at, spent = runs[trial]
        rows = island_rows([{"dt": 10.0, "best": [1, 2, 3], "evals": spent // 3}])
        make_run(exp, trial, seed, params, {"islands": 1}, rows, solved=at is not None,
                 episodes_to_solve=at, total_episodes=spent, test_mean=1.0)
    # where they ran: t0 stopped on one machine at night and resumed on another the next
    # day; t1 in one go; t2 and t3 before runs recorded it
    from islands.output import segments

    def seg(host, boot, started, ended, hours):
        return {"host": host, "boot": boot, "cpus": 2, "memory_gb": 23.5, "commit": "abc",
                "started": started, "ended": ended, "hours": hours,
                "stop_reason": "interrupted", "episodes": 100}

    segments.append(exp / "runs" / "t0", seg("vm", "aaaa", "2026-11-28T22:00:00+00:00",
                                             "2026-11-29T01:00:00+00:00", 3.0))
    segments.append(exp / "runs" / "t0", seg("vm", "bbbb", "2026-11-30T09:00:00+00:00",
                                             "2026-11-30T10:30:00+00:00", 1.5))
    segments.append(exp / "runs" / "t1", seg("vm", "aaaa", "2026-11-28T10:00:00+00:00",
                                             "2026-11-28T11:00:00+00:00", 1.0))
    text = write_report(exp).read_text()
    assert "## MuJoCo locomotion against ARS" in text
    assert "## Where the runs ran" in text
    # t0: 2 segments, 2 machines (same host, other boot), 3 UTC days, 4.5 hours
    one_island = "1 island (ARS's shape)"
    assert (f"| Swimmer-v4 | {one_island} | 1000 | 2 | 2 | 3 | 4.5 | 2026-11-28 22:00 | "
            "2026-11-30 10:30 |") in text, text
    assert f"| Swimmer-v4 | {one_island} | 1001 | 1 | 1 | 1 | 1 |" in text
    assert (f"| Hopper-v4 | {one_island} | 1000 | no record | no record | no record | "
            "no record |") in text
    # Swimmer: both solved, KM median 300 (S = 1/2 there) against ARS's 427; Hopper: one
    # solved at 5,000, one censored at 6,000: median 5,000 against 1,973 (3x = 5,919)
    one = r"\| 1 island \(ARS's shape\) "
    assert re.search(r"\| Swimmer-v4 " + one + r"\| 2 \| 2 \| 300 \[[^]]*\] \| 427 \| 0\.70\d* \| "
                     r"2/2 \|", text)
    assert re.search(r"\| Hopper-v4 " + one + r"\| 2 \| 1 \| 5,000 \[[^]]*\] \| 1,973 \| "
                     r"2\.53\d* \| 1/2 \|", text)
    assert "at most ARS V2-t's on 1 of 2 rows" in text
    assert "## The default shape against ARS's" not in text  # one shape per task


def test_mujoco_report_sets_the_default_shape_against_ars_shape_on_shared_seeds(tmp_path):
    """Walker2d in two islands (seeds 1000-1002, as kept before the arms were named) and in
    ARS's shape (1000-1003): a row per shape, and 2 islands against 1 on the 3 shared
    seeds only (seed 1003 left out)."""
    grid = {"env": ["Walker2d-v4"], "arm": ["islands-2", "ars-shape"]}
    seeds = [1000, 1001, 1002, 1003]
    trials = [(f"t{i}", {"env": "Walker2d-v4", "arm": arm}, s) for i, (arm, s) in enumerate(
        [("islands-2", s) for s in seeds[:3]] + [("ars-shape", s) for s in seeds])]
    exp = make_experiment(tmp_path / "mj", "mujoco", grid, seeds, trials)
    # islands first on every shared seed (30K against 40K...); ARS's 1003 never solves
    at = {"t0": 30000, "t1": 32000, "t2": 34000, "t3": 40000, "t4": 42000, "t5": 44000,
          "t6": None}
    for trial, params, seed in trials:
        k = 2 if params["arm"] == "islands-2" else 1
        spent = at[trial] or 72000
        rows = island_rows([{"dt": 10.0, "best": [1, 2, 3], "evals": spent // 3}])
        make_run(exp, trial, seed, params, {"islands": k}, rows, solved=at[trial] is not None,
                 episodes_to_solve=at[trial], total_episodes=spent, test_mean=1.0)
    text = write_report(exp).read_text()
    assert re.search(r"\| Walker2d-v4 \| 2 islands \| 3 \| 3 \| 32,000 ", text), text
    assert re.search(r"\| Walker2d-v4 \| 1 island \(ARS's shape\) \| 4 \| 3 \| 42,000 ", text)
    assert "## The default shape against ARS's" in text
    # on seeds 1000-1002: 32,000 / 42,000 (ARS's 40,000, 42,000, 44,000); first on all 3
    assert re.search(r"2 islands used 0\.76\d*x the episodes of ARS's shape on the 3 seeds both "
                     r"ran \(1 other runs left out\)", text), text
    assert "first on 3 of 3 seeds, behind on 0" in text


# ---- confirmations, counts and censoring (issue 42) -------------------------------------
def confirmed_run(exp, trial, seed, params, cfg, *, wall, evals, test, confirmation,
                  target=200.0, **summary):
    """A run as summary.json now writes it: solved only when the selecting test and its
    confirmation on fresh episodes both reach the target."""
    ok = test >= target and confirmation >= target
    fields = lambda m: {"mean": m, "ci95": [m - 5, m + 5], "std": 20.0,  # noqa: E731
                        "episodes": 100, "seed": 7, "screened_out": False}
    return solved_run(exp, trial, seed, params, cfg, wall=wall, evals=evals, test=test,
                      solved=ok, confirmed=ok, confirmation_mean=confirmation,
                      selecting_test=fields(test), confirmation=fields(confirmation),
                      **summary)


def test_solved_means_confirmed_and_reports_give_the_confirmation_mean(tmp_path):
    trials = [(f"t{s}", {}, s) for s in range(3)]
    exp = make_experiment(tmp_path / "exp", "bipedal", {}, [0, 1, 2], trials,
                          base={"env": "LunarLander-v3"})
    cfg = {"env": "LunarLander-v3", "islands": 1}
    confirmed_run(exp, "t0", 0, {}, cfg, wall=40.0, evals=4000, test=230.0, confirmation=215.0)
    # its selecting test passed (the best of several noisy tests), its confirmation did not
    confirmed_run(exp, "t1", 1, {}, cfg, wall=50.0, evals=5000, test=210.0, confirmation=185.0)
    confirmed_run(exp, "t2", 2, {}, cfg, wall=50.0, evals=5000, test=150.0, confirmation=140.0)
    results, _ = collect(exp)
    by = results.set_index("trial")
    assert list(by["solved"]) == [True, False, False]
    assert list(by["confirmed"]) == [True, False, False]
    assert list(by["confirmation_mean"]) == [215.0, 185.0, 140.0]
    assert list(by["test_mean"]) == [230.0, 210.0, 150.0]  # the selecting tests, beside it
    assert by.loc["t0", "reason"] == "passed its test and its confirmation (target)"
    assert by.loc["t1", "status"] == "unsolved" and by.loc["t1", "reason"] == (
        "evaluation budget; its test reached the target, its confirmation did not (mean 185)")
    assert np.isnan(by.loc["t1", "evals_to_solve"]) and by.loc["t1", "evals_used"] == 5000
    cell = per_config(results).iloc[0]
    assert (cell.solved, cell.unconfirmed) == (1, 0)
    assert (cell.confirmation_mean, cell.test_mean) == (185.0, 210.0)
    text = assert_report_ok(exp)
    assert "| tested | median confirmation mean | median selecting test |" in text
    assert "| 3 | 185 | 210 |" in text and "unconfirmed" not in text
    from islands.experiment.collect import solved_of

    assert solved_of({"solved": True}) == (True, None)  # an older summary
    # --retest-episodes 0: solved on the selecting test, no confirmation ran
    assert solved_of({"solved": True, "confirmed": True, "confirmation": None}) == (True, None)
    assert solved_of({"solved": True, "confirmed": True, "confirmation": {"mean": 215.0}}) \
        == (True, True)
    assert "| all | 1/3 = 33% [6%, 79%] | not reached [4,000, ∞] | not reached | 3 | 185 | " \
        "210 | 215 | 5,000 |" in text  # the unsolved runs ran longer than the solve: censored
    assert "in 1/3 = 33% [6%, 79%] runs; median not reached [4,000, ∞] evaluations" in text


def test_a_wall_clock_median_is_withheld_where_the_evaluation_budget_censored_runs(tmp_path):
    """cmaes: one solve at 40 s; two runs ran out of evaluations after 25 and 30 s (fast
    evaluations), which say nothing about seconds to solve. sep-cmaes: solves at 20 and
    30 s, its unsolved run ran 60 s: every censoring after every solve, the median stands."""
    trials = [(f"t{i}", {"strategy": s}, seed) for i, (s, seed) in enumerate(
        (s, seed) for s in ("cmaes", "sep-cmaes") for seed in range(3))]
    exp = make_experiment(tmp_path / "exp", "generic", {"strategy": ["cmaes", "sep-cmaes"]},
                          [0, 1, 2], trials)
    cfg = {"env": "LunarLander-v3", "islands": 1}
    runs = {"t0": (40.0, True), "t1": (25.0, False), "t2": (30.0, False),
            "t3": (20.0, True), "t4": (30.0, True), "t5": (60.0, False)}
    for trial, params, seed in trials:
        wall, solved = runs[trial]
        solved_run(exp, trial, seed, params, cfg, wall=wall, evals=4000 if solved else 5000,
                   solved=solved, test=210.0 if solved else 100.0)
    t = per_config(collect(exp)[0], "strategy").set_index("strategy")
    assert t.loc["cmaes", "wall_censored_by_evals"] == 2 and np.isnan(
        t.loc["cmaes", "wall_to_solve"])
    assert t.loc["sep-cmaes", "wall_censored_by_evals"] == 0
    assert t.loc["sep-cmaes", "wall_to_solve"] == 30.0  # S = 2/3 after 20 s, 1/3 after 30 s
    text = assert_report_ok(exp)
    assert "| cmaes | 3 | 1/3 = 33% [6%, 79%] | not reached [4,000, ∞] | — (censored by " \
        "the evaluation budget) |" in text
    assert "| sep-cmaes | 3 | 2/3 = 67% [21%, 94%] | 4,000 [4,000, ∞] | 30 [20, ∞] |" in text
    assert ("- \"— (censored by the evaluation budget)\": no median of seconds where a run "
            "stopped by its evaluation budget used fewer seconds than a solved run of its cell "
            "took.") in text
    # a run stopped by the clock is censored on seconds where it stopped: the median stands
    clock = make_experiment(tmp_path / "clock", "generic", {}, [0, 1],
                            [("c0", {}, 0), ("c1", {}, 1)])
    solved_run(clock, "c0", 0, {}, cfg, wall=20.0, evals=4000, test=210.0)
    solved_run(clock, "c1", 1, {}, cfg, wall=15.0, evals=2000, solved=False,
               stop_reason="time budget")
    assert per_config(collect(clock)[0]).iloc[0].wall_censored_by_evals == 0


def test_mujoco_counts_a_solved_run_without_a_count_at_its_total_not_at_zero(tmp_path):
    trials = [(f"t{s}", {}, 1000 + s) for s in range(3)]
    exp = make_experiment(tmp_path / "mj", "mujoco", {}, [1000, 1001, 1002], trials,
                          base={"env": "Swimmer-v4"})
    # t0: solved by the final hall-of-fame test in an older summary (no count to solve)
    runs = {"t0": (True, None, 900), "t1": (True, 300, 400), "t2": (False, None, 1000)}
    for trial, params, seed in trials:
        solved, at, spent = runs[trial]
        rows = island_rows([{"dt": 10.0, "best": [1, 2, 3], "evals": spent // 3}])
        counts = {"episodes_to_solve": at, "evals_to_solve": at, "wall_to_solve": 10.0,
                  "env_steps_to_solve": 1000} if at else {}
        make_run(exp, trial, seed, params, {"islands": 1, "env": "Swimmer-v4"}, rows,
                 solved=solved, total_episodes=spent, test_mean=1.0,
                 stop_reason="evaluation budget", **counts)
    results = collect(exp)[0].set_index("trial")
    assert results.loc["t0", "solved_at_total"] and results.loc["t0", "episodes_used"] == 900
    text = write_report(exp).read_text()
    # events at 300 and 900 (not at 0 and 300), one censored at 1,000: S = 2/3, then 1/3
    assert re.search(r"\| Swimmer-v4 \| 1 island \(ARS's shape\) \| 3 \| 2 \| 900 \[300, ∞\] "
                     r"\| 427 \| 2\.1\d* \| 2/3 \|", text), text
    assert ("- 1 solved run(s) have no count to solve (solved by the final test of the hall of "
            "fame, in a summary written before such runs got one): each counts at its run's "
            "totals, an upper bound (t0).") in text


def test_kaplan_meier_leaves_runs_without_a_count_out_and_counts_them():
    from islands.experiment import stats

    with_lost = stats.kaplan_meier([1000, math.nan, 2000, 3000, math.nan], [1, 0, 1, 0, 1])
    without = stats.kaplan_meier([1000, 2000, 3000], [1, 1, 0])
    assert (with_lost.n, with_lost.no_count, with_lost.events) == (5, 2, 2)
    assert (with_lost.median, with_lost.low, with_lost.high) == (
        without.median, without.low, without.high) == (2000, 1000, math.inf)
    assert stats.kaplan_meier([math.nan], [0]).no_count == 1
    assert math.isnan(stats.kaplan_meier([math.nan], [0]).median)  # nothing to fit
    assert stats.logrank([1, 2, math.nan], [1, 1, 0], [3, 4], [1, 1]) == pytest.approx(
        stats.logrank([1, 2], [1, 1], [3, 4], [1, 1]))


def test_paired_arms_count_which_solved_first_with_censored_runs_decided_correctly():
    from scipy.stats import wilcoxon

    from islands.experiment import stats

    # per seed (a, solved, b, solved): a first; b first; a solved before b stopped; b
    # solved before a stopped; neither solved; a solved after b stopped (undecided)
    a = [(10, 1), (20, 1), (30, 1), (300, 0), (300, 0), (200, 1)]
    b = [(15, 1), (10, 1), (300, 0), (40, 1), (300, 0), (100, 0)]
    r = stats.paired(*zip(*a, strict=True), *zip(*b, strict=True))
    assert (r.pairs, r.a_first, r.b_first, r.undecided) == (6, 2, 2, 2)
    assert r.sign_p == 1.0
    assert r.wilcoxon_p == pytest.approx(wilcoxon([5, -10, 270, -260]).pvalue)
    assert not r.ranks_exact  # bounded differences of both signs: their order is unknown
    # five seeds a first, the censored one the largest difference: exact, p = 2 / 2**5
    a5, b5 = [10, 20, 30, 40, 50], [20, 25, 31, 48, 300]
    r5 = stats.paired(a5, [1] * 5, b5, [1, 1, 1, 1, 0])
    assert (r5.a_first, r5.b_first, r5.ranks_exact) == (5, 0, True)
    assert r5.sign_p == pytest.approx(2 / 32) and r5.wilcoxon_p == pytest.approx(2 / 32)


def test_the_migrant_screening_page_states_its_paired_analysis():
    """docs/results/migrant-screening.md compares the arms with the paired tests of
    benchmarks/paired_seeds.py on its JSON, whose figures it states."""
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        import paired_seeds
    finally:
        sys.path.remove(str(root / "benchmarks"))
    data = json.loads((root / "docs/results/migrant-screening.json").read_text())
    runs = paired_seeds.per_seed(data)
    assert runs["row"][1004] == (300.0, False) and runs["screen3"][1004] == (58.9, True)
    from islands.experiment import stats

    seeds = sorted(runs["row"])
    r = stats.paired(*[[runs[arm][s][i] for s in seeds] for arm, i in
                       (("row", 0), ("row", 1), ("screen3", 0), ("screen3", 1))])
    assert (r.a_first, r.b_first, r.undecided, r.ranks_exact) == (8, 7, 0, True)
    page = (root / "docs/results/migrant-screening.md").read_text()
    assert "python benchmarks/paired_seeds.py docs/results/migrant-screening.json" in page
    assert f"sign test p = {r.sign_p:.2g}" in page and f"p = {r.wilcoxon_p:.2f}" in page
    assert "log-rank" not in page.split("## Reading")[1].lower()  # unpaired: not used


def test_a_copy_kept_without_its_runs_renders_from_its_results(tmp_path, failure_exp):
    """docs/results keeps experiment.json and results.parquet, not runs/: ``report``
    renders from the stored table (written before the confirmation columns existed),
    never collects it again from the runs it does not have."""
    from islands.experiment import cli

    kept = tmp_path / "kept"
    kept.mkdir()
    meta = json.loads((failure_exp / names.EXPERIMENT_JSON).read_text())
    meta["cell_configs"] = {"strategy=cmaes": {"env": "LunarLander-v3", "popsize": 48},
                            "strategy=openai-es": {"env": "LunarLander-v3", "popsize": 24}}
    (kept / names.EXPERIMENT_JSON).write_text(json.dumps(meta))
    old = collect(failure_exp)[0].drop(columns=["confirmed", "confirmation_mean",
                                                 "episodes_used", "solved_at_total"])
    old.to_parquet(kept / names.RESULTS)
    before = (kept / names.RESULTS).read_bytes()
    assert cli.main(["report", str(kept)]) == 0
    assert (kept / names.RESULTS).read_bytes() == before and not (kept / names.RUNS_DIR).exists()
    text = (kept / names.REPORT_MD).read_text()
    assert "| cmaes | 5 | 4/5 = 80% [38%, 96%] | 2,000 [1,000, 4,000]; 1 no count | " in text
    assert "unconfirmed (t0, t1, t2, t3)." in text
    assert 'env: "LunarLander-v3"' in text and "| strategy=openai-es | 24 |" in text


# ---- islands against one population (issue 43) ------------------------------------------
def test_islands_vs_one_compares_each_shape_per_k_and_answers_per_task(tmp_path):
    arms = {"islands-2": {"islands": 2}, "isolated-2": {"islands": 2, "migrants": 0},
            "one-x2": {"islands": 1, "popsize_scale": 2}}
    grid = {"env": ["LunarLander-v3"], "arm": list(arms)}
    seeds = [4000 + s for s in range(6)]
    trials = [(f"t{i}", {"env": "LunarLander-v3", "arm": a}, s)
              for i, (a, s) in enumerate(itertools.product(arms, seeds))]
    exp = make_experiment(tmp_path / "ivo", "islands-vs-one", grid, seeds, trials)
    meta = json.loads((exp / names.EXPERIMENT_JSON).read_text())
    meta["spec"]["arms"] = arms
    (exp / names.EXPERIMENT_JSON).write_text(json.dumps(meta))
    # episodes to solve (None: unsolved) per arm, one per seed
    at = {"islands-2": [1000, 1100, 1200, 1300, 1400, 1500],
          "isolated-2": [2000, 2100, 2200, 2300, 2400, None],
          "one-x2": [3000, 3100, 3200, 3300, 3400, 3500]}
    for trial, params, seed in trials:
        n = at[params["arm"]][seed - 4000]
        rows = island_rows([{"dt": 10.0, "best": [1, 2, 3], "evals": (n or 6000) // 9}])
        make_run(exp, trial, seed, params, {**arms[params["arm"]], "env": "LunarLander-v3"},
                 rows, solved=n is not None, episodes_to_solve=n, total_episodes=n or 6000,
                 test_mean=210.0 if n else 150.0, confirmation_mean=205.0 if n else None,
                 confirmed=n is not None)
    text = write_report(exp).read_text()
    assert "## The archipelago against one population" in text and "### LunarLander-v3" in text
    # KM medians: the 3rd of 6 events (S falls to 1/2 there): 1,200, 2,200 and 3,200
    assert re.search(r"\| islands-2 \| 2 \| islands \| 48 \| 6/6 \| 1,200 \[", text), text
    # episodes per second: the median of each run's total episodes (3,000-3,500) over its
    # wall time (3 reports 10 s apart): (3,200 + 3,300) / 2 / 30 = 108.3
    assert re.search(r"\| one-x2 \| 2 \| one \| 96 \|[^\n]*\| 108\.3 \| 205 \|", text), text
    assert re.search(r"\| isolated-2 \| 2 \| isolated \| 48 \| 5/6 \| 2,200 \[", text)
    assert re.search(r"\| one-x2 \| 2 \| one \| 96 \| 6/6 \| 3,200 \[", text)
    assert ("**LunarLander-v3: islands help at k = 2.** k = 2: 2 islands used 0.375x the "
            "episodes of one population (fewer; intervals apart, log-rank p = ") in text
    assert "migration: 0.545x the isolated islands' episodes" in text
    # seed by seed the islands solved first on all six: sign test p = 2 / 2**6
    assert "first on 6 of 6 seeds, behind on 0, sign test p = 0.031)" in text
    assert "figures/km_episodes_LunarLander-v3.png" in text
    assert (exp / "figures" / "km_episodes_LunarLander-v3.png").stat().st_size > 0


def test_islands_vs_one_says_when_only_the_log_rank_test_separates_the_shapes():
    from islands.experiment import stats
    from islands.experiment.reports.islands_vs_one import task_answer

    def arm(shape, spent, solved):
        runs = pd.DataFrame({"episodes_used": spent, "solved": solved})
        return {"k": 4, "shape": shape, "_runs": runs,
                "_km": stats.kaplan_meier(runs["episodes_used"], runs["solved"])}

    islands = arm("islands", list(range(1000, 2000, 100)), [True] * 10)
    one = arm("one", [1300, 1500, 1700, 1900, 2100, 2300, 2500, 3000, 3000, 3000],
              [True] * 7 + [False] * 3)  # intervals [1,000, 1,700] and [1,300, not reached]
    assert task_answer("X", pd.DataFrame([islands, one])) == (
        "**X: islands ahead at k = 4 by the log-rank test; the medians' intervals overlap.** "
        "k = 4: 4 islands used 0.667x the episodes of one population (fewer; intervals "
        "overlap, log-rank p = 0.0016).")
    same = arm("one", list(range(1000, 2000, 100)), [True] * 10)
    assert "no difference shown" in task_answer("X", pd.DataFrame([islands, same]))
    # one island of the row's own size against the default's 2 islands: its own sentence
    # (KM medians 1,400 and 2,400: the 5th of 10 events)
    two = {**arm("islands", list(range(2000, 3000, 100)), [True] * 10), "k": 2}
    row = {**arm("one", list(range(1000, 2000, 100)), [True] * 10), "k": 1}
    text = task_answer("X", pd.DataFrame([islands, one, two, row]))
    assert text.endswith("overlap, log-rank p = 0.0016). At the row's own size: 1 island used "
                         "0.583x the episodes of 2 islands (fewer; intervals apart, log-rank "
                         "p = 3e-06)."), text
    assert "own size" not in task_answer("X", pd.DataFrame([islands, one, two]))


def test_islands_vs_one_compares_arms_of_unequal_seed_sets_on_the_seeds_both_ran():
    from islands.experiment import stats
    from islands.experiment.reports.islands_vs_one import compare, task_answer

    def arm(shape, seeds, spent):
        runs = pd.DataFrame({"seed": seeds, "episodes_used": spent,
                             "solved": [True] * len(seeds)})
        return {"k": 4, "shape": shape, "_runs": runs,
                "_km": stats.kaplan_meier(runs["episodes_used"], runs["solved"])}

    # the islands ran seeds 0-9; one population only 0-4, on which it was as fast as the
    # islands, and the islands' lucky seeds 5-9 would otherwise make them look 2x faster
    islands = arm("islands", list(range(10)), [1000, 1100, 1200, 1300, 1400] + [100] * 5)
    one = arm("one", list(range(5)), [1000, 1100, 1200, 1300, 1400])
    c = compare(pd.Series(islands), pd.Series(one))
    assert (c["seeds"], c["unshared"]) == (5, 5)
    assert c["ratio"] == 1.0 and c["p"] > 0.5  # the same five runs on both sides
    assert (c["paired"].pairs, c["paired"].a_first, c["paired"].b_first) == (5, 0, 0)
    all_runs = islands["_km"].median / one["_km"].median  # what pooling unpaired would say
    assert all_runs < 0.6
    text = task_answer("X", pd.DataFrame([islands, one]))
    assert "1x the episodes of one population on the 5 seeds both ran (5 other runs left " \
           "out)" in text and "no difference shown" in text, text
    # the log-rank test separates two arms, the seed-by-seed sign test does not: said so
    # (seed by seed the islands are first on 4 of 12, behind on 8: sign test p = 0.39)
    slow = arm("islands", list(range(12)), [200, 500, 700, 1400, 2600, 2800, 3000, 3300,
                                            3500, 3600, 3700, 3800])
    fast = arm("one", list(range(12)), [2050, 850, 950, 2250, 250, 450, 1450, 2650, 3350,
                                        2350, 1050, 1550])
    c = compare(pd.Series(slow), pd.Series(fast))
    assert c["p"] < 0.05 and c["paired"].sign_p > 0.05 and not c["apart"], c
    assert "no difference shown seed by seed at k = 4" in task_answer(
        "X", pd.DataFrame([slow, fast]))


def test_cluster_scaling_report_gives_speedup_efficiency_and_the_first_arm(tmp_path):
    """... and compares the first arm with the fastest synchronous arm on the seeds both
    ran: at 64 cores a second one (sync-lr2, a step-size choice, 2 seeds only) beats sync."""
    arms = {"islands": {"islands": 2}, "sync": {"islands": 1, "eval_workers": 4},
            "sync-lr2": {"islands": 1, "eval_workers": 4, "strategy_options": {"lr": 2}}}
    root = Path(__file__).resolve().parents[1] / "cluster" / "virtual"
    clusters = {16: str(root / "c16.yaml"), 64: str(root / "c64.yaml")}
    grid = {"cluster": list(clusters.values()), "arm": list(arms)}
    seeds = [7000, 7001, 7002]
    trials = [(f"t{c}-{a}-{s}", {"cluster": path, "arm": a}, s)
              for c, path in clusters.items() for a in arms for s in seeds
              if a != "sync-lr2" or (c == 64 and s < 7002)]
    exp = make_experiment(tmp_path / "cs", "cluster-scaling", grid, seeds, trials,
                          base={"env": "CartPole-v1", "runtime": "virtual"})
    meta = json.loads((exp / names.EXPERIMENT_JSON).read_text())
    meta["spec"]["arms"] = arms
    (exp / names.EXPERIMENT_JSON).write_text(json.dumps(meta))
    # virtual seconds to solve: islands 100 s at 16 cores, 30 s at 64 (speedup 3.33,
    # efficiency 0.83); the synchronous arm 200 s and 100 s (efficiency 0.5)
    at = {("islands", 16): 100.0, ("islands", 64): 30.0, ("sync", 16): 200.0,
          ("sync", 64): 100.0, ("sync-lr2", 64): 60.0}
    for trial, params, seed in trials:
        cores = next(c for c, p in clusters.items() if p == params["cluster"])
        wall = at[params["arm"], cores] + (seed - 7001)  # medians: the middle seed's
        solved_run(exp, trial, seed, params,
                   {"env": "CartPole-v1", "runtime": "virtual", **arms[params["arm"]]},
                   wall=wall, evals=1000, test=500.0, runtime="virtual",
                   cluster={"cpus": cores, "described": f"x worker: {cores} CPUs",
                            "straggler": {"p": 0.0}, "failures_per_hour": 0.0})
    text = write_report(exp).read_text()
    assert "## Time to solve on virtual clusters" in text and "### CartPole-v1" in text
    assert re.search(r"\| homogeneous \| 64 \| islands \| 3/3 \| 30 \[[^|]*\| 0\.533\d* \|"
                     r"[^|]*\| 3\.33\d* \| 0\.833\d* \|", text), text
    assert re.search(r"\| homogeneous \| 64 \| sync \| 3/3 \| 100 \[[^|]*\|[^|]*\|[^|]*\| "
                     r"2 \| 0\.5 \|", text), text
    assert ("**CartPole-v1: efficiency >= 0.7 at 64 cores for islands.** 16 cores "
            "(homogeneous): islands first, median 100 s, 2x faster than sync") in text
    assert re.search(r"64 cores \(homogeneous\): islands first, median 30 s, 2\.0\d*x faster "
                     r"than sync-lr2 on the 2 seeds both ran \(intervals (apart|overlap); "
                     r"log-rank p = [0-9.e-]+; first on 2 of 2 seeds, sign test p = 0\.5\)",
                     text), text
    # sync-lr2 never ran at 16 cores: no speedup or efficiency of its own to claim
    assert re.search(r"\| homogeneous \| 64 \| sync-lr2 \| 2/2 \|[^\n]*\| — \| — \| — \|\n",
                     text), text
    from islands.experiment.cells import ran
    from islands.experiment.reports.cluster_scaling import baseline_arms, cells, task_answer
    from islands.experiment.store import load

    runs = ran(load(exp)[1])
    small = cells(runs[runs.cluster_cpus == 16])  # one size: no efficiency to claim
    assert task_answer("X", small, baseline_arms(arms)).startswith(
        "**X: one cluster size so far (16 cores): no scaling yet.**")


def test_virtual_time_report_pairs_each_configuration_real_against_virtual(tmp_path):
    grid = {"islands": [2, 4], "arm": ["real", "virtual"]}
    trials = [(f"t{k}-{arm}-{s}", {"islands": k, "arm": arm}, s)
              for k in (2, 4) for arm in ("real", "virtual") for s in (6000, 6001, 6002)]
    exp = make_experiment(tmp_path / "vt", "virtual-time", grid, [6000, 6001, 6002], trials,
                          base={"env": "CartPole-v1"})
    cluster = str(Path(__file__).resolve().parents[1] / "cluster" / "laptop.yaml")
    # islands=2: virtual 5 s slower on each seed (ratio 1.045); islands=4: 50 s (1.45)
    for trial, params, seed in trials:
        k, arm = params["islands"], params["arm"]
        wall = 100.0 + 10 * (seed - 6000) + (0 if arm == "real" else 5 if k == 2 else 50)
        cfg = {"env": "CartPole-v1", "islands": k} | (
            {"runtime": "virtual", "cluster": cluster} if arm == "virtual" else {})
        solved_run(exp, trial, seed, params, cfg, wall=wall, evals=1000, test=500.0,
                   runtime="virtual" if arm == "virtual" else "ray",
                   steps_per_s=1300.0 if arm == "virtual" else 1000.0)
    text = write_report(exp).read_text()
    # the clock alone: the virtual side steps 1.3x as fast
    assert re.search(r"\| islands=2 \| 3 \| 1,?000 \| 1,?300 \| 1\.3 \|", text), text
    assert "## Virtual time against real time" in text
    assert re.search(r"\| islands=2 \| 3 \| 3 / 3 \| 110 \[[^]]*\] \| 115 \[[^]]*\] \| "
                     r"1\.04\d* \| True \|", text), text
    assert re.search(r"\| islands=4 \| 3 \| 3 / 3 \| 110 \[[^]]*\] \| 160 \[[^]]*\] \| "
                     r"1\.45\d* \| False \|", text), text
    assert "within 15% of the real one in 1 of 2 configurations" in text
    # the seconds' distributions beside the medians: 5 s apart on 100-120 s shows nothing
    row = next(ln for ln in text.splitlines() if ln.startswith("| islands=2 | 3 | 3 / 3"))
    assert "| log-rank p (s) |" in text and float(row.split("|")[8]) > 0.05, row
