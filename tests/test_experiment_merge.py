"""``islands.experiment merge``: directories of one question, pooled into one report (no Ray).

The runs are real: the kept copy of the network-scaling laptop study (45 runs, seeds
1000-1004) is split by seed into two experiment directories, as a study run in two parts
would leave them, and merged back.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from islands.experiment import names
from islands.experiment.cli import main

STUDY = Path(__file__).resolve().parents[1] / "docs" / "results" / "network-scaling-laptop"


def _part(tmp: Path, name: str, seeds: set[int], meta: dict, results: pd.DataFrame) -> Path:
    """A kept experiment directory holding ``seeds`` of the study."""
    d = tmp / name
    d.mkdir()
    part = {**meta, "spec": {**meta["spec"], "seeds": sorted(seeds)},
            "trials": [t for t in meta["trials"] if t["seed"] in seeds],
            "run_flags": ["--seeds", f"{min(seeds)}-{max(seeds)}"]}
    (d / names.EXPERIMENT_JSON).write_text(json.dumps(part))
    results[results["seed"].isin(seeds)].to_parquet(d / names.RESULTS, index=False)
    return d


@pytest.fixture
def halves(tmp_path):
    meta = json.loads((STUDY / names.EXPERIMENT_JSON).read_text())
    results = pd.read_parquet(STUDY / names.RESULTS)
    a = _part(tmp_path, "first", {1000, 1001, 1002}, meta, results)
    b = _part(tmp_path, "later", {1003, 1004}, meta, results)
    return tmp_path, a, b, meta, results


def _tables(report: str) -> list[str]:
    """The report's table rows below its provenance (the statistics, not the dates)."""
    body = report.split("## Provenance", 1)[1].split("\n## ", 1)[1]
    return [line for line in body.splitlines() if line.startswith("|")]


def test_two_halves_merged_report_as_the_whole_study(halves, capsys):
    tmp, a, b, meta, results = halves
    whole = tmp / "whole"
    shutil.copytree(STUDY, whole)
    assert main(["report", str(whole)]) == 0
    assert main(["merge", str(a), str(b), "--out", str(tmp / "pooled")]) == 0
    assert "45 runs; report:" in capsys.readouterr().out
    pooled = (tmp / "pooled" / names.REPORT_MD).read_text()
    # every Kaplan-Meier median, interval, rate and test: the same as from the whole study
    assert _tables(pooled) == _tables((whole / names.REPORT_MD).read_text())
    assert "45 of 45 trials ran" in pooled and "merged from d1 = " in pooled
    assert (f"run experiments/network-scaling.yaml --scale laptop --seeds 1003-1004 --out {b}"
            in pooled and f"merge {a} {b} --out {tmp / 'pooled'}" in pooled)
    merged = json.loads((tmp / "pooled" / names.EXPERIMENT_JSON).read_text())
    assert merged["spec"]["seeds"] == meta["spec"]["seeds"]
    assert [s["dir"] for s in merged["sources"]] == [str(a), str(b)]
    rows = pd.read_parquet(tmp / "pooled" / names.RESULTS)
    assert len(rows) == len(results) and rows["trial"].str.match(r"d[12]-t\d+").all()


