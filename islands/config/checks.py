"""Checks of a config whose environment defaults are filled: sizes, names, island specs,
topology and device. Each raises :class:`ConfigError` with one line naming the problem; none
creates an environment."""

from __future__ import annotations

import difflib
import importlib.util
import math
import os

from envs import BACKENDS
from policies import POLICIES, check_options

from .. import topology as topo
from ..island.restarts import RESTART_POLICIES
from ..strategies import STRATEGIES
from .schema import Config, ConfigError, flag, strategies_of

_POSITIVE = ("islands", "popsize", "popsize_scale", "episodes", "max_episode_steps", "generations",
             "time_budget", "max_evals", "max_episodes", "max_env_steps", "test_episodes",
             "test_max_episode_steps", "migration_interval", "obs_sync_interval",
             "gens_per_call", "topology_degree", "cpus_per_island", "eval_workers", "sigma",
             "log_interval", "restart_patience", "episodes_cap", "islands_per_process",
             "wait_for_nodes")
_NON_NEGATIVE = ("migrants", "confirm_episodes", "retest_episodes", "checkpoint_interval",
                 "checkpoint_seconds", "probe_interval", "migrant_episodes", "reward_shift")


def check(c: Config) -> None:
    """Every check below, in the order their messages take precedence."""
    check_sizes(c)
    check_strategies(c)
    check_island_specs(c)
    check_policy(c)
    check_topology(c)
    check_elastic(c)
    check_device(c)
    check_loggers(c)
    check_working_dir(c)
    check_runtime(c)


def _at_least_zero(c: Config, name: str, zero_ok: bool) -> None:
    v = getattr(c, name)
    if v is not None and (v < 0 if zero_ok else v <= 0):
        raise ConfigError(f"{flag(name)} must be {'non-negative' if zero_ok else 'positive'}, "
                          f"got {v}")


def check_sizes(c: Config) -> None:
    """Counts, sizes and intervals in range; the debug-exit flags consistent."""
    for name in _POSITIVE:
        _at_least_zero(c, name, zero_ok=False)
    for name in _NON_NEGATIVE:
        _at_least_zero(c, name, zero_ok=True)
    if c.max_restarts < -1:
        raise ConfigError(f"--max-restarts must be -1 (unlimited) or more, got {c.max_restarts}")
    if (c.debug_exit_island is None) != (c.debug_exit_after_gen is None):
        raise ConfigError("--debug-exit-island and --debug-exit-after-gen go together")
    if c.debug_exit_island is not None and not 0 <= c.debug_exit_island < c.islands:
        raise ConfigError(f"--debug-exit-island must name an island below {c.islands}, "
                          f"got {c.debug_exit_island}")
    _at_least_zero(c, "gpus_per_island", zero_ok=True)
    if c.episodes_cap is not None and c.episodes is not None and c.episodes_cap < c.episodes:
        raise ConfigError(f"--episodes-cap ({c.episodes_cap}) must be at least --episodes "
                          f"({c.episodes})")
    if c.popsize is not None and c.popsize < 2:
        raise ConfigError(f"--popsize must be at least 2, got {c.popsize}")
    if c.popsize_scale != 1 and c.popsize is None and not all(
            "popsize" in s for s in c.island_specs or [{}]):
        raise ConfigError(f"--popsize-scale {c.popsize_scale} needs a population size to "
                          f"scale: {c.env} has none in the env table; give --popsize")
    if c.island_specs is not None and len(c.island_specs) != c.islands:
        raise ConfigError(f"--islands is {c.islands} but island_specs lists "
                          f"{len(c.island_specs)} islands")


def check_strategies(c: Config) -> None:
    """Every strategy named by ``--strategy`` or an island spec is in the registry."""
    names = strategies_of(c)
    if not names:
        raise ConfigError("--strategy: no strategy named")
    names += [str(s["strategy"]) for s in c.island_specs or [] if s.get("strategy") is not None]
    known = list(STRATEGIES)
    for s in names:
        if s not in STRATEGIES:
            close = difflib.get_close_matches(s, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"unknown strategy {s!r}{hint} (choose from {', '.join(known)})")
    check_spread(c, names)


def check_spread(c: Config, names: list[str]) -> None:
    """--hp-spread is at least 1 and some island's strategy has fixed settings to spread."""
    if c.hp_spread == 1.0:
        return
    if not (math.isfinite(c.hp_spread) and c.hp_spread > 1.0):
        raise ConfigError(f"--hp-spread must be at least 1 (each setting from 1/F to F times "
                          f"its value), got {c.hp_spread}")
    if not any(STRATEGIES[s].TUNABLE for s in names):
        tunable = ", ".join(k for k, cls in STRATEGIES.items() if cls.TUNABLE)
        raise ConfigError(f"--hp-spread has nothing to spread: {', '.join(sorted(set(names)))} "
                          f"adapts its own step size (strategies with fixed settings: "
                          f"{tunable})")


