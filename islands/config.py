"""The run configuration: one flat dataclass, the single place for defaults.

Every field is a command-line flag (``--migration-interval`` for ``migration_interval``) and a
YAML key (``--config run.yaml``); the one-line ``help`` of each field is its documentation.
Precedence: field default < per-environment table (:mod:`islands.envdefaults`, only for
fields left unset) < YAML file < command line.

``resolve`` fills the environment defaults and checks everything that can be checked
without Ray (unknown names, non-positive sizes, unknown YAML keys, environment existence and
observation shape), raising :class:`ConfigError` with a one-line message; the launcher
turns that into exit code 2 before creating anything. ``to_yaml_dict`` of a resolved config
is what ``config.yaml`` in a run directory holds, and feeding it back with ``--config``
gives the same resolved config.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

from . import topology as topo
from .envdefaults import env_defaults

STRATEGY_NAMES = ("cmaes", "sep-cmaes", "openai-es", "ga")
POLICY_NAMES = ("mlp", "cnn", "neuromod")
BACKENDS = ("auto", "envpool", "gymnasium", "torch")
DEVICES = ("auto", "cpu", "cuda")
# Keys an entry of ``island_specs`` may set (all optional).
ISLAND_SPEC_KEYS = (
    "strategy", "popsize", "sigma", "options", "episodes", "num_cpus", "num_gpus",
    "resources", "slowdown_s",
)


class ConfigError(ValueError):
    """Bad user input; the message is one line naming the problem."""


def _opt(default: Any, help: str, kind: str = "str", choices: tuple[str, ...] | None = None,
         metavar: str | None = None) -> Any:
    meta = {"help": help, "kind": kind, "choices": choices, "metavar": metavar}
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class Config:
    # ---- what to solve ----------------------------------------------------------------
    config: str | None = _opt(
        None, "YAML file setting any of these fields by name; command-line flags override it",
        metavar="FILE.yaml")
    env: str = _opt("CartPole-v1", "environment id (Gymnasium or EnvPool name)", metavar="ID")
    env_module: str | None = _opt(
        None, "module to import in every process first (registers custom Gymnasium envs)",
        metavar="MODULE")
    env_kwargs: dict = _opt({}, "keyword arguments for the environment, as JSON", "json",
                            metavar="JSON")
    backend: str = _opt(
        "auto", "evaluator: envpool, gymnasium, torch, or auto (EnvPool if it has the env)",
        choices=BACKENDS)
    target: Any = _opt(
        "auto", "stop when the best genome's test mean reaches this; auto: the env table's "
        "solved score, none: never", "target", metavar="F|auto|none")
    test_episodes: int = _opt(100, "episodes of the test that validates a candidate (and the "
                              "final test), on seeds disjoint from training", "int", metavar="N")
    test_max_episode_steps: int | None = _opt(
        None, "episode limit of the test; default: the environment's own limit (the standard "
        "task)", "optint", metavar="N")
    # ---- the islands --------------------------------------------------------------------
    islands: int | None = _opt(None, "number of islands (default: len(island_specs), else 4)",
                               "optint", metavar="N")
    strategy: str | None = _opt(
        None, "strategy per island, comma list assigned round-robin (cmaes, sep-cmaes, "
        "openai-es, ga); default: env table", metavar="NAMES")
    strategy_options: dict = _opt({}, "extra keyword arguments for every island's strategy, as "
                                  "JSON", "json", metavar="JSON")
    island_specs: list | None = _opt(
        None, "per-island list of {strategy, popsize, sigma, options, episodes, num_cpus, "
        "num_gpus, resources, slowdown_s} (YAML list, or JSON)", "specs", metavar="JSON")
    policy: str | None = _opt(None, "policy network: mlp, cnn or neuromod; default: env table",
                              choices=POLICY_NAMES)
    hidden: list | None = _opt(
        None, "hidden layer sizes, e.g. 64,64 (neuromod: one size); default: env table",
        "hidden", metavar="H1,H2")
    policy_options: dict = _opt({}, "extra keyword arguments for the policy, as JSON", "json",
                                metavar="JSON")
    popsize: int | None = _opt(None, "population size per island; default: env table",
                               "optint", metavar="N")
    sigma: float | None = _opt(
        None, "initial step size / mutation strength for every island; default: env table "
        "for its strategy, else the strategy's own", "optfloat", metavar="S")
    episodes: int | None = _opt(None, "episodes per fitness evaluation; default: env table",
                                "optint", metavar="N")
    max_episode_steps: int | None = _opt(
        None, "episode step limit during training; default: env table", "optint",
        metavar="N")
    obs_norm: bool | None = _opt(
        None, "observation normalization with statistics merged across islands (on/off); "
        "default: env table", "optbool", metavar="on|off")
    # ---- migration ----------------------------------------------------------------------
    topology: str = _opt("ring", "migration graph: ring, full, random (new random targets each "
                         "round), edges (see --edges)", choices=topo.KINDS)
    topology_degree: int = _opt(1, "targets per island per round for --topology random", "int",
                                metavar="K")
    edges: str | None = _opt(None, "explicit migration edges for --topology edges, e.g. "
                             "0>1,1>2,2>0 (YAML: list of [src, dst])", "edges", metavar="EDGES")
    migration_interval: int = _opt(5, "generations of an island between its emigrations",
                                   "int", metavar="G")
    migrants: int = _opt(2, "genomes an island sends per migration (its best), 0: isolated",
                         "int", metavar="K")
    obs_sync_interval: int = _opt(5, "generations between pushes of merged observation "
                                  "statistics to an island", "int", metavar="G")
    gens_per_call: int = _opt(1, "generations an island runs per call (one report each)",
                              "int", metavar="K")
    # ---- when to stop -------------------------------------------------------------------
    generations: int | None = _opt(None, "generations per island at most; default: env table",
                                   "optint", metavar="N")
    time_budget: float | None = _opt(None, "wall-clock seconds of evolution at most",
                                     "optfloat", metavar="SECONDS")
    # ---- where it runs ------------------------------------------------------------------
    seed: int = _opt(0, "random seed of the run (islands derive theirs from it)", "int",
                     metavar="N")
    cpus_per_island: float | None = _opt(
        None, "CPUs per island; default: the cluster's CPUs shared equally", "optfloat",
        metavar="C")
    gpus_per_island: float = _opt(0.0, "GPUs per island (fractions share a GPU); on a "
                                  "cluster with gpu_node/cpu_node resources, GPU islands go "
                                  "to gpu_node nodes, CPU islands to cpu_node nodes", "float",
                                  metavar="G")
    resources_per_island: dict = _opt(
        {}, "custom Ray resources per island, e.g. gpu_node=1 or JSON", "resources",
        metavar="NAME=AMOUNT")
    device: str = _opt("auto", "policy device: auto (CUDA when the island got a GPU), cpu, "
                       "cuda", choices=DEVICES)
    address: str | None = _opt(
        None, "Ray cluster to join (auto: the running one); default: RAY_ADDRESS, else start "
        "a local Ray", metavar="ADDR")
    namespace: str = _opt("islands", "Ray namespace of the named actors (island-00, ..., "
                          "coordinator)", metavar="NS")
    dashboard: bool = _opt(False, "start the Ray dashboard with a local Ray (on/off)", "bool",
                           metavar="on|off")
    # ---- output -------------------------------------------------------------------------
    out: str | None = _opt(None, "run directory; default: runs/<env>-<timestamp>", metavar="DIR")
    quiet: bool = _opt(False, "no live table or progress lines (on/off)", "bool",
                       metavar="on|off")
    log_interval: float = _opt(5.0, "seconds between progress lines when stdout is not a "
                               "terminal", "float", metavar="SECONDS")
    # ---- fault tolerance ----------------------------------------------------------------
    checkpoint_interval: int = _opt(
        10, "generations of an island between its checkpoints (0: by time only)", "int",
        metavar="G")
    checkpoint_seconds: float = _opt(
        60.0, "seconds between checkpoints of an island or the coordinator at most (0: by "
        "generations only); a final one is written at the end of the run", "float",
        metavar="SECONDS")
    checkpoint_uri: str | None = _opt(
        None, "where checkpoints go: a directory (on a shared filesystem for clusters) or a "
        "pyarrow.fs URI such as s3://bucket/run; default: DIR/checkpoints", metavar="URI")
    resume: str | None = _opt(
        None, "continue the run in DIR from its checkpoints (config from DIR/config.yaml; "
        "flags given override it, e.g. --time-budget)", metavar="DIR")
    max_restarts: int = _opt(
        -1, "restarts of a dead island or coordinator actor (-1: unlimited, 0: none); a "
        "restarted actor reloads its last checkpoint", "int", metavar="N")
    debug_exit_island: int | None = _opt(
        None, "debug (fault tests): this island exits its process once, at "
        "--debug-exit-after-gen", "optint", metavar="I")
    debug_exit_after_gen: int | None = _opt(
        None, "debug (fault tests): generation at which --debug-exit-island exits",
        "optint", metavar="G")

    # ------------------------------------------------------------------------------------
    def to_yaml_dict(self) -> dict[str, Any]:
        """Plain values for ``config.yaml``: everything but ``config`` and ``out`` (the run
        directory is where the file lives; a rerun gets a new one)."""
        d = dataclasses.asdict(self)
        d.pop("config")
        d.pop("out")
        d.pop("resume")
        return d

    def eval_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``envs.make_evaluator`` shared by every island."""
        return dict(
            env_id=self.env, backend=self.backend, policy=self.policy,
            policy_options=policy_options(self), max_episode_steps=self.max_episode_steps,
            obs_norm=bool(self.obs_norm), env_kwargs=dict(self.env_kwargs) or None,
            env_module=self.env_module,
        )


