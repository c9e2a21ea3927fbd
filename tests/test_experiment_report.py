"""Results collection and reports of an experiment directory (fast, no Ray).

The directories are built the way the launcher and the runner write them: ``config.yaml``
from a resolved ``islands.config.Config`` and ``metrics.parquet`` / ``summary.json`` through
``islands.rundir.RunDir``, ``trial.json`` and ``experiment.json`` as the runner writes them;
only the numbers in them are made up, so that the answers are known.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import mannwhitneyu

from islands.config import from_dict, resolve
from islands.envdefaults import env_defaults
from islands.experiment import kinds
from islands.experiment.report import (
    REPORTS,
    scaling_answer,
    speedup_sentence,
    write_report,
)
from islands.experiment.results import (
    CURVE_COLUMNS,
    RUN_COLUMNS,
    collect,
    load,
    speedup_table,
    write_results,
)
from islands.rundir import METRIC_COLUMNS, RunDir

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
             **summary) -> Path:
    """runs/<trial>/ as the launcher (config.yaml, metrics.parquet, summary.json) and the
    runner (trial.json) leave it; ``summary`` overrides the summary's numbers."""
    run = exp / kinds.RUNS_DIR / trial
    config = resolve(from_dict({**cfg, **params, "seed": seed, "out": str(run)}),
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
        "stop_reason": "target" if solved else "max_evals", "wall_s": last["wall_s"],
        "startup_s": 2.0, "total_evals": last["total_evals"],
        "total_env_steps": last["total_env_steps"], "total_episodes": last["total_episodes"],
        "evals_to_solve": None, "episodes_to_solve": None, "env_steps_to_solve": None,
        "wall_to_solve": None, "num_params": 58, "backend": "envpool",
    } | summary
    out["strategies"] = out["strategies"][: config.islands]
    rd.write_summary(out)
    (run / kinds.TRIAL_JSON).write_text(json.dumps(
        {"trial": trial, "label": f"{trial} seed={seed}", "seed": seed, "params": params}))
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
    (exp / kinds.EXPERIMENT_JSON).write_text(json.dumps(meta, indent=2))
    return exp


def solved_run(exp, trial, seed, params, cfg, *, wall, evals, steps_per_s=1000.0, test=None,
               solved=True, **summary):
    """A one-island run of 5 reports ending at ``wall`` s and ``evals`` evaluations."""
    dt = wall / 5
    rows = island_rows([{"dt": dt, "best": [1, 2, 3, 4, 5], "evals": evals // 5,
                         "steps": int(steps_per_s * dt)}])
    to_solve = {"evals_to_solve": evals, "wall_to_solve": wall, "env_steps_to_solve": 1,
                "episodes_to_solve": 1} if solved else {}
    return make_run(exp, trial, seed, params, cfg, rows, solved=solved, test_mean=test,
                    **to_solve, **summary)


def figure_links(report: Path) -> list[str]:
    return re.findall(r"\]\((figures/[^)]+\.png)\)", report.read_text())


def assert_report_ok(exp: Path) -> str:
    path = write_report(exp)
    text = path.read_text()
    links = figure_links(path)
    assert links and all((exp / link).is_file() for link in links)
    assert "## Results per configuration" in text
    assert "| runs | solved/runs | success rate |" in text
    assert "python -m islands.experiment run experiments/" in text and "--scale laptop" in text
    return text


# ---- tests -----------------------------------------------------------------------------
def test_report_kinds_match():
    assert tuple(REPORTS) == kinds.REPORT_KINDS


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
    # t3 failed: its directory has no summary.json; t2 has not run
    (exp / kinds.RUNS_DIR / "t3").mkdir()
    (exp / kinds.RUNS_DIR / "t3" / kinds.TRIAL_JSON).write_text('{"trial": "t3"}')
    return exp


