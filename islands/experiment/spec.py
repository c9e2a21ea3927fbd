"""An experiment file: a research question as a grid of launcher runs, at a chosen scale.

Plain Python (no Ray): :func:`load_experiment` reads a YAML file at one scale, :func:`trials`
expands grid x seeds into :class:`Trial` s, :func:`trial_config` makes a trial's resolved
launcher :class:`~islands.config.Config`, and :func:`check_trials` resolves every trial once
so a bad value fails before anything runs. Problems: one-line :class:`ExperimentError` s.

The format (``experiments/*.yaml``)::

    name: network-scaling            # required; letters, digits, '.', '_', '-'
    report: network-scaling          # a key of reports.REPORTS (default: generic)
    question: Up to how many parameters does full CMA-ES still solve LunarLander-v3?
    description: Free text for the report.
    base: {env: LunarLander-v3, islands: 2}   # launcher fields shared by every run
    grid:                                     # launcher field -> the values to try
      hidden: [[32, 16], [64, 32]]
      strategy: [cmaes, sep-cmaes, openai-es]
    seeds: 0-2                       # or [0, 1, 2], 0-3,8 (as benchmarks/ take them), or 7
    order: grid                      # or seeds: every grid point of a seed, then the next
    budget: {max_evals: 20000, time_budget: 600}   # keys from names.BUDGET_FIELDS
    arms: {one: {islands: 1}, four: {islands: 4}}   # optional: run by grid field ``arm``
    scales:                          # any of names.SCALES; each block is optional
      smoke:   {grid: {hidden: [[32, 16]]}, seeds: [0], budget: {time_budget: 30}}
      laptop:  {seeds: [0], budget: {time_budget: 270}}
      cluster: {base: {islands: 8}, seeds: 0-4}

The chosen scale's block overrides the top level: ``base`` and ``budget`` merge key by key;
``grid`` merges per field (a field the scale lists replaces that field's values and keeps
its place; a field only the scale lists comes after the top level's); ``seeds`` replaces.
Asking for a scale the file does not define is an error naming the scales it has.

``base``, ``grid`` and ``arms`` take any field of :data:`islands.config.FIELDS` except the
runner's (``names.RUNNER_FIELDS``), ``seed`` and, outside ``grid``, budget fields. A grid
value wins over ``base``; an arm (top level only; a scale picks with ``grid: {arm: [...]}``)
may not set a field the grid varies. A trial's launcher fields (:attr:`Trial.overrides`):
``base``, ``budget``, its arm's, the other grid values, ``seed``. Trials: the grid's
cartesian product in file order (the first slowest) times the seeds (fastest, or with
``order: seeds`` slowest), ids ``t000``, ... in that order. Values are checked by
:func:`check_trials`, with the launcher's own messages.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import itertools
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import FIELDS, Config, ConfigError, from_dict, resolve
from ..config.parse import yaml_problem
from .names import BUDGET_FIELDS, RUNNER_FIELDS, SCALES
from .reports import REPORTS  # the report kinds: the writers' registry

TOP_KEYS = ("name", "report", "question", "description", "base", "arms", "grid", "seeds",
            "order", "budget", "scales")
# the order trials run in: "grid" (each grid point's seeds in turn) or "seeds" (every grid
# point of one seed, then the next seed: arms compared on shared seeds as soon as one seed
# is done, for studies whose runs take hours and are kept and resumed across sessions)
ORDERS = ("grid", "seeds")
ARM = "arm"  # the grid field that picks one of ``arms:`` by name
SCALE_KEYS = ("base", "grid", "seeds", "budget")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")  # it names directories
_SEED_RANGE = re.compile(r"(\d+)(?:-(\d+))?\Z")


class ExperimentError(ValueError):
    """A bad experiment file or trial; the message is one line naming the problem."""


def _plain(value: Any) -> Any:
    """JSON's view of ``value``: tuples become lists and keys strings, so that a spec equals
    itself after ``json.loads(json.dumps(spec.to_dict()))``."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, kw_only=True)
