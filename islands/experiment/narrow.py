"""``run --seeds / --only / --budget``: an experiment narrowed for one run of it.

More seeds for the same question (pooled with an earlier directory by ``merge``), some of a
grid field's values (an arm alone, one cluster), a shorter cap for choosing runs. Plain
Python; one-line :class:`~islands.experiment.spec.ExperimentError` s.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from .collect import param_value
from .names import BUDGET_FIELDS
from .spec import ARM, ExperimentSpec, _absolute, _err, _seeds


def narrowed(spec: ExperimentSpec, seeds: str | None, only: list[str],
             budget: list[str] | None = None) -> ExperimentSpec:
    """``spec`` with other ``seeds`` (``run --seeds``: more seeds for the same question, to
    pool with ``merge``) and its grid narrowed to some values (``run --only
    FIELD=V1,V2``, values named as the report's cells name them: ``32-16`` for a hidden
    [32, 16]; ``arm`` takes any of the file's ``arms:``, in the scale's grid or not, so a
    baseline arm can run alone); ExperimentError (one line) for a field not in the grid or
    a value not among its values."""
    path = spec.source or "<experiment>"
    new: dict[str, Any] = {} if seeds is None else {"seeds": _seeds(path, "--seeds", seeds)}
    if budget:
        new["budget"] = {**spec.budget, **_budget_items(path, budget)}
    grid = dict(spec.grid)
    for item in only:
        key, _, values = item.partition("=")
        if key not in grid or not values:
            raise _err(path, f"--only {item!r}: expected FIELD=V1,V2 with FIELD one of the "
                             f"grid's ({', '.join(grid) or 'none'})")
        values_of = [*grid[key], *(a for a in spec.arms if a not in grid[key])] if key == ARM \
            else grid[key]
        have = {str(param_value(v)): v for v in values_of}  # as the report names them
        # a file (--only cluster=cluster/virtual/c16.yaml) as typed, relative to here: the
        # grid holds it made absolute (_absolute)
        wanted = [v if v in have else str(param_value(_absolute(key, v)))
                  for v in (v.strip() for v in values.split(",")) if v]
        unknown = [v for v in wanted if v not in have]
        if unknown:
            raise _err(path, f"--only {key}: {unknown[0]!r} is not among its values "
                             f"({', '.join(have)})")
        grid[key] = [have[v] for v in wanted]
    return dataclasses.replace(spec, grid=grid, **new)


def _budget_items(path: str, items: list[str]) -> dict[str, float | int]:
    """``run --budget time_budget=900``: budget fields over the file's (a shorter cap for
    choosing runs); ExperimentError (one line) for another field or a value not > 0."""
    out: dict[str, float | int] = {}
    for item in items:
        key, _, text = item.partition("=")
        if key not in BUDGET_FIELDS:
            raise _err(path, f"--budget {item!r}: expected FIELD=N with FIELD one of "
                             f"{', '.join(BUDGET_FIELDS)}")
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not value > 0 or math.isinf(value):
            raise _err(path, f"--budget {key}: expected a number > 0, got {text!r}")
        out[key] = int(value) if value.is_integer() and key != "time_budget" else value
    return out

