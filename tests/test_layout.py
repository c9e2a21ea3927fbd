"""The code's shape, as docs/DEVELOPING.md states it: Ray only in islands/runtime/, no
import cycles, no function over 80 lines and no module over 500 lines; docstrings that say
what the code does and why (module <= 40 lines, class / function <= 25: measured evidence
lives on dated pages in docs/results/); no tracked file pointing outside the repository; a
README whose lines fit 100 characters and whose links resolve."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
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


# islands/__init__.py imports nothing at import time (islands.run and islands.Result load
# islands.api on first use: PEP 562), so importing any subpackage runs it without a cycle;
# test_naming_things_imports_neither_torch_nor_pycma checks that it stays lazy.
ROOT_FACADE = "islands"


def test_no_import_cycles():
    mods = _modules()
    graph = {}
    for n, p in mods.items():
        deps = set()
        for m in _imports(n, p):
            while m and m not in mods:
                m = m.rpartition(".")[0]
            if m and m != n and m != ROOT_FACADE:
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


# The packages in layers, lowest first: a package imports only from its own layer and the
# layers below it, so no loop between packages can form (docs/DEVELOPING.md, "Layers").
LAYERS = (
    # formats and algorithms: messages, seeds, strategies, policies, envs, file formats
    ("envs", "policies", "islands.errors", "islands.messages", "islands.seeds", "islands.topology",
     "islands.candidates", "islands.envdefaults", "islands.elastic", "islands.signals",
     "islands.strategies", "islands.persistence"),
    ("islands.island", "islands.coordinator", "islands.evaluate"),  # the plain cores
    ("islands.config", "islands.planning", "islands.placement",  # what a run is asked to do
     "islands.costmodel"),
    ("islands.output",),  # what a run writes and shows
    ("islands.runtime",),  # Ray: the process layer
    ("islands.api", "islands.experiment", "islands.launch", "islands.status",
     "islands.console", "islands.__main__"),  # the Python API and the CLIs
)


def _unit(module: str) -> str:
    """The package a module belongs to in LAYERS (``islands.island.core`` ->
    ``islands.island``)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "islands" else parts[0]


def _package_edges() -> dict[tuple[str, str], str]:
    """``{(importer, imported): an example module import}`` between distinct packages."""
    mods, edges = _modules(), {}
    for n, p in mods.items():
        for m in _imports(n, p):
            while m and m not in mods:
                m = m.rpartition(".")[0]
            if m and ROOT_FACADE not in (m, n) and _unit(m) != _unit(n):
                edges.setdefault((_unit(n), _unit(m)), f"{n} -> {m}")
    return edges


def test_packages_import_only_their_own_layer_and_the_layers_below():
    layer = {unit: i for i, units in enumerate(LAYERS, 1) for unit in units}
    units = {_unit(n) for n in _modules() if n != "islands"}
    assert sorted(units - set(layer)) == [], "packages missing from LAYERS"
    upward = [f"{a} (layer {layer[a]}) imports {b} (layer {layer[b]}): {example}"
              for (a, b), example in sorted(_package_edges().items()) if layer[b] > layer[a]]
    assert upward == [], "\n".join(upward)


def _find_loop(graph: dict[str, set[str]]) -> list[str] | None:
    """A loop in ``graph`` as the path that closes it, or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(n: str, path: list[str]) -> list[str] | None:
        state[n] = 1
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                full = path + [n]
                return full[full.index(d):] + [d]
            if d not in state and (loop := visit(d, path + [n])):
                return loop
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (loop := visit(n, [])):
            return loop
    return None


def test_no_loops_between_packages():
    """Also within a layer (the layer rule alone allows config <-> planning)."""
    edges, graph = _package_edges(), {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    loop = _find_loop(graph)
    assert loop is None, "package loop: " + " -> ".join(loop) + "\n" + "\n".join(
        edges[a, b] for a, b in zip(loop, loop[1:], strict=False))


def test_the_loop_finder_sees_a_loop():
    assert _find_loop({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_loop({"a": {"b"}, "b": {"c"}}) is None


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


# The island's algorithm stays one screenful per step: tighter caps than the general ones.
TIGHT = {"islands.island.core": (300, {"evolve": 40})}


def test_the_island_core_stays_small():
    mods, over = _modules(), []
    for name, (max_lines, functions) in TIGHT.items():
        src = mods[name].read_text()
        if src.count("\n") > max_lines:
            over.append(f"{name}: {src.count(chr(10))} lines > {max_lines}")
        for node in ast.walk(ast.parse(src)):
            cap = functions.get(getattr(node, "name", None))
            if cap and isinstance(node, ast.FunctionDef):
                if node.end_lineno - node.lineno + 1 > cap:
                    over.append(f"{name}.{node.name}: over {cap} lines")
    assert over == []


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


# ---- docstrings: what and why, evidence in docs/results/ ---------------------------------
DOC_PACKAGES = ("islands", "envs", "policies", "benchmarks")
MODULE_MAX = 40
DEF_MAX = 25
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


def _doc_offenders() -> dict[str, list[str]]:
    """``{path: ["module: 55 lines > 40", "Class.method: 30 lines > 25", ...]}``."""
    out: dict[str, list[str]] = {}
    for package in DOC_PACKAGES:
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
    found = _doc_offenders()
    assert not found, ("docstrings over the cap (move measured evidence to a dated page in "
                       "docs/results/ and link it):\n" + _format(found))


def _tracked_text_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                         check=True).stdout
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


# Processes that only name strategies, policies and envs: the launcher's driver and CLIs,
# the coordinator's actor. torch (~2 s) and pycma (~1.5 s, with scipy and matplotlib) load
# in the processes that evolve or evaluate, on first use (policies.registry.LazyRegistry).
LIGHT_MODULES = ("islands.api", "islands.console", "islands.launch", "islands.config",
                 "islands.runtime.driver", "islands.runtime.actors", "islands.coordinator",
                 "islands.status", "islands.experiment.cli")
HEAVY = ("torch", "cma", "scipy", "matplotlib")


def test_naming_things_imports_neither_torch_nor_pycma():
    code = ("import sys\nimport islands\nassert 'islands.api' not in sys.modules\n"
            f"for m in {LIGHT_MODULES!r}: __import__(m)\n"
            "from islands.config import from_dict, resolve\n"
            "from islands.strategies import STRATEGIES\nfrom policies import POLICIES\n"
            "resolve(from_dict({'env': 'rastrigin:10', 'strategy': 'cmaes,ga,ars'}))\n"
            "assert 'cmaes' in STRATEGIES and 'mlp' in POLICIES\n"
            # an island of a synthetic function evolves without them too
            "from island_core import island, island_cfg\n"
            "island(island_cfg(env='rastrigin:8', strategy='ars', backend='auto')).evolve(2)\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "tests",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]", f"loaded at import: {proc.stdout.strip()}"


def test_a_lazy_registry_imports_its_class_on_lookup_only():
    from policies import POLICIES
    from policies.registry import LazyRegistry

    reg = LazyRegistry({"mlp": "policies.mlp:MLPPolicy", "x": int, "gone": "no_such_mod:X"})
    # names, membership and listing never import: "gone" fails only when looked up
    assert list(reg) == ["mlp", "x", "gone"] and "gone" in reg and reg["x"] is int
    with pytest.raises(ModuleNotFoundError, match="no_such_mod"):
        reg["gone"]
    assert reg["mlp"] is POLICIES["mlp"] and reg["mlp"].__name__ == "MLPPolicy"