def test_results_columns_and_values(generic_exp):
    results, curves = collect(generic_exp)
    fixed = [c for c in RUN_COLUMNS if c != "hidden"]
    assert list(results.columns) == ["trial", "label", "seed", "config", "hidden",
                                     "migration_interval", *fixed]
    assert list(curves.columns) == list(CURVE_COLUMNS)
    t0, t1 = results.set_index("trial").loc["t0"], results.set_index("trial").loc["t1"]
    assert list(results["trial"]) == ["t0", "t1"]  # t2 / t3 have no summary.json
    assert (t0.hidden, t1.hidden) == ("32-16", "linear")
    assert t0.config == "hidden=32-16, migration_interval=5"
    assert (t0.strategy, t1.strategy) == ("cmaes,openai-es", "cmaes")
    popsize = env_defaults("LunarLander-v3")["popsize"]  # the trial leaves it to the table
    assert (t0.policy, t0.islands, t0.popsize, t0.seed, t0.num_params) == ("mlp", 2, popsize,
                                                                            0, 2788)
    assert t0.s_per_gen == pytest.approx((4.0 / 4 + 3.4 / 2) / 2)  # mean over islands
    assert t0.peak_mem_mb == 250.0 and np.isnan(t1.peak_mem_mb)
    assert t0.solved and t0.evals_to_solve == 50 and t0.wall_to_solve == 3.9
    assert t0.test_mean == 210.5 and t0.target == 200.0
    assert t0.total_env_steps == 4000 + 2000 and t0.wall_s == 4.0
    assert t0.env_steps_per_s == pytest.approx(6000 / 4.0)
    # unsolved: no time to solve even if the summary had a number; no test: NaN
    assert not t1.solved and np.isnan(t1.evals_to_solve) and np.isnan(t1.test_mean)
    c0 = curves[curves["trial"] == "t0"]
    assert list(c0["wall_s"]) == [1.0, 1.7, 2.0, 3.0, 3.4, 4.0]
    assert list(c0["best_fitness"]) == [1, 10, 10, 10, 12, 20]  # archipelago running max
    assert list(c0["total_evals"]) == [10, 20, 30, 40, 50, 60]


def test_load_writes_then_reads_parquet(generic_exp):
    meta, results, curves = load(generic_exp)
    assert (generic_exp / kinds.RESULTS).is_file() and (generic_exp / kinds.CURVES).is_file()
    assert meta["spec"]["report"] == "generic" and len(meta["trials"]) == 4
    _, again, curves_again = load(generic_exp)  # from the files this time
    pd.testing.assert_frame_equal(again, results, check_dtype=False)
    pd.testing.assert_frame_equal(curves_again, curves, check_dtype=False)


def test_generic_report_states_missing_trials(generic_exp):
    text = assert_report_ok(generic_exp)
    assert "**Runs:** 2 finished of 4 trials; 2 missing" in text and "t2, t3" in text
    assert "| 32-16 | 5 | 1 | 1/1 | 1 | 50 | 3.9 | 210.5 |" in text


@pytest.fixture(scope="module")
def scaling_exp(tmp_path_factory) -> Path:
    """cmaes solves at 100 and 1,000 parameters (>= half its seeds), not at 10,000;
    sep-cmaes matches it at 1,000 with fewer evaluations and solves at 10,000."""
    sizes = {(4,): 100, (16,): 1000, (64,): 10000}
    outcome = {  # (strategy, size): [(solved, evals) per seed]
        ("cmaes", 100): [(1, 1000), (1, 1200)], ("cmaes", 1000): [(1, 5000), (0, 0)],
        ("cmaes", 10000): [(0, 0), (0, 0)], ("sep-cmaes", 100): [(1, 1500), (1, 1500)],
        ("sep-cmaes", 1000): [(1, 4000), (0, 0)], ("sep-cmaes", 10000): [(1, 9000), (1, 9000)]}
    trials = [(f"t{n}", {"hidden": list(h), "strategy": s}, seed)
              for n, ((h, s), seed) in enumerate(
                  ((h, s), seed) for h in sizes for s in ("cmaes", "sep-cmaes")
                  for seed in (0, 1))]
    exp = make_experiment(tmp_path_factory.mktemp("scaling") / "exp", "network-scaling",
                          {"hidden": [[4], [16], [64]], "strategy": ["cmaes", "sep-cmaes"]},
                          [0, 1], trials)
    for trial, params, seed in trials:
        size = sizes[tuple(params["hidden"])]
        solved, evals = outcome[(params["strategy"], size)][seed]
        solved_run(exp, trial, seed, params, {"env": "LunarLander-v3", "islands": 1},
                   wall=10.0 * (1 + size / 1000), evals=evals or 8000, solved=bool(solved),
                   test=250.0 if solved else 90.0, num_params=size)
    return exp


