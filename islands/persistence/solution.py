"""The solution file's format: ``solution.npz``, the best genome a run found with what it
takes to run it again (its policy spec, observation statistics and env).

Written by :meth:`islands.output.rundir.RunDir.save_solution`; read here, below the
packages that write runs, so that ``islands.evaluate`` (a core the tester actor runs)
loads a solution without importing the output layer.
"""

from __future__ import annotations

import os
from typing import Any

from . import plainstate

SOLUTION_FORMAT = "islands-solution/1"


def load_solution(run_dir: str) -> dict[str, Any]:
    """The tree written by ``save_solution`` (accepts the run dir or the .npz path)."""
    path = run_dir if run_dir.endswith(".npz") else os.path.join(run_dir, "solution.npz")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no solution file at {path}")
    tree = plainstate.load(path)
    if tree.get("format") != SOLUTION_FORMAT:
        raise ValueError(f"{path} is not an islands solution (format {tree.get('format')!r})")
    return tree
