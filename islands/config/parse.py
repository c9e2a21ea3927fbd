"""Command line, YAML file and plain dicts -> an unresolved :class:`Config`.

Precedence: field default < YAML file (``--config``, or the run directory's ``config.yaml``
with ``--resume``) < command line. Every value goes through :func:`coerce`.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import os
from typing import Any

from .fieldtypes import coerce
from .schema import FIELDS, Config, ConfigError, flag


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, no usage dump
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(prog: str = "python -m islands.launch") -> argparse.ArgumentParser:
    p = _Parser(
        prog=prog,
        description="Island-model neuroevolution on Ray: N islands, each a strategy with its "
        "own evaluator, exchanging elite genomes asynchronously. Every flag can also be set "
        "in the --config YAML file under its field name (dashes -> underscores).",
        epilog="Per-environment defaults: islands/envdefaults.py. Run outputs: config.yaml, "
        "metrics.parquet, summary.json, solution.npz/.json, fitness.png.",
    )
    for name, f in FIELDS.items():
        meta = f.metadata
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        kw: dict[str, Any] = dict(dest=name, help=meta["help"], default=argparse.SUPPRESS,
                                  metavar=meta["metavar"])
        if meta["choices"] and not meta["metavar"]:
            kw["metavar"] = "{" + ",".join(meta["choices"]) + "}"
        if meta["kind"] == "bool":
            kw.update(nargs="?", const="on")  # `--quiet` alone means on
        if "default" not in meta["help"]:
            kw["help"] += f" (default: {_show(default)})"
        p.add_argument(flag(name), **kw)
    return p


def _show(v: Any) -> str:
    if v is None:
        return "unset"
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def _unknown_key(k: Any, where: str) -> ConfigError:
    close = difflib.get_close_matches(str(k), list(FIELDS), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"unknown config key {k!r}{where}{hint}")


def yaml_problem(e: Exception) -> tuple[int | None, int | None, str]:
    """(line, column, problem) of a PyYAML error, 1-based; None where it has no mark."""
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    if mark is None:
        return None, None, problem
    return mark.line + 1, mark.column + 1, problem


def load_yaml(path: str) -> dict[str, Any]:
    """The mapping in YAML file ``path``, its keys checked against the fields (values are
    not coerced yet)."""
    import yaml

    try:
        with open(path) as fh:
            data = yaml.safe_load(fh)
    except FileNotFoundError:
        raise ConfigError(f"config file {path!r} not found") from None
    except OSError as e:
        raise ConfigError(f"cannot read config file {path!r}: {e.strerror}") from None
    except yaml.YAMLError as e:
        line, _, problem = yaml_problem(e)
        where = f" at line {line}" if line is not None else ""
        raise ConfigError(f"malformed YAML in {path}{where}: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must be a mapping of field: value")
    for k in data:
        if k not in FIELDS or k in ("config", "resume"):
            raise _unknown_key(k, f" in {path}")
    return data


def parse_args(argv: list[str] | None = None) -> Config:
    """Command line (and its --config YAML) -> unresolved Config. Raises ConfigError; argparse
    itself exits 2 on malformed flags."""
    return from_options(vars(build_parser().parse_args(argv)))


def from_options(options: dict[str, Any]) -> Config:
    """Options by field name (the command line's, or ``islands.run``'s keywords) -> an
    unresolved Config. ``config`` (a YAML file) and ``resume`` (a run directory, whose
    config.yaml it continues) are read first, as on the command line; the other options
    override them. Unknown names raise ConfigError with the closest field."""
    for k in options:
        if k not in FIELDS:
            raise _unknown_key(k, "")
    values: dict[str, Any] = {}
    if options.get("resume"):
        run_dir = str(options["resume"])
        if options.get("config"):
            raise ConfigError("--resume takes the config from the run directory; drop --config")
        check_run_dir(run_dir)
        out = options.get("out")
        if out and os.path.abspath(out) != os.path.abspath(run_dir):
            raise ConfigError("--resume continues in the run directory; drop --out")
        for k, v in load_yaml(os.path.join(run_dir, "config.yaml")).items():
            values[k] = coerce(k, v)
        values["out"] = run_dir
    if options.get("config"):
        for k, v in load_yaml(str(options["config"])).items():
            values[k] = coerce(k, v)
    for k, v in options.items():
        values[k] = coerce(k, v)
    return Config(**values)


def check_run_dir(path: str) -> None:
    """ConfigError unless ``path`` is a run directory with checkpoints to resume from."""
    if not os.path.isdir(path):
        raise ConfigError(f"--resume: {path!r} is not a directory")
    if not os.path.isfile(os.path.join(path, "config.yaml")):
        raise ConfigError(f"--resume: {path!r} is not a run directory (no config.yaml)")


def from_dict(d: dict[str, Any]) -> Config:
    """A Config from plain values (Python API, tests); same checks as YAML keys."""
    for k in d:
        if k not in FIELDS:
            raise _unknown_key(k, "")
    return Config(**{k: coerce(k, v) for k, v in d.items()})


def default_out_dir(env_id: str, now: float | None = None) -> str:
    """``runs/<env>-<local timestamp>``: where a run goes without ``--out``."""
    import time

    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return os.path.join("runs", f"{env_id.replace('/', '_')}-{stamp}")
