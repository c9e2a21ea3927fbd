"""docs/DEVELOPING.md stays true where a test can hold it: every repository path it names
exists, every module of the packages is named in it (by path, or by file name on a line
that names its folder), and every message class of islands/messages.py is in its table."""

from __future__ import annotations

import ast
import re

from conftest import ROOT

DOC = (ROOT / "docs" / "DEVELOPING.md").read_text()
PACKAGES = ("islands", "envs", "policies")
PATH = re.compile(r"^(islands|envs|policies|tests|benchmarks|docs|experiments|cluster)/[\w/.\-]*$")


def _named_words() -> set[str]:
    """Every word inside backticks (a backticked span may hold several, comma separated)."""
    return {w for span in re.findall(r"`([^`]+)`", DOC) for w in re.split(r"[\s,;()]+", span)}


def _is_named(rel: str) -> bool:
    if rel in DOC:
        return True
    folder, _, name = rel.rpartition("/")
    parent, _, last = folder.rpartition("/")  # a subfolder named inside its parent's row
    return any(f"`{name}`" in line and (f"{folder}/" in line or (
        parent and f"{parent}/" in line and f"`{last}/`" in line)) for line in DOC.splitlines())


def test_every_path_it_names_exists():
    paths = sorted(w.rstrip(".") for w in _named_words() if PATH.match(w))
    assert paths, "no paths found: the pattern no longer matches the document"
    assert [p for p in paths if not (ROOT / p).exists()] == []


def test_every_module_is_named():
    unnamed = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if path.name in ("__init__.py", "__main__.py") and rel != "islands/__init__.py":
                continue  # a package's own marker and its ``python -m`` shim
            if not _is_named(rel):
                unnamed.append(rel)
    assert unnamed == [], "modules docs/DEVELOPING.md does not name: " + ", ".join(unnamed)


def test_every_message_is_in_the_table():
    tree = ast.parse((ROOT / "islands" / "messages.py").read_text())
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    assert classes
    assert [c for c in classes if f"`{c}`" not in DOC] == []


def test_the_module_rule_sees_an_unnamed_module():
    assert not _is_named("islands/island/no_such_module.py")
    assert _is_named("islands/island/core.py")


def test_the_trace_names_functions_that_exist():
    """Every ``name`` / ``Class.method`` the trace of one generation cites is defined in the
    packages (Ray's own, ``ray.*``, aside)."""
    section = DOC[DOC.index("## Tracing one generation"):DOC.index("## Where a change goes")]
    names = {n for n in re.findall(r"`([A-Za-z_][\w.]*)(?:\([^`]*\))?`", section)
             if not n.startswith("ray.")}
    defined = set()
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            defined |= {n.name for n in ast.walk(ast.parse(path.read_text()))
                        if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert len(names) > 10
    assert sorted(n for n in names if n.split(".")[-1] not in defined) == []
