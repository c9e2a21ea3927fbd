"""An unresolved :class:`Config` -> a fully resolved one: environment-table defaults filled,
everything checked that can be checked without Ray, derived values decided once.

Derived values: ``test_max_episode_steps`` (the environment's registered limit, else the
training limit) and ``checkpoint_uri`` (``<out>/checkpoints``, absolute). ``resolve`` is
idempotent, and resolving again after ``out`` changed moves a derived ``checkpoint_uri``
with it.
"""

from __future__ import annotations

import dataclasses
import importlib
import os

from ..envdefaults import GENERIC, env_defaults
from ..island.restarts import DEFAULT_PATIENCE
from .checks import check
from .fieldtypes import coerce
from .schema import DETERMINISTIC_TESTS, FILL, NOISY_TESTS, Config, ConfigError, flag

# Fields the environment table fills when the user leaves them unset.
_TABLE_FIELDS = ("strategy", "policy", "popsize", "episodes", "max_episode_steps", "obs_norm",
                 "generations")


def resolve(cfg: Config, check_env: bool = True,
            node_cpus: list[float] | None = None) -> Config:
    """Fill per-env defaults, validate and derive; returns a new Config. Raises ConfigError.
    ``check_env=False`` skips the checks that look the environment up or create it.
    ``node_cpus``: the CPUs of each node of the Ray cluster the run joins (``--address``),
    which ``--islands fill`` counts; the caller reads them (config knows no Ray)."""
    c = dataclasses.replace(cfg)
    for name in ("cluster", "calibration"):  # read where the run runs (a Tune trial's cwd)
        if getattr(c, name):
            setattr(c, name, os.path.abspath(getattr(c, name)))
    _import_env_module(c.env_module)
    _problem_env(c)
    if check_env and c.problem is None:
        check_env_id(c.env, c.backend, c.env_module)
    _fill_env_defaults(c)
    _fill_counts(c, node_cpus)
    _fill_test_defaults(c)
    check(c)
    if check_env and c.problem is None:
        obs_shape = observation_shape(c.env, c.backend, c.env_kwargs, c.env_module)
        if c.policy == "cnn" and len(obs_shape) != 3:
            raise ConfigError(f"--policy cnn needs image observations (C, H, W) but {c.env} "
                              f"has observations of shape {tuple(obs_shape)}; use mlp")
    _derive(c)
    return c


_PROBLEM_ONLY = ("dim", "minimize", "noisy", "bounds")


def _problem_env(c: Config) -> None:
    """``--problem T --dim D [--minimize] [--noisy] [--bounds L,H]`` -> the run's
    :class:`~envs.objective.Objective` (``c.objective()``), checked here (its function
    must import or unpickle: one line otherwise); the env id becomes its name,
    ``problem:<name>``. Earlier forms are read too: the env id ``problem:T`` with ``dim``,
    ``minimize`` and ``bounds`` in ``env_kwargs`` (a config.yaml of an earlier run)."""
    from envs.objective import PREFIX, ObjectiveError

    kw = dict(c.env_kwargs or {})
    if c.problem is None and str(c.env).startswith(PREFIX):
        c.problem = str(c.env)[len(PREFIX):]
    if c.problem is None:
        given = [flag(f) for f in _PROBLEM_ONLY if getattr(c, f) not in (None, False)]
        if given:
            raise ConfigError(f"--dim, --minimize, --noisy and --bounds go with --problem "
                              f"(got {given[0]})")
        return
    for k in _PROBLEM_ONLY:  # the earlier form's env_kwargs
        if k in kw and getattr(c, k) in (None, False):
            setattr(c, k, coerce(k, kw[k]))
        kw.pop(k, None)
    if kw:
        raise ConfigError(f"--problem takes no --env-kwargs (got {sorted(kw)[0]!r}); its "
                          "settings are --dim, --minimize, --noisy and --bounds")
    if c.dim is None or int(c.dim) < 1:
        raise ConfigError(f"--problem needs --dim, the genome's length (at least 1), "
                          f"got {c.dim}")
    try:
        obj = c.objective()
        obj.function()
    except ObjectiveError as e:
        raise ConfigError(f"--problem: {e}") from None
    c.env, c.env_kwargs = obj.env_id, {}


