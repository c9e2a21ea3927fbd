"""Every benchmark script imports (a renamed module once broke report_speed.py unseen) and
says what it measures in its docstring."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("path", BENCHMARKS, ids=[p.stem for p in BENCHMARKS])
def test_benchmark_imports(path):
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)  # module level only: main() runs under __main__
    finally:
        del sys.modules[spec.name]
    assert (module.__doc__ or "").strip(), f"{path.name} has no docstring"
    assert callable(getattr(module, "main", None)), f"{path.name} has no main()"