def test_a_seed_in_two_directories_is_refused(halves, capsys):
    tmp, a, _, meta, results = halves
    again = _part(tmp, "again", {1002, 1003}, meta, results)
    assert main(["merge", str(a), str(again), "--out", str(tmp / "pooled")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("islands.experiment: error: seed 1002 of ") and "\n" not in err
    assert "counted twice" in err and not (tmp / "pooled").exists()


def test_a_rerun_replaces_the_cells_a_study_lost_or_never_ran(halves, capsys):
    # the first part lost seed 1002's runs of one configuration (a crash before the first
    # report, or never run); a rerun of them merges in their place, nothing counted twice
    tmp, a, b, meta, results = halves
    first = pd.read_parquet(a / names.RESULTS)
    config = sorted(first["config"].unique())[0]
    hit = (first["config"] == config) & (first["seed"] == 1002)
    lost = first.copy()
    lost.loc[hit, ["total_evals", "total_episodes", "wall_s", "evals_to_solve",
                   "episodes_to_solve", "wall_to_solve"]] = float("nan")
    lost.loc[hit, ["status", "solved"]] = ["crashed", False]
    lost.loc[(first["config"] == config) & (first["seed"] == 1001), "status"] = "missing"
    lost.to_parquet(a / names.RESULTS, index=False)
    rerun = tmp / "rerun"
    rerun.mkdir()
    (rerun / names.EXPERIMENT_JSON).write_text((a / names.EXPERIMENT_JSON).read_text())
    again = results[(results["config"] == config) & results["seed"].isin([1001, 1002])]
    again.to_parquet(rerun / names.RESULTS, index=False)
    assert main(["merge", str(a), str(b), str(rerun), "--out", str(tmp / "pooled")]) == 0
    rows = pd.read_parquet(tmp / "pooled" / names.RESULTS)
    assert len(rows) == len(results)  # the two placeholders gave way to the two reruns
    mine = rows[(rows["config"] == config) & rows["seed"].isin([1001, 1002])]
    assert mine["trial"].str.startswith("d3-").all() and (mine["status"] != "missing").all()
    # ... and without the rerun the placeholders stay, one row per cell and seed
    assert main(["merge", str(a), str(b), "--out", str(tmp / "kept")]) == 0
    assert len(pd.read_parquet(tmp / "kept" / names.RESULTS)) == len(results)


def test_other_settings_or_a_used_directory_are_refused(halves, capsys):
    tmp, a, b, _, _ = halves
    other = json.loads((b / names.EXPERIMENT_JSON).read_text())
    other["spec"]["budget"] = {**other["spec"].get("budget", {}), "time_budget": 1}
    (b / names.EXPERIMENT_JSON).write_text(json.dumps(other))
    assert main(["merge", str(a), str(b), "--out", str(tmp / "p2")]) == 2
    err = capsys.readouterr().err
    assert f"{b} differs from {a} in 'budget'" in err and not (tmp / "p2").exists()
    (tmp / "used").mkdir()
    (tmp / "used" / "x").write_text("")
    assert main(["merge", str(a), str(a.parent / "nope"), "--out", str(tmp / "p3")]) == 2
    assert "is not an experiment directory" in capsys.readouterr().err
    assert main(["merge", str(a), str(b), "--out", str(tmp / "used")]) == 2
    assert "already exists and is not empty" in capsys.readouterr().err
    assert main(["merge", str(a), str(a), "--out", str(tmp / "p4")]) == 2
    assert "at least two different experiment directories" in capsys.readouterr().err


def test_run_takes_other_seeds_and_a_narrowed_grid(tmp_path):
    from islands.experiment.cli import prepare

    yaml_file = Path(__file__).resolve().parents[1] / "experiments" / "islands-vs-one.yaml"
    d = prepare(str(yaml_file), "laptop", str(tmp_path / "more"), "4010-4012",
                ["arm=islands-4,one-x4", "env=Hopper-v4"])
    meta = json.loads((d / names.EXPERIMENT_JSON).read_text())
    assert meta["spec"]["seeds"] == [4010, 4011, 4012]
    assert meta["spec"]["grid"] == {"env": ["Hopper-v4"], "arm": ["islands-4", "one-x4"]}
    assert [t["label"] for t in meta["trials"][:2]] == [
        "env=Hopper-v4 arm=islands-4 seed=4010", "env=Hopper-v4 arm=islands-4 seed=4011"]
    assert len(meta["trials"]) == 6 and meta["spec"]["arms"]["one-x4"]["popsize_scale"] == 4
    assert meta["run_flags"] == ["--seeds", "4010-4012", "--only", "arm=islands-4,one-x4",
                                 "--only", "env=Hopper-v4"]  # the report's reproduce line


def test_run_takes_a_shorter_budget_and_records_it(tmp_path):
    """``--budget time_budget=900``: the cap of choosing runs, over the file's, in every
    trial's launcher fields and in the report's reproduce line."""
    from islands.experiment.cli import prepare
    from islands.experiment.spec import ExperimentSpec, trials

    yaml_file = Path(__file__).resolve().parents[1] / "experiments" / "cluster-scaling.yaml"
    d = prepare(str(yaml_file), "cluster", str(tmp_path / "choose"), "7100-7101",
                ["env=Hopper-v4", "cluster=cluster/virtual/c256-hetero.yaml",
                 "arm=sync,sync-lr2"], ["time_budget=900", "max_episodes=500000"])
    meta = json.loads((d / names.EXPERIMENT_JSON).read_text())
    assert meta["spec"]["budget"] == {"max_episodes": 500000, "time_budget": 900.0}
    spec = ExperimentSpec.from_dict(meta["spec"])
    assert {(t.overrides["time_budget"], t.overrides["max_episodes"]) for t in trials(spec)} \
        == {(900.0, 500000)}
    assert meta["run_flags"][-4:] == ["--budget", "time_budget=900", "--budget",
                                      "max_episodes=500000"]


@pytest.mark.parametrize("flags, message", [
    (["--only", "arm=islands-5"], "--only arm: 'islands-5' is not among its values"),
    (["--only", "seed=1"], "--only 'seed=1': expected FIELD=V1,V2"),
    (["--seeds", "9-3"], "--seeds must be a list of integers or a range"),
    (["--budget", "popsize=8"], "--budget 'popsize=8': expected FIELD=N with FIELD one of "
                                "max_evals, max_episodes"),
    (["--budget", "time_budget=-5"], "--budget time_budget: expected a number > 0, got '-5'"),
    (["--budget", "time_budget=soon"], "--budget time_budget: expected a number > 0"),
])
def test_bad_seeds_or_grid_values_exit_2_with_one_line(tmp_path, capsys, flags, message):
    yaml_file = Path(__file__).resolve().parents[1] / "experiments" / "islands-vs-one.yaml"
    out = tmp_path / "x"
    assert main(["run", str(yaml_file), "--scale", "laptop", "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and not out.exists()


def test_a_merged_copy_is_not_resumed(halves, capsys):
    tmp, a, b, _, _ = halves
    assert main(["merge", str(a), str(b), "--out", str(tmp / "pooled")]) == 0
    capsys.readouterr()
    assert main(["resume", str(tmp / "pooled")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"islands.experiment: error: {tmp / 'pooled'} was merged from {a} and {b}: "
                   "resume those, then merge again")


def _set_arms(d: Path, arms: dict) -> None:
    meta = json.loads((d / names.EXPERIMENT_JSON).read_text())
    meta["spec"]["arms"] = arms
    (d / names.EXPERIMENT_JSON).write_text(json.dumps(meta))


def test_a_file_that_gained_an_arm_still_merges_but_a_redefined_arm_does_not(halves, capsys):
    tmp, a, b, _, _ = halves
    _set_arms(a, {"two": {"islands": 2}})
    _set_arms(b, {"two": {"islands": 2}, "one": {"islands": 1}})  # gained "one"
    assert main(["merge", str(a), str(b), "--out", str(tmp / "pooled")]) == 0
    merged = json.loads((tmp / "pooled" / names.EXPERIMENT_JSON).read_text())
    assert merged["spec"]["arms"] == {"two": {"islands": 2}, "one": {"islands": 1}}
    _set_arms(b, {"two": {"islands": 4}})
    assert main(["merge", str(a), str(b), "--out", str(tmp / "p2")]) == 2
    assert "in arm 'two'" in capsys.readouterr().err and not (tmp / "p2").exists()


def test_arms_only_one_directory_ran_are_not_compared(halves, capsys):
    """`run --only arm=real` here and `--only arm=virtual` from another worktree: the arm
    each did not run names its files where that directory was made; only the arm that ran
    counts, and the merged copy defines each arm as it ran."""
    tmp, a, b, _, _ = halves
    for d, ran, root in ((a, "real", "/wt1"), (b, "virtual", "/wt2")):
        meta = json.loads((d / names.EXPERIMENT_JSON).read_text())
        meta["spec"]["arms"] = {"real": {"runtime": "ray"},
                                "virtual": {"runtime": "virtual",
                                            "cluster": f"{root}/cluster/laptop.yaml"}}
        meta["spec"]["grid"] = {**meta["spec"]["grid"], "arm": [ran]}
        (d / names.EXPERIMENT_JSON).write_text(json.dumps(meta))
    assert main(["merge", str(a), str(b), "--out", str(tmp / "pooled")]) == 0, \
        capsys.readouterr().err
    merged = json.loads((tmp / "pooled" / names.EXPERIMENT_JSON).read_text())
    assert merged["spec"]["arms"]["virtual"]["cluster"] == "/wt2/cluster/laptop.yaml"
    assert merged["spec"]["grid"]["arm"] == ["real", "virtual"]


def test_only_runs_an_arm_of_the_file_that_no_grid_lists(tmp_path):
    from islands.experiment.cli import prepare

    yaml_file = Path(__file__).resolve().parents[1] / "experiments" / "islands-vs-one.yaml"
    d = prepare(str(yaml_file), "laptop", str(tmp_path / "base"), "4000-4001",
                ["arm=one-x1", "env=Hopper-v4"])
    meta = json.loads((d / names.EXPERIMENT_JSON).read_text())
    assert [t["label"] for t in meta["trials"]] == [
        "env=Hopper-v4 arm=one-x1 seed=4000", "env=Hopper-v4 arm=one-x1 seed=4001"]
    assert meta["spec"]["arms"]["one-x1"] == {"islands": 1}


def test_arms_taken_from_each_directory_pool_a_kept_copys_real_runs_with_a_new_virtual_arm(
        tmp_path, capsys):
    """A kept copy holds real and virtual runs of the same seeds; a newer model's virtual
    arm (same name, other directory) pools with its real runs only: here the copy's own
    virtual runs stand in for the new arm, so the pooled report is the copy's own."""
    kept = Path(__file__).resolve().parents[1] / "docs" / "results" / "virtual-time" / \
        "seeds-6010-6019"
    new = tmp_path / "new"
    shutil.copytree(kept, new)
    whole = tmp_path / "whole"
    shutil.copytree(kept, whole)
    assert main(["report", str(whole)]) == 0
    assert main(["merge", str(kept), str(new), "--out", str(tmp_path / "refused")]) == 2
    assert "seed 6010 of" in capsys.readouterr().err
    out = tmp_path / "pooled"
    assert main(["merge", str(kept), str(new), "--out", str(out), "--arms", f"{kept}:real",
                 "--arms", f"{new}:virtual"]) == 0, capsys.readouterr().err
    results = pd.read_parquet(out / names.RESULTS)
    assert sorted(results.arm.value_counts().items()) == [("real", 30), ("virtual", 30)]
    assert set(results.trial.str[:2][results.arm == "real"]) == {"d1"}
    assert _tables((out / names.REPORT_MD).read_text()) == \
        _tables((whole / names.REPORT_MD).read_text())
    for flags, message in (([f"{kept}"], "write DIR:ARM[,ARM]"),
                           (["/elsewhere:real"], "/elsewhere is not one of the directories"),
                           ([f"{new}:nope"], "ran no arm 'nope' (it ran real, virtual)")):
        capsys.readouterr()
        code = main(["merge", str(kept), str(new), "--out", str(tmp_path / "x"),
                     "--arms", *flags])
        err = capsys.readouterr().err.strip()
        assert code == 2 and message in err and "\n" not in err, err