def deterministic(c: Config) -> bool:
    """Whether the run's objective gives one genome the same value every time: a user's
    function not marked ``--noisy``, or a synthetic id without ``noise``."""
    from envs.synthetic import parse_synthetic

    if c.problem is not None:
        return not c.noisy
    return parse_synthetic(c.env) is not None and not float(
        (c.env_kwargs or {}).get("noise", 0) or 0)


def _fill_test_defaults(c: Config) -> None:
    """How candidates are tested, where the user left it unset: by one evaluation of the
    best sample for a deterministic objective, else as for an env (schema.NOISY_TESTS)."""
    tests = DETERMINISTIC_TESTS if deterministic(c) else NOISY_TESTS
    for k, v in tests.items():
        if getattr(c, k) is None:
            setattr(c, k, v)


def _fill_env_defaults(c: Config) -> None:
    row = env_defaults(c.env)
    for k in _TABLE_FIELDS:
        if getattr(c, k) is None:
            setattr(c, k, row[k])
    if c.hidden is None:
        c.hidden = list(row["hidden"]) if row["policy"] == c.policy else None
    if c.migration_interval is None:
        c.migration_interval = row.get("migration_interval", GENERIC["migration_interval"])
    if c.restart_patience is None:
        c.restart_patience = row.get("restart_patience", DEFAULT_PATIENCE)
    if c.episodes_cap is None and row.get("episodes_cap"):  # never below the episodes set
        c.episodes_cap = max(int(row["episodes_cap"]), int(c.episodes))
    if c.reward_shift is None:
        c.reward_shift = float(row.get("reward_shift", 0.0))
    if c.migrant_episodes is None:
        c.migrant_episodes = int(row.get("migrant_episodes", 0))
    if c.target == "auto":
        c.target = row["target"]
    if c.island_specs is not None and c.islands is None:
        c.islands = len(c.island_specs)
    span = c.elastic_span
    if span is not None:  # an elastic run starts small and grows to what the cluster holds
        c.islands = span[0] if c.islands is None else c.islands
        c.cpus_per_island = 1.0 if c.cpus_per_island is None else c.cpus_per_island
    if c.islands is None:  # the row's measured best shape, else one island per CPU
        c.islands = int(row.get("islands") or max(1, os.cpu_count() or 1))


def _fill_counts(c: Config, node_cpus: list[float] | None) -> None:
    """``--islands fill``: as many islands of ``--cpus-per-island`` (default 1) as each node
    holds, summed over the nodes; ``--eval-workers fill``: as many one-CPU workers per island
    as the nodes' whole CPUs hold (:func:`runtime.syncpop.place_workers` packs them so). The
    nodes: the ``--cluster`` file's with ``--runtime virtual`` (its CPU-less head holds
    none), ``node_cpus`` on a joined cluster (``--address``: the nodes up when the run
    starts, read by :func:`islands.api.prepare`), this machine's CPUs on the embedded Ray."""
    if FILL in (c.islands, c.eval_workers):
        _fill_cpu_counts(c, node_cpus)
    _fill_popsize_scale(c)


def _fill_cpu_counts(c: Config, node_cpus: list[float] | None) -> None:
    """The islands or workers ``fill`` asks for, from the nodes' CPUs (``_fill_counts``)."""
    what = "--islands fill" if c.islands == FILL else "--eval-workers fill"
    if c.elastic is not None and c.islands == FILL:
        raise ConfigError("--islands fill and --elastic: an elastic run follows the cluster "
                          "already (its range bounds the islands)")
    if c.island_specs is not None and c.islands == FILL:
        raise ConfigError("--islands fill and island_specs: island_specs fixes the islands")
    cpus = _node_cpus(c, what, node_cpus)
    if c.islands == FILL:
        c.cpus_per_island = 1.0 if c.cpus_per_island is None else c.cpus_per_island
        share = float(c.cpus_per_island)
        if not share > 0:
            raise ConfigError(f"--cpus-per-island must be > 0, got {c.cpus_per_island}")
        c.islands = sum(int(n / share + 1e-9) for n in cpus)
        if c.islands < 1:
            raise ConfigError(f"--islands fill: no node holds an island of "
                              f"{share:g} CPUs (nodes: {_cpus_list(cpus)})")
    if c.eval_workers == FILL:
        c.eval_workers = sum(int(n + 1e-9) for n in cpus) // max(1, int(c.islands))
        if c.eval_workers < 1:
            raise ConfigError(f"--eval-workers fill: the nodes' whole CPUs "
                              f"({_cpus_list(cpus)}) hold no worker for each of "
                              f"{c.islands} islands")