FIELDS = {f.name: f for f in dataclasses.fields(Config)}


# ---- value parsing (CLI strings and YAML values alike) -----------------------------------
_NONE = ("none", "null", "")
_TRUE = ("on", "true", "yes", "1")
_FALSE = ("off", "false", "no", "0")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def coerce(name: str, value: Any) -> Any:
    """Turn a CLI string or YAML value for field ``name`` into its typed value."""
    f = FIELDS[name]
    kind, choices = f.metadata["kind"], f.metadata["choices"]
    where = f"{_flag(name)}"

    def bad(expect: str) -> ConfigError:
        return ConfigError(f"{where}: expected {expect}, got {value!r}")

    def as_int(v) -> int:
        if isinstance(v, bool):
            raise bad("an integer")
        if isinstance(v, int):
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)
        try:
            return int(str(v).strip())
        except ValueError:
            raise bad("an integer") from None

    def as_float(v) -> float:
        if isinstance(v, bool):
            raise bad("a number")
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise bad("a number") from None
        if math.isnan(x):
            raise bad("a number")
        return x

    def as_bool(v) -> bool:
        if isinstance(v, bool):
            return v
        s = str(v).strip().lower()
        if s in _TRUE:
            return True
        if s in _FALSE:
            return False
        raise bad("on or off")

    def is_none(v) -> bool:
        return v is None or (isinstance(v, str) and v.strip().lower() in _NONE)

    def as_json(v, want: type):
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except json.JSONDecodeError as e:
                raise bad(f"JSON ({e.msg})") from None
        if not isinstance(v, want):
            raise bad("a JSON object" if want is dict else "a JSON list")
        return v

    if kind == "str":
        if value is None and f.default is None:
            return None
        if not isinstance(value, str):
            raise bad("a string")
        value = value.strip()
        if choices and value not in choices:
            raise ConfigError(f"{where}: unknown value {value!r}; choose one of "
                              f"{', '.join(choices)}")
        if f.default is None and not value:
            return None
        return value
    if kind == "int":
        return as_int(value)
    if kind == "optint":
        return None if is_none(value) or str(value).lower() == "auto" else as_int(value)
    if kind == "float":
        return as_float(value)
    if kind == "optfloat":
        return None if is_none(value) or str(value).lower() == "auto" else as_float(value)
    if kind == "bool":
        return as_bool(value)
    if kind == "optbool":
        return None if is_none(value) or str(value).lower() == "auto" else as_bool(value)
    if kind == "target":
        if value is None or (isinstance(value, str) and value.strip().lower() in _NONE):
            return None
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        return as_float(value)
    if kind == "json":
        return dict(as_json(value, dict)) if value is not None else {}
    if kind == "specs":
        if is_none(value):
            return None
        specs = as_json(value, list)
        out = []
        for i, s in enumerate(specs):
            if not isinstance(s, dict):
                raise ConfigError(f"{where}: entry {i} must be a mapping, got {s!r}")
            unknown = sorted(set(s) - set(ISLAND_SPEC_KEYS))
            if unknown:
                raise ConfigError(f"{where}: entry {i} has unknown key {unknown[0]!r}; "
                                  f"allowed: {', '.join(ISLAND_SPEC_KEYS)}")
            out.append(dict(s))
        return out
    if kind == "hidden":
        if is_none(value) or str(value).lower() == "auto":
            return None
        items = value if isinstance(value, (list, tuple)) else (
            [value] if isinstance(value, int) else str(value).replace(" ", "").split(","))
        try:
            sizes = [as_int(h) for h in items if h != ""]
        except ConfigError:
            raise bad("comma-separated layer sizes like 64,64") from None
        if any(h < 1 for h in sizes):
            raise ConfigError(f"{where}: layer sizes must be positive, got {value!r}")
        return sizes
    if kind == "edges":
        if is_none(value):
            return None
        try:
            return topo.format_edges(topo.parse_edges(value))
        except ValueError as e:
            raise ConfigError(f"{where}: {e}") from None
    if kind == "resources":
        if value is None:
            return {}
        if isinstance(value, str) and not value.strip().startswith("{"):
            out = {}
            for part in [p for p in value.split(",") if p.strip()]:
                k, sep, v = part.partition("=")
                if not sep or not k.strip():
                    raise bad("NAME=AMOUNT[,NAME=AMOUNT]")
                out[k.strip()] = as_float(v)
            return out
        d = as_json(value, dict)
        return {str(k): as_float(v) for k, v in d.items()}
    raise AssertionError(kind)


