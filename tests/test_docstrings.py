"""Docstrings say what the code does and why; measured evidence lives in docs/results/.

A module docstring of more than 40 lines, or a class / function docstring of more than 25
(counted as source lines, quotes included), is where tables of runs, seed lists and timings
used to pile up: such figures belong on a dated page in docs/results/ (date, commit,
machine, command, table, reading), and the code links to it. Also: no tracked file points
outside the repository, where a reader of a clone cannot follow.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("islands", "envs", "policies", "benchmarks")
MODULE_MAX = 40
DEF_MAX = 25
# Files whose owners are still moving their evidence out (each must still offend: once it is
# fixed, test_pending_files_still_offend fails until the entry is removed here).
PENDING: set[str] = set()
# Built from parts so that this file does not match itself.
OUTSIDE = (".." + "/shared", "shared" + "/docs")
TEXT_SUFFIXES = (".py", ".md", ".yaml", ".toml", ".ipynb", ".sh")


def _span(node: ast.AST) -> int | None:
    """Source lines of ``node``'s docstring (quotes included), or None without one."""
    body = getattr(node, "body", None)
    if not body or not isinstance(body[0], ast.Expr):
        return None
    value = body[0].value
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return None
    return body[0].end_lineno - body[0].lineno + 1


def offenders() -> dict[str, list[str]]:
    """``{path: ["module: 55 lines > 40", "Class.method: 30 lines > 25", ...]}``."""
    out: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
            found = []
            n = _span(tree)
            if n is not None and n > MODULE_MAX:
                found.append(f"module: {n} lines > {MODULE_MAX}")
            found += _def_offenders(tree.body, "")
            if found:
                out[rel] = found
    return out


def _def_offenders(nodes: list[ast.AST], prefix: str) -> list[str]:
    """Every class / function below ``nodes`` (under if / try / with too), dotted names."""
    found = []
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = prefix + node.name
            n = _span(node)
            if n is not None and n > DEF_MAX:
                found.append(f"{name}: {n} lines > {DEF_MAX}")
            found += _def_offenders(list(ast.iter_child_nodes(node)), name + ".")
        else:
            found += _def_offenders(list(ast.iter_child_nodes(node)), prefix)
    return found


def _format(found: dict[str, list[str]]) -> str:
    return "\n".join(f"{path}: {', '.join(items)}" for path, items in sorted(found.items()))


def test_docstrings_are_short():
    found = {p: items for p, items in offenders().items() if p not in PENDING}
    assert not found, ("docstrings over the cap (move measured evidence to a dated page in "
                       "docs/results/ and link it):\n" + _format(found))


def test_pending_files_still_offend():
    fixed = sorted(PENDING - set(offenders()))
    assert not fixed, f"now within the cap, remove from PENDING: {fixed}"


def _tracked_text_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [p for p in out.decode().split("\0") if p.endswith(TEXT_SUFFIXES)]


def test_no_tracked_file_points_outside_the_repository():
    found = []
    for rel in _tracked_text_files():
        path = ROOT / rel
        if not path.is_file():  # deleted in the work tree, not yet in the index
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for lineno, line in enumerate(text.splitlines(), 1):
            for needle in OUTSIDE:
                if needle in line:
                    found.append(f"{rel}:{lineno}: {line.strip()[:80]}")
    assert not found, "paths outside the repository:\n" + "\n".join(found)


def test_the_cap_check_sees_an_offender():
    """The walker itself: a long docstring nested in a class is found and named."""
    long = "\n".join(["x"] * (DEF_MAX + 1))
    tree = ast.parse(f'class A:\n    def f(self):\n        """{long}"""\n')
    assert _def_offenders(tree.body, "") == [f"A.f: {DEF_MAX + 1} lines > {DEF_MAX}"]