class ExperimentSpec:
    """One experiment at one scale: the scale's block already merged into the top level."""

    name: str
    report: str = "generic"
    question: str = ""  # one sentence: what the experiment answers
    description: str = ""
    base: dict = field(default_factory=dict)  # launcher fields of every run
    grid: dict = field(default_factory=dict)  # launcher field -> values, in file order
    seeds: list = field(default_factory=list)
    budget: dict = field(default_factory=dict)  # names.BUDGET_FIELDS -> value
    arms: dict = field(default_factory=dict)  # arm name -> launcher fields (grid field arm)
    order: str = "grid"  # ORDERS: the order trials run in
    scale: str = ""
    source: str = ""  # the YAML file it came from

    def __post_init__(self) -> None:
        # Normalised at construction, so every spec (from YAML, JSON or Python) compares
        # equal to its own round trip.
        for name in ("base", "grid", "budget", "arms"):
            object.__setattr__(self, name, _plain(getattr(self, name)))
        object.__setattr__(self, "seeds", [int(s) for s in self.seeds])

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data; :meth:`from_dict` gives an equal spec back."""
        return {f.name: copy.deepcopy(getattr(self, f.name))
                for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExperimentSpec:
        """The spec :meth:`to_dict` wrote (e.g. ``experiment.json``)."""
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = [k for k in d if k not in names]
        if unknown:
            raise ExperimentError(f"unknown experiment spec key {unknown[0]!r}; allowed: "
                                  f"{', '.join(names)}")
        if not d.get("name"):
            raise ExperimentError("experiment spec has no name")
        return cls(**copy.deepcopy(d))


# ---- reading the file -----------------------------------------------------------------------
def _err(path: str, message: str) -> ExperimentError:
    return ExperimentError(f"{path}: {message}")


def _hint(key: str, choices) -> str:
    close = difflib.get_close_matches(str(key), list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _yaml_loader():
    """A SafeLoader that refuses duplicate keys: plain YAML keeps the last one silently, and
    two ``strategy:`` lines in a grid would drop half the grid without a word."""
    import yaml

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen = []  # a list: keys may be unhashable (a YAML list as a key)
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark)
                seen.append(key)
            return super().construct_mapping(node, deep)

    return Loader


def _read_yaml(path: str) -> dict[str, Any]:
    import yaml

    try:
        with open(path) as fh:
            data = yaml.load(fh, Loader=_yaml_loader())  # a SafeLoader: no Python objects
    except FileNotFoundError:
        raise ExperimentError(f"experiment file {path!r} not found") from None
    except OSError as e:
        raise ExperimentError(f"cannot read experiment file {path!r}: {e.strerror}") from None
    except yaml.YAMLError as e:
        line, column, problem = yaml_problem(e)
        where = f" at line {line}, column {column}" if line is not None else ""
        raise _err(path, f"malformed YAML{where}: {problem}") from None
    if data is None:
        raise _err(path, "the file is empty; an experiment needs at least name and seeds")
    if not isinstance(data, dict):
        raise _err(path, f"the top level must be a mapping of {', '.join(TOP_KEYS)}, "
                         f"got a {type(data).__name__}")
    return data


def _mapping(path: str, where: str, value: Any) -> dict[str, Any]:
    """A block that must be a mapping (left empty in YAML: an empty one)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _err(path, f"{where} must be a mapping, got {value!r}")
    return value


def _check_field(path: str, where: str, key: Any) -> None:
    """``key`` is a launcher field an experiment may set in ``where`` (base or grid)."""
    if key not in FIELDS:
        raise _err(path, f"unknown field {key!r} in {where}{_hint(key, FIELDS)}")
    if key in RUNNER_FIELDS:
        raise _err(path, f"field {key!r} in {where} is set by the runner for each trial")
    if key == "seed":
        raise _err(path, f"field 'seed' in {where}: list the seeds under seeds: instead")


# launcher fields that name files: relative to where ``run`` is typed (as on the launcher's
# command line), made absolute so that a trial reads them from its own working directory
PATH_FIELDS = ("cluster", "calibration")