def test_network_scaling_n_max_and_crossover(scaling_exp):
    results, _ = collect(scaling_exp)
    ans = scaling_answer(results)
    assert ans["n_max"] == 1000 and ans["n_max_hidden"] == "16"
    c = ans["crossover"]  # equal success (50%) at 1,000, fewer evaluations
    assert (c["num_params"], c["strategy"]) == (1000, "sep-cmaes")
    assert c["why"] == "equal success, median 4,000 vs 5,000 evals"
    later = scaling_answer(results[~((results["num_params"] == 1000)
                                     & (results["strategy"] == "sep-cmaes"))])
    assert later["crossover"]["num_params"] == 10000  # higher success at 10,000
    assert "success 100% vs 0%" in later["crossover"]["why"]
    none = scaling_answer(results[results["strategy"] == "sep-cmaes"])
    assert none["n_max"] is None and none["crossover"] is None
    text = assert_report_ok(scaling_exp)
    assert "**N_max** (largest network cmaes solves in >= half its seeds): 1,000." in text
    assert "up to N_max = 1,000 parameters (hidden 16); sep-cmaes overtakes it from 1,000" in text


@pytest.fixture(scope="module")
def worker_exp(tmp_path_factory) -> Path:
    """Time to solve 100 / 55 / 30 / 25 s at 1 / 2 / 4 / 8 islands (one k=8 run unsolved);
    throughput 1000 / 1900 / 3600 / 6000 env steps/s."""
    ks = {1: (100.0, 1000.0), 2: (55.0, 1900.0), 4: (30.0, 3600.0), 8: (25.0, 6000.0)}
    trials = [(f"k{k}s{s}", {"islands": k}, s) for k in ks for s in (0, 1)]
    exp = make_experiment(tmp_path_factory.mktemp("workers") / "exp", "worker-scaling",
                          {"islands": list(ks)}, [0, 1], trials)
    for trial, params, seed in trials:
        wall, thr = ks[params["islands"]]
        unsolved = params["islands"] == 8 and seed == 1
        solved_run(exp, trial, seed, params, {"env": "CartPole-v1"},
                   wall=60.0 if unsolved else wall, evals=1000, steps_per_s=thr,
                   solved=not unsolved, test=500.0)
    return exp


def test_worker_scaling_speedup_and_efficiency(worker_exp):
    results, _ = collect(worker_exp)
    t = speedup_table(results).set_index("islands")
    assert list(t.index) == [1, 2, 4, 8]
    assert t.loc[8, "wall_to_solve"] == 25.0  # the unsolved k=8 run is left out of T(8)
    np.testing.assert_allclose(t["speedup"], [1, 100 / 55, 100 / 30, 4.0])
    np.testing.assert_allclose(t["efficiency"], [1, 100 / 110, 100 / 120, 0.5])
    np.testing.assert_allclose(t["throughput_ratio"], [1, 1.9, 3.6, 6.0], rtol=1e-3)
    np.testing.assert_allclose(t["throughput_efficiency"], [1, 0.95, 0.9, 0.75], rtol=1e-3)
    sentence = speedup_sentence(speedup_table(results))
    assert "meets the plan's > 0.7x linear at k = 2, 4 and falls short at k = 8" in sentence
    assert "S(8) = 4.00, efficiency 0.50" in sentence
    assert "throughput at k = 8 is 6.00x k = 1 (efficiency 0.75)" in sentence
    text = assert_report_ok(worker_exp)
    assert sentence in text


def neuromod_exp(root: Path, seeds: list[int], policies=("neuromod", "mlp")) -> Path:
    scores = {"neuromod": [210.0, 220.0, 230.0, None], "mlp": [100.0, 110.0, 120.0, 130.0]}
    trials = [(f"{p}-{s}", {"policy": p}, s) for p in policies for s in seeds]
    exp = make_experiment(root, "neuromod-vs-cmaes", {"policy": ["neuromod", "mlp"]}, seeds,
                          trials, base={"hidden": [16]})
    for trial, params, seed in trials:
        # the untested neuromod run's best training fitness (240) stands in for it
        solved_run(exp, trial, seed, params, {"env": "LunarLander-v3", "hidden": [16]},
                   wall=30.0, evals=100_000, solved=False, test=scores[params["policy"]][seed],
                   best_fitness=240.0 if params["policy"] == "neuromod" else 140.0)
    return exp