def check_island_specs(c: Config) -> None:
    """The values of each island spec (its keys were checked when it was read)."""
    for i, spec in enumerate(c.island_specs or []):
        for k, least in (("popsize", 2), ("episodes", 1)):
            if k in spec and (not isinstance(spec[k], int) or spec[k] < least):
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
        if "restart" in spec and spec["restart"] not in RESTART_POLICIES:
            raise ConfigError(f"island_specs[{i}].restart must be one of "
                              f"{', '.join(RESTART_POLICIES)}, got {spec['restart']!r}")
        if "backend" in spec and spec["backend"] not in BACKENDS:
            raise ConfigError(f"island_specs[{i}].backend must be one of "
                              f"{', '.join(BACKENDS)}, got {spec['backend']!r}")
        _no_device_option(spec.get("options") or {}, f"island_specs[{i}].options")
    _no_device_option(c.strategy_options, "--strategy-options")


def _no_device_option(options: dict, where: str) -> None:
    """A strategy's device is its island's (islands.island.core), never an option: one
    ``device`` for every island would put CPU islands on a GPU, or GPU islands on the host."""
    if "device" in options:
        raise ConfigError(f"{where}: 'device' is set per island, not as a strategy option "
                          "(an island with a GPU, from --gpus-per-island or its num_gpus, "
                          "runs openai-es-nt there)")


def check_policy(c: Config) -> None:
    if c.policy not in POLICIES:
        raise ConfigError(f"unknown policy {c.policy!r} (choose from {', '.join(POLICIES)})")
    if c.policy == "neuromod" and c.hidden is not None and len(c.hidden) != 1:
        raise ConfigError(f"--hidden: neuromod takes one hidden size, got {c.hidden}")
    try:
        check_options(c.policy, c.policy_options)
    except ValueError as e:
        raise ConfigError(f"--policy-options: {e}") from None


def check_elastic(c: Config) -> None:
    """An elastic run's start count in its range, and nothing that fixes the islands' list:
    per-island specs, explicit edges, a debug exit, or a resume (its checkpoints name the
    islands of the run that wrote them)."""
    span = c.elastic_span
    if span is None:
        return
    lo, hi = span
    if not lo <= c.islands <= hi:
        raise ConfigError(f"--islands {c.islands} is outside --elastic {c.elastic}")
    for name, fixed in (("island_specs", c.island_specs is not None),
                        ("--topology edges", c.topology == "edges"),
                        ("--debug-exit-island", c.debug_exit_island is not None),
                        ("--resume", c.resume is not None)):
        if fixed:
            raise ConfigError(f"--elastic does not go with {name}: it fixes the list of "
                              "islands, which an elastic run changes")


def check_topology(c: Config) -> None:
    if c.topology == "edges":
        if not c.edges:
            raise ConfigError("--topology edges needs --edges, e.g. 0>1,1>0")
    elif c.edges:
        raise ConfigError(f"--edges is only used with --topology edges (got {c.topology})")
    try:
        topo.Topology(c.topology, c.islands, c.topology_degree, c.edges)
    except ValueError as e:
        raise ConfigError(f"--topology: {e}") from None


def check_device(c: Config) -> None:
    if c.device == "cuda" and c.gpus_per_island == 0 and not any(
            s.get("num_gpus") for s in c.island_specs or []):
        raise ConfigError("--device cuda needs --gpus-per-island > 0 (islands get GPUs "
                          "through Ray)")


def wandb_missing() -> str | None:
    """Why ``--wandb`` cannot work here, or None."""
    if importlib.util.find_spec("wandb") is None:
        return "the wandb package is not installed (pip install -e '.[wandb]')"
    return None


def check_loggers(c: Config) -> None:
    if c.wandb is not None:
        missing = wandb_missing()
        if missing:
            raise ConfigError(f"--wandb: {missing}")


def check_working_dir(c: Config) -> None:
    if c.working_dir is not None and not os.path.isdir(c.working_dir):
        raise ConfigError(f"--working-dir {c.working_dir!r} is not a directory")


def check_runtime(c: Config) -> None:
    """A virtual run names its cluster file; a Ray run has no use for one."""
    if c.runtime == "virtual":
        if c.cluster is None:
            raise ConfigError("--runtime virtual needs --cluster FILE (a Ray cluster-launcher "
                              "YAML such as cluster/cpu.yaml)")
        if c.address is not None:
            raise ConfigError("--runtime virtual runs in this process: drop --address")
    elif c.eval_workers is not None:
        raise ConfigError("--eval-workers is modelled by --runtime virtual only (the Ray "
                          "runtime evaluates each island in its own process)")
    elif c.cluster is not None or c.calibration is not None:
        what = "--cluster" if c.cluster is not None else "--calibration"
        raise ConfigError(f"{what} is for --runtime virtual (a Ray run uses the cluster "
                          "it joins)")
