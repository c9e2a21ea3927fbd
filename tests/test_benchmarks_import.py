"""benchmarks/ follows one convention (docs/guide.md, "Benchmarks"): every script imports (a
renamed module once broke report_speed.py unseen) from the installed package, never by
editing ``sys.path``; says what it measures in its docstring; answers ``--help``; prints its
final JSON line through ``islands.output.benchmarking.emit``; and stays under the layout caps
(tests/test_layout.py). The analyses of a run directory that left benchmarks/ keep their
``python -m`` entries."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys

import pytest
from conftest import ROOT, subprocess_env

from islands.output import benchmarking

BENCH = ROOT / "benchmarks"
MODULES = sorted(BENCH.glob("*.py"))  # scripts and their parts (``_name.py``)
SCRIPTS = [p for p in MODULES if not p.name.startswith("_")]
ANALYSES = ["islands.output.fitness_noise", "islands.output.late_phase_ab",
            "islands.output.walker_torque"]
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 500, 80  # tests/test_layout.py's caps


def _import(path, monkeypatch):
    """``benchmarks.<name>`` as ``python -m benchmarks.<name>`` imports it."""
    monkeypatch.syspath_prepend(str(ROOT))
    return importlib.import_module(f"benchmarks.{path.stem}")


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_benchmark_imports(path, monkeypatch):
    module = _import(path, monkeypatch)  # module level only: main() runs under __main__
    assert (module.__doc__ or "").strip(), f"{path.name} has no docstring"
    assert callable(getattr(module, "main", None)), f"{path.name} has no main()"


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_benchmark_answers_help(path, monkeypatch, capsys):
    module = _import(path, monkeypatch)
    with pytest.raises(SystemExit) as exit_:
        module.main(["--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("usage:")


def _calls_emit(tree: ast.AST) -> bool:
    """``bench.emit(...)`` with ``bench`` bound by ``from islands import benchmarking``."""
    aliases = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
               and n.module == "islands.output" for a in n.names if a.name == "benchmarking"}
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "emit" and isinstance(n.func.value, ast.Name)
               and n.func.value.id in aliases for n in ast.walk(tree))


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_benchmark_prints_its_json_line_through_emit(path):
    assert _calls_emit(ast.parse(path.read_text())), f"{path.name} does not call emit()"


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_benchmark_modules_need_no_path_edits_and_stay_readable(path):
    src = path.read_text()
    assert "sys.path" not in src, f"{path.name} edits sys.path"
    too_long = [f"{path.name}: {src.count(chr(10))} lines"] \
        if src.count("\n") > MAX_MODULE_LINES else []
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                too_long.append(f"{path.name}: {node.name}")
    assert too_long == []


@pytest.mark.parametrize("how", ["script", "module"])
def test_the_gpu_suite_imports_its_siblings_both_ways(how):
    """The one script that imports sibling scripts: by their plain names when run as a
    file, relatively when run as a module."""
    cmd = ["benchmarks/gpu_suite.py"] if how == "script" else ["-m", "benchmarks.gpu_suite"]
    proc = subprocess.run([sys.executable, *cmd, "--help"], cwd=ROOT, env=subprocess_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "--seconds S" in proc.stdout and "pytest_gpu" in proc.stdout


@pytest.mark.parametrize("name", ANALYSES)
def test_a_run_directory_analysis_answers_help(name, capsys):
    module = importlib.import_module(name)
    with pytest.raises(SystemExit) as exit_:
        module.main(["--help"])
    assert exit_.value.code == 0
    assert f"python -m {name}" in capsys.readouterr().out


def test_an_old_flag_spelling_still_works_hidden_with_a_note(capsys):
    p = benchmarking.parser("What it measures.\n\nMore.")
    benchmarking.add_seconds(p, 60.0, "time budget", old=("--timeout",))
    benchmarking.add_out(p, None, "where files go", old=("--keep",))
    benchmarking.renamed(p, "--minutes", "--seconds", scale=60.0, type=float)
    assert vars(p.parse_args([])) == {"seconds": 60.0, "out": None}
    assert capsys.readouterr().err == ""
    assert vars(p.parse_args(["--timeout", "5", "--keep", "d"])) == {"seconds": 5.0, "out": "d"}
    assert vars(p.parse_args(["--minutes", "2"]))["seconds"] == 120.0
    err = capsys.readouterr().err.splitlines()
    assert [line.split(": ", 1)[1] for line in err] == [
        "--timeout is now --seconds", "--keep is now --out", "--minutes is now --seconds"]
    text = p.format_help()
    assert "--seconds S" in text and "--timeout" not in text and "--minutes" not in text
    assert text.split("\n\n")[1] == "What it measures."


def test_emit_prints_one_shape_last(capsys):
    out = benchmarking.emit("bench", rows=[{"n": 1, "x": 2.0}], baseline="n = 1", ratio=2.0,
                            env="CartPole-v1")
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(line) == out
    assert list(out) == [*benchmarking.STANDARD_KEYS, "env"]
    assert out["machine"]["cpus"] >= 1 and out["commit"]