def _fill_popsize_scale(c: Config) -> None:
    """``--popsize-scale fill``: a synchronous population (``--eval-workers``) as many
    times the row's as gives every worker at least one episode a generation, so the
    OpenAI-ES-shaped baseline uses the cores it is given (Salimans et al. 2017 size the
    population to the workers) instead of leaving most of a large cluster idle."""
    if c.popsize_scale != FILL:
        return
    if c.eval_workers is None:
        raise ConfigError("--popsize-scale fill sizes a synchronous population to its "
                          "workers: give --eval-workers (a number or fill)")
    if c.popsize is None:
        raise ConfigError(f"--popsize-scale fill needs a population size to scale: {c.env} "
                          "has none in the env table; give --popsize")
    c.popsize_scale = max(1, -(-int(c.eval_workers) // int(c.popsize)))  # ceil


def _node_cpus(c: Config, what: str, node_cpus: list[float] | None) -> list[float]:
    """The CPUs of each node the run's islands may use (``_fill_counts``)."""
    from ..costmodel import load_cluster

    if c.runtime == "virtual":
        if c.cluster is None:
            raise ConfigError(f"{what} with --runtime virtual needs --cluster FILE")
        return [n.cpus for n in load_cluster(c.cluster).nodes if n.cpus > 0]
    if node_cpus is not None:
        return [float(n) for n in node_cpus if n > 0]
    if joins_a_cluster(c):
        raise ConfigError(f"{what} counts the nodes of the cluster it joins; here they are "
                          "not known: give a number (or model the cluster: --runtime "
                          "virtual --cluster FILE)")
    return [float(os.cpu_count() or 1)]


def cluster_address(c: Config) -> str | None:
    """The Ray cluster a real run joins: ``--address``, else ``RAY_ADDRESS``; None: it
    starts an embedded Ray (:func:`islands.runtime.cluster.connect`)."""
    return c.address or os.environ.get("RAY_ADDRESS") or None


def joins_a_cluster(c: Config) -> bool:
    """Whether a real run joins a Ray cluster rather than starting one here."""
    return c.runtime != "virtual" and cluster_address(c) is not None


def counts_joined_nodes(c: Config) -> bool:
    """Whether resolving ``c`` needs the joined cluster's nodes (``node_cpus``)."""
    return FILL in (c.islands, c.eval_workers) and joins_a_cluster(c)


def _cpus_list(cpus: list[float]) -> str:
    return ", ".join(f"{n:g}" for n in cpus) or "none with CPUs"


def _derive(c: Config) -> None:
    if c.retest_episodes is None:
        c.retest_episodes = c.test_episodes
    if c.test_max_episode_steps is None:
        c.test_max_episode_steps = registered_step_limit(c.env) or c.max_episode_steps
    if c.checkpoint_uri is None or c.checkpoint_uri == c._checkpoint_default:
        c.checkpoint_uri = default_checkpoint_uri(c.out)
        c._checkpoint_default = c.checkpoint_uri


def registered_step_limit(env_id: str) -> int | None:
    """The episode limit Gymnasium registers for ``env_id`` (the standard task), or None."""
    try:
        import gymnasium

        limit = gymnasium.spec(env_id).max_episode_steps
    except Exception:  # envpool-only ids (Pong-v5) and classes are not in Gymnasium's registry
        return None
    return int(limit) if limit else None


def default_checkpoint_uri(out: str | None) -> str | None:
    """``<out>/checkpoints``, absolute (actors do not share the launcher's working directory);
    None without a run directory."""
    return os.path.join(os.path.abspath(out), "checkpoints") if out else None


def _import_env_module(name: str | None) -> None:
    from envs import byvalue
    from envs.spaces import import_env_module

    if not name:
        return
    if byvalue.is_packed(name):  # the functions / env classes islands.run got by value
        try:
            import_env_module(name)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        return
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