@pytest.fixture(scope="module")
def neuromod_four(tmp_path_factory) -> Path:
    return neuromod_exp(tmp_path_factory.mktemp("neuromod") / "exp", [0, 1, 2, 3])


def test_neuromod_vs_cmaes_mann_whitney(neuromod_four):
    text = assert_report_ok(neuromod_four)
    expected = mannwhitneyu([210, 220, 230, 240], [100, 110, 120, 130], alternative="two-sided")
    assert f"Mann-Whitney U = {expected.statistic:g}, p = {expected.pvalue:.3g} < 0.05" in text
    assert "neuromod is better than mlp at the same budget (median 225 vs 115" in text
    assert "1 run(s) have no test mean: their best training fitness stands in" in text


def test_neuromod_needs_two_seeds_and_both_arms(tmp_path):
    one = assert_report_ok(neuromod_exp(tmp_path / "one", [0]))
    assert "No test: needs >= 2 seeds per arm (neuromod: 1, mlp: 1)." in one
    half = assert_report_ok(neuromod_exp(tmp_path / "half", [0, 1], policies=("mlp",)))
    assert "No test: arm neuromod has no finished runs" in half
    assert "**Runs:** 2 finished of 2 trials." in half


def test_bipedal_and_pong_answers(tmp_path):
    exp = make_experiment(tmp_path / "bip", "bipedal", {}, [0, 1],
                          [("t0", {}, 0), ("t1", {}, 1)], base={"env": "BipedalWalker-v3"})
    cfg = {"env": "BipedalWalker-v3", "islands": 1}
    solved_run(exp, "t0", 0, {}, cfg, wall=1200.0, evals=400_000, test=310.0)
    solved_run(exp, "t1", 1, {}, cfg, wall=3000.0, evals=500_000, test=250.0, solved=False)
    text = assert_report_ok(exp)
    assert ("BipedalWalker-v3: reached 300 in 1 of 2 seeds, median 400,000 evaluations / "
            "20.0 min.") in text
    pong = make_experiment(tmp_path / "pong", "pong", {}, [0, 1],
                           [("t0", {}, 0), ("t1", {}, 1)])
    for seed, test in ((0, -15.0), (1, -12.5)):
        solved_run(pong, f"t{seed}", seed, {}, {"env": "Pong-v5", "islands": 1}, wall=600.0,
                   evals=10_000, test=test, solved=False)
    assert "Pong-v5: not reached (target 0); best test mean -12.5." in assert_report_ok(pong)


@pytest.mark.parametrize("kind", kinds.REPORT_KINDS)
def test_report_of_an_experiment_without_runs(tmp_path, kind):
    exp = make_experiment(tmp_path / "exp", kind, {"islands": [1, 2]}, [0],
                          [("a", {"islands": 1}, 0), ("b", {"islands": 2}, 0)])
    results, curves = write_results(exp)
    assert results.empty and curves.empty
    text = write_report(exp).read_text()
    assert "0 finished of 2 trials; 2 missing (failed or not run yet: a, b)" in text
    assert "No finished runs yet." in text
    assert all((exp / link).is_file() for link in figure_links(exp / kinds.REPORT_MD))


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
    assert "No significant difference between" in text and "p = 1 >= 0.05" in text


@pytest.mark.parametrize("fixture,runs,images", [
    ("scaling_exp", 12, 4), ("worker_exp", 8, 3), ("neuromod_four", 8, 3)])
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


def test_arms_that_all_reach_the_target_compare_on_evaluations_to_solve():
    import pandas as pd

    from islands.experiment.report import head_to_head, head_to_head_sentence

    res = pd.DataFrame({"policy": ["mlp"] * 5 + ["neuromod"] * 5,
                        "evals_to_solve": [300.0, 320, 350, 380, 400,
                                           3000, 3050, 3100, 3150, 3200],
                        "test_mean": [490.0, 500, 480, 495, 500] * 2,
                        "best_fitness": [500.0] * 10, "solved": [True] * 10,
                        "total_evals": [1000] * 10, "stop_reason": ["target"] * 10})
    h = head_to_head(res, "policy", ["neuromod", "mlp"])
    assert h["metric"] == "evaluations to solve" and not h["higher_is_better"]
    text = head_to_head_sentence(h, ["neuromod", "mlp"])
    assert text.startswith("mlp is better than neuromod on evaluations to solve, as every "
                           "run reached the target (median 350 vs 3,100; Mann-Whitney U = 25")