# ---- argparse and YAML -------------------------------------------------------------------
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
        if meta["choices"]:
            kw["metavar"] = "{" + ",".join(meta["choices"]) + "}"
        if meta["kind"] == "bool":
            kw.update(nargs="?", const="on")  # `--quiet` alone means on
        p.add_argument(_flag(name), **kw)
        if "default" not in meta["help"]:
            p._option_string_actions[_flag(name)].help += f" (default: {_show(default)})"
    return p


def _show(v: Any) -> str:
    if v is None:
        return "unset"
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def load_yaml(path: str) -> dict[str, Any]:
    import yaml

    try:
        with open(path) as fh:
            data = yaml.safe_load(fh)
    except FileNotFoundError:
        raise ConfigError(f"config file {path!r} not found") from None
    except OSError as e:
        raise ConfigError(f"cannot read config file {path!r}: {e.strerror}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"malformed YAML in {path}{where}: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must be a mapping of field: value")
    for k in data:
        if k not in FIELDS or k in ("config", "resume"):
            close = difflib.get_close_matches(str(k), list(FIELDS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"unknown config key {k!r} in {path}{hint}")
    return data


def parse_args(argv: list[str] | None = None) -> Config:
    """Command line (and its --config YAML) -> unresolved Config. Raises ConfigError; argparse
    itself exits 2 on malformed flags."""
    ns = vars(build_parser().parse_args(argv))
    values: dict[str, Any] = {}
    if ns.get("resume"):
        run_dir = str(ns["resume"])
        if ns.get("config"):
            raise ConfigError("--resume takes the config from the run directory; drop --config")
        check_run_dir(run_dir)
        if ns.get("out") and os.path.abspath(ns["out"]) != os.path.abspath(run_dir):
            raise ConfigError("--resume continues in the run directory; drop --out")
        for k, v in load_yaml(os.path.join(run_dir, "config.yaml")).items():
            values[k] = coerce(k, v)
        values["out"] = run_dir
    if ns.get("config"):
        for k, v in load_yaml(ns["config"]).items():
            values[k] = coerce(k, v)
    for k, v in ns.items():
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
            close = difflib.get_close_matches(str(k), list(FIELDS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"unknown config key {k!r}{hint}")
    return Config(**{k: coerce(k, v) for k, v in d.items()})


# ---- resolution and validation -----------------------------------------------------------
def policy_options(cfg: Config) -> dict[str, Any]:
    """``hidden`` in the form each policy kind takes, plus ``policy_options``."""
    opts = dict(cfg.policy_options)
    if cfg.hidden is not None and "hidden" not in opts:
        if cfg.policy == "neuromod":
            opts["hidden"] = int(cfg.hidden[0])
        else:
            opts["hidden"] = list(cfg.hidden)
    return opts


def strategies_of(cfg: Config) -> list[str]:
    return [s.strip() for s in (cfg.strategy or "").split(",") if s.strip()]


def resolve(cfg: Config, check_env: bool = True) -> Config:
    """Fill per-env defaults and validate; returns a new Config. Raises ConfigError."""
    c = dataclasses.replace(cfg)
    _import_env_module(c.env_module)
    if check_env:
        check_env_id(c.env, c.backend, c.env_module)
    row = env_defaults(c.env)
    for k in ("strategy", "policy", "popsize", "episodes", "max_episode_steps", "obs_norm",
              "generations"):
        if getattr(c, k) is None:
            setattr(c, k, row[k])
    if c.hidden is None:
        c.hidden = list(row["hidden"]) if row["policy"] == c.policy else None
    if c.target == "auto":
        c.target = row["target"]
    if c.island_specs is not None and c.islands is None:
        c.islands = len(c.island_specs)
    if c.islands is None:
        c.islands = 4

    def positive(name: str, allow_none: bool = True, zero_ok: bool = False):
        v = getattr(c, name)
        if v is None and allow_none:
            return
        if v is None or (v < 0 if zero_ok else v <= 0):
            raise ConfigError(f"{_flag(name)} must be {'non-negative' if zero_ok else 'positive'}"
                              f", got {v}")

    for name in ("islands", "popsize", "episodes", "max_episode_steps", "generations",
                 "time_budget", "test_episodes", "test_max_episode_steps", "migration_interval",
                 "obs_sync_interval", "gens_per_call", "topology_degree", "cpus_per_island",
                 "sigma", "log_interval"):
        positive(name)
    positive("migrants", zero_ok=True)
    positive("checkpoint_interval", zero_ok=True)
    positive("checkpoint_seconds", zero_ok=True)
    if c.max_restarts < -1:
        raise ConfigError(f"--max-restarts must be -1 (unlimited) or more, got {c.max_restarts}")
    if (c.debug_exit_island is None) != (c.debug_exit_after_gen is None):
        raise ConfigError("--debug-exit-island and --debug-exit-after-gen go together")
    if c.debug_exit_island is not None and not 0 <= c.debug_exit_island < c.islands:
        raise ConfigError(f"--debug-exit-island must name an island below {c.islands}, "
                          f"got {c.debug_exit_island}")
    positive("gpus_per_island", zero_ok=True)
    if c.popsize is not None and c.popsize < 2:
        raise ConfigError(f"--popsize must be at least 2, got {c.popsize}")
    if c.island_specs is not None and len(c.island_specs) != c.islands:
        raise ConfigError(f"--islands is {c.islands} but island_specs lists "
                          f"{len(c.island_specs)} islands")
    names = strategies_of(c)
    if not names:
        raise ConfigError("--strategy: no strategy named")
    for spec in c.island_specs or []:
        if spec.get("strategy") is not None:
            names.append(str(spec["strategy"]))
    for s in names:
        if s not in STRATEGY_NAMES:
            close = difflib.get_close_matches(s, STRATEGY_NAMES, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"unknown strategy {s!r}{hint} (choose from "
                              f"{', '.join(STRATEGY_NAMES)})")
    for i, spec in enumerate(c.island_specs or []):
        for k in ("popsize", "episodes"):
            if k in spec and (not isinstance(spec[k], int) or spec[k] < (2 if k == "popsize"
                                                                           else 1)):
                raise ConfigError(f"island_specs[{i}].{k} must be a positive integer, "
                                  f"got {spec[k]!r}")
        for k in ("sigma", "num_cpus"):
            if k in spec and not (isinstance(spec[k], (int, float)) and spec[k] > 0):
                raise ConfigError(f"island_specs[{i}].{k} must be positive, got {spec[k]!r}")
        for k in ("num_gpus", "slowdown_s"):
            if k in spec and not (isinstance(spec[k], (int, float)) and spec[k] >= 0):
                raise ConfigError(f"island_specs[{i}].{k} must be non-negative, "
                                  f"got {spec[k]!r}")
        for k in ("options", "resources"):
            if k in spec and not isinstance(spec[k], dict):
                raise ConfigError(f"island_specs[{i}].{k} must be a mapping, got {spec[k]!r}")
    if c.policy not in POLICY_NAMES:
        raise ConfigError(f"unknown policy {c.policy!r} (choose from {', '.join(POLICY_NAMES)})")
    if c.policy == "neuromod" and c.hidden is not None and len(c.hidden) != 1:
        raise ConfigError(f"--hidden: neuromod takes one hidden size, got {c.hidden}")
    if c.topology == "edges":
        if not c.edges:
            raise ConfigError("--topology edges needs --edges, e.g. 0>1,1>0")
    elif c.edges:
        raise ConfigError(f"--edges is only used with --topology edges (got {c.topology})")
    try:
        topo.Topology(c.topology, c.islands, c.topology_degree, c.edges)
    except ValueError as e:
        raise ConfigError(f"--topology: {e}") from None
    if c.device == "cuda" and c.gpus_per_island == 0 and not any(
            s.get("num_gpus") for s in c.island_specs or []):
        raise ConfigError("--device cuda needs --gpus-per-island > 0 (islands get GPUs "
                          "through Ray)")
    if check_env:
        obs_shape = observation_shape(c.env, c.backend, c.env_kwargs, c.env_module)
        if c.policy == "cnn" and len(obs_shape) != 3:
            raise ConfigError(f"--policy cnn needs image observations (C, H, W) but {c.env} "
                              f"has observations of shape {tuple(obs_shape)}; use mlp")
    return c


def _import_env_module(name: str | None) -> None:
    if not name:
        return
    import importlib

    try:
        importlib.import_module(name)
    except ImportError as e:
        raise ConfigError(f"--env-module {name!r} cannot be imported: {e}") from None


def check_env_id(env_id: str, backend: str, env_module: str | None = None) -> str:
    """The backend that will run ``env_id``; ConfigError (with close matches) when no
    backend in reach knows it."""
    from envs.spaces import pick_backend

    try:
        return pick_backend(env_id, backend, env_module)
    except ValueError as e:
        raise ConfigError(str(e).splitlines()[0]) from None


def observation_shape(env_id: str, backend: str, env_kwargs: dict,
                      env_module: str | None = None) -> tuple[int, ...]:
    """The env's observation shape as its backend presents it."""
    from envs.spaces import env_spaces

    try:
        shape, _ = env_spaces(env_id, backend, env_kwargs or None, env_module)
    except Exception as e:  # bad env_kwargs show up here, before anything is created
        msg = str(e).strip().splitlines()
        raise ConfigError(f"cannot create environment {env_id!r}: {type(e).__name__}"
                          f"{': ' + msg[0] if msg else ''}") from None
    return shape


def default_out_dir(env_id: str, now: float | None = None) -> str:
    import time

    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return os.path.join("runs", f"{env_id.replace('/', '_')}-{stamp}")