def _absolute(key: str, value: Any) -> Any:
    return os.path.abspath(value) if key in PATH_FIELDS and isinstance(value, str) else value


PROJECT = Path(__file__).resolve().parents[2]  # the checkout this package runs from


def relocated(key: str, value: Any) -> Any:
    """A path a trial recorded (absolute, from where ``run`` was typed) that is gone here,
    found again in this checkout: the longest tail of it under the project's root. A kept
    experiment resumed on another machine or from another worktree names the files of the
    checkout it started in (``/work/bg2/docs/...`` -> ``<here>/docs/...``); a path found
    nowhere stays as it was, and the launcher says it cannot read it."""
    if key not in PATH_FIELDS or not isinstance(value, str) or os.path.exists(value):
        return value
    parts = Path(value).parts
    for i in range(1, len(parts)):
        tail = PROJECT.joinpath(*parts[i:])
        if tail.exists():
            return str(tail)
    return value


def _check_base(path: str, where: str, block: Any) -> dict[str, Any]:
    block = _mapping(path, where, block)
    for key in block:
        _check_field(path, where, key)
        if key in BUDGET_FIELDS:
            raise _err(path, f"field {key!r} in {where} belongs in budget")
    return {k: _absolute(k, v) for k, v in block.items()}


def _check_grid(path: str, where: str, block: Any) -> dict[str, list]:
    block = _mapping(path, where, block)
    for key, values in block.items():
        if key != ARM:  # names an arm (checked against arms: once the scale is merged)
            _check_field(path, where, key)
        if not isinstance(values, list) or not values:
            raise _err(path, f"grid field {key!r} in {where} must be a non-empty list of "
                             f"values, got {values!r}")
        seen = set()
        for v in values:  # a repeated value would run the same trials twice
            text = json.dumps(_plain(v), sort_keys=True, default=str)
            if text in seen:
                raise _err(path, f"grid field {key!r} in {where} lists {v!r} twice")
            seen.add(text)
    return {k: [_absolute(k, v) for v in vs] for k, vs in block.items()}


def _check_budget(path: str, where: str, block: Any) -> dict[str, Any]:
    block = _mapping(path, where, block)
    for key in block:
        allowed = f"allowed: {', '.join(BUDGET_FIELDS)}"
        if key in FIELDS and key not in BUDGET_FIELDS:
            raise _err(path, f"field {key!r} in {where} is not a budget field (it belongs in "
                             f"base); {allowed}")
        if key not in BUDGET_FIELDS:
            raise _err(path, f"unknown budget key {key!r} in {where}"
                             f"{_hint(key, BUDGET_FIELDS)}; {allowed}")
    return block


def _seeds(path: str, where: str, value: Any) -> list[int]:
    """``[0, 1, 2]``, ``"0-4"``, ``"0-3,8"`` or ``7`` -> a list of distinct seeds."""
    bad = _err(path, f"{where} must be a list of integers or a range like 0-4, got {value!r}")
    if isinstance(value, bool):
        raise bad
    if isinstance(value, int):
        return [value]
    if isinstance(value, str):
        seeds = []
        for part in [p.strip() for p in value.split(",") if p.strip()]:
            m = _SEED_RANGE.match(part)
            if not m or (m[2] is not None and int(m[2]) < int(m[1])):
                raise bad
            seeds += list(range(int(m[1]), int(m[2] or m[1]) + 1))
    elif isinstance(value, list) and all(isinstance(s, int) and not isinstance(s, bool)
                                         for s in value):
        seeds = list(value)
    else:
        raise bad
    dup = [s for i, s in enumerate(seeds) if s in seeds[:i]]
    if dup:
        raise _err(path, f"{where} lists seed {dup[0]} twice")
    return seeds


