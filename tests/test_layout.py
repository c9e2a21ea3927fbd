"""The code's shape, as docs/DEVELOPING.md states it: Ray only in islands/runtime/, no
import cycles, no function over 80 lines and no module over 500 lines."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import ROOT

PACKAGES = ("islands", "envs", "policies")


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for p in (ROOT / pkg).rglob("*.py"):
            name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
            mods[name.removesuffix(".__init__")] = p
    return mods


def _imports(name: str, path: Path) -> set[str]:
    """Every module named by an import statement anywhere in the file (lazy ones too)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            if node.level:
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def test_ray_is_imported_only_in_the_runtime_package():
    offenders = [n for n, p in _modules().items()
                 if not n.startswith("islands.runtime")
                 and any(m == "ray" or m.startswith("ray.") for m in _imports(n, p))]
    assert offenders == []


def test_no_import_cycles():
    mods = _modules()
    graph = {}
    for n, p in mods.items():
        deps = set()
        for m in _imports(n, p):
            while m and m not in mods:
                m = m.rpartition(".")[0]
            if m and m != n:
                deps.add(m)
        graph[n] = deps
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(n, path):
        state[n] = 1
        for d in sorted(graph[n]):
            if state.get(d) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path + [n, d]))
            if d not in state:
                visit(d, path + [n])
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n, [])


def test_functions_and_modules_stay_readable():
    too_long = []
    for n, p in _modules().items():
        src = p.read_text()
        if src.count("\n") > 500:
            too_long.append(f"{n}: {src.count(chr(10))} lines")
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > 80:
                    too_long.append(f"{n}.{node.name}: {length} lines")
    assert too_long == []


def test_the_readme_is_readable_and_its_links_resolve():
    readme = (ROOT / "README.md").read_text()
    long = [f"README.md:{i}: {len(line)} characters"
            for i, line in enumerate(readme.splitlines(), 1) if len(line) > 100]
    assert long == []
    # inline [text](target) and reference [id]: target links to files of the repository
    targets = re.findall(r"\]\(([^)#\s]+)[^)]*\)", readme)
    targets += re.findall(r"^\[[^\]]+\]:\s*(\S+)", readme, re.M)
    local = [t for t in targets if "://" not in t]
    assert local and [t for t in local if not (ROOT / t).exists()] == []