def _check_scales(path: str, value: Any) -> dict[str, dict[str, Any]]:
    """Every scale block checked, not only the one asked for: a typo in the cluster block
    shows up in the laptop run that precedes it."""
    scales = {}
    for scale, block in _mapping(path, "scales", value).items():
        if scale not in SCALES:
            raise _err(path, f"unknown scale {scale!r} in scales{_hint(scale, SCALES)}; "
                             f"allowed: {', '.join(SCALES)}")
        block = _mapping(path, f"scales.{scale}", block)
        for key in block:
            if key not in SCALE_KEYS:
                raise _err(path, f"unknown key {key!r} in scales.{scale}"
                                 f"{_hint(key, SCALE_KEYS)}; allowed: {', '.join(SCALE_KEYS)}")
        scales[scale] = _check_blocks(path, block, f"scales.{scale}.")
    return scales


def _check_blocks(path: str, data: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The base/grid/budget/seeds blocks of ``data`` (top level or one scale), checked."""
    out: dict[str, Any] = {
        "base": _check_base(path, prefix + "base", data.get("base")),
        "grid": _check_grid(path, prefix + "grid", data.get("grid")),
        "budget": _check_budget(path, prefix + "budget", data.get("budget")),
    }
    if data.get("seeds") is not None:
        out["seeds"] = _seeds(path, prefix + "seeds", data["seeds"])
    return out


def _check_header(path: str, data: dict[str, Any]) -> dict[str, str]:
    """Top-level keys, name, report kind, question and description."""
    for key in data:
        if key not in TOP_KEYS:
            raise _err(path, f"unknown key {key!r}{_hint(key, TOP_KEYS)}; allowed: "
                             f"{', '.join(TOP_KEYS)}")
    name = data.get("name")
    if name is None or name == "":
        raise _err(path, "missing name (e.g. name: network-scaling)")
    if not isinstance(name, str) or not _NAME.match(name):
        raise _err(path, f"name must be letters, digits, '.', '_' or '-', got {name!r}")
    report = data.get("report") or "generic"  # left empty: the default
    if report not in REPORTS:
        raise _err(path, f"unknown report {report!r}{_hint(str(report), REPORTS)}; "
                         f"allowed: {', '.join(REPORTS)}")
    texts = {}
    for key in ("question", "description"):
        value = data.get(key) or ""
        if not isinstance(value, str):
            raise _err(path, f"{key} must be text, got {value!r}")
        texts[key] = value.strip()
    texts["question"] = " ".join(texts["question"].split())  # one line in the report
    order = data.get("order") or "grid"
    if order not in ORDERS:
        raise _err(path, f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    return {"name": name, "report": report, **texts, "order": order}


def _check_arms(path: str, value: Any) -> dict[str, dict[str, Any]]:
    """``arms:``: name -> launcher fields, each checked as a ``base`` block is."""
    arms = {}
    for name, block in _mapping(path, "arms", value).items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise _err(path, f"arm name must be letters, digits, '.', '_' or '-', got {name!r}")
        arms[name] = _check_base(path, f"arms.{name}", block)
    return arms


def _check_arm_grid(path: str, merged: dict[str, Any], arms: dict[str, dict]) -> None:
    """The grid's ``arm`` values name arms, and no arm sets a field the grid also varies."""
    grid = merged["grid"]
    if ARM not in grid:
        if arms:
            raise _err(path, f"arms: {', '.join(arms)} defined but the grid has no 'arm' "
                             f"field to run them (e.g. grid: {{arm: [{next(iter(arms))}]}})")
        return
    for name in grid[ARM]:
        if name not in arms:
            raise _err(path, f"grid field 'arm' names {name!r}, which arms: does not define"
                             f"{_hint(str(name), list(arms))}")
        clash = [k for k in arms[name] if k in grid]
        if clash:
            raise _err(path, f"arm {name!r} sets {clash[0]!r}, which the grid also varies")


def _merge(top: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    """The scale's ``block`` over the ``top`` level (the rules in the module docstring)."""
    return {
        "base": {**top["base"], **block.get("base", {})},
        "grid": {**top["grid"], **block.get("grid", {})},
        "budget": {**top["budget"], **block.get("budget", {})},
        "seeds": block.get("seeds", top.get("seeds", [])),
    }


def load_experiment(path: str | os.PathLike, scale: str | None) -> ExperimentSpec:
    """The experiment in YAML file ``path`` at ``scale`` (None: the top level as written,
    no scale block applied); ExperimentError (one line) for anything wrong with the file.
    Values are checked by :func:`check_trials`."""
    path = os.fspath(path)
    data = _read_yaml(path)
    header = _check_header(path, data)
    top = _check_blocks(path, data, "")
    scales = _check_scales(path, data.get("scales"))
    if scale is None:
        scales, scale = {"": {}}, ""
    if scale not in scales:
        has = ", ".join(scales) if scales else "no scales"
        raise _err(path, f"unknown scale {scale!r}; this experiment has {has}")
    merged = _merge(top, scales[scale])
    arms = _check_arms(path, data.get("arms"))
    _check_arm_grid(path, merged, arms)
    if not merged["seeds"]:
        where = f" at scale {scale!r}" if scale else ""
        raise _err(path, f"no seeds{where} (e.g. seeds: [0, 1, 2] or seeds: 0-4)")
    return ExperimentSpec(**header, **merged, arms=arms, scale=scale, source=path)


# ---- trials ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Trial:
    """One run of the experiment: a point of the grid with one seed."""

    trial_id: str  # t000, t001, ...: short, stable, unique in the experiment, a file name
    label: str  # readable: "hidden=32x16 strategy=cmaes seed=0"
    params: dict  # this trial's grid values
    seed: int
    overrides: dict  # the launcher fields of this run: base, budget, params, seed


def _show(value: Any) -> str:
    """A grid value as a label shows it: ``[32, 16]`` -> ``32x16``."""
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return "x".join(str(v) for v in value)
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None:
        return "none"
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def trials(spec: ExperimentSpec) -> list[Trial]:
    """The grid's cartesian product (fields in file order, the first slowest) times the
    seeds, numbered in the order they run: the seeds fastest (``order: grid``) or slowest
    (``order: seeds``)."""
    points = list(itertools.product(*spec.grid.values()))  # [()] for an empty grid
    n = len(points) * len(spec.seeds)
    width = max(3, len(str(n - 1)))
    pairs = (itertools.product(points, spec.seeds) if spec.order == "grid" else
             ((p, s) for s in spec.seeds for p in points))
    out = []
    for i, (point, seed) in enumerate(pairs):
        params = dict(zip(spec.grid, copy.deepcopy(point), strict=True))
        label = " ".join([f"{k}={_show(v)}" for k, v in params.items()] + [f"seed={seed}"])
        arm = spec.arms.get(params[ARM], {}) if ARM in params else {}
        fields = {k: v for k, v in params.items() if k != ARM}
        overrides = {**copy.deepcopy(spec.base), **copy.deepcopy(spec.budget),
                     **copy.deepcopy(arm), **copy.deepcopy(fields), "seed": seed}
        out.append(Trial(f"t{i:0{width}d}", label, params, seed, overrides))
    return out


def trial_config(trial: Trial, out: str, namespace: str) -> Config:
    """The resolved launcher config of ``trial`` writing to run directory ``out``.
    Raises ConfigError (one line) for a value the launcher refuses."""
    fields = {k: relocated(k, v) for k, v in trial.overrides.items()}
    return resolve(from_dict({**fields, "out": out, "namespace": namespace, "quiet": True}))


def check_trials(spec: ExperimentSpec) -> None:
    """Resolve every trial's config once; ExperimentError naming the trial for the first
    that does not. Nothing is written: ``resolve`` only derives paths under ``out`` (which
    need not exist) and looks the environment up."""
    dummy = os.path.join(tempfile.gettempdir(), "islands-experiment-check")
    for t in trials(spec):
        try:
            trial_config(t, os.path.join(dummy, t.trial_id), f"check-{t.trial_id}")
        except ConfigError as e:
            raise ExperimentError(f"trial {t.label}: {e}") from None
