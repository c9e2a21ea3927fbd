"""islands from Python: ``islands.run(env="LunarLander-v3", islands=4, time_budget=60)``.

:func:`run` takes the launcher's options as keyword arguments (``--migration-interval`` is
``migration_interval``; ``config=`` a YAML file, ``resume=`` a run directory, as on the
command line) or a :class:`~islands.config.Config`, and does what ``python -m
islands.launch`` does: an embedded local Ray unless ``address=`` names a cluster or Ray is
already initialized in this process (then it uses that one as it is), the islands, their
checkpoints, the run directory. It returns a :class:`Result`. Bad input raises
:class:`~islands.config.ConfigError` with a one-line message before anything starts.

``problem=`` (a function of a population or of one genome: envs/objective.py) and ``env=``
(a Gymnasium env class) take Python objects: by name when the islands' processes can import
them, else by value (a notebook's, ``__main__``'s, a lambda: envs/byvalue.py). With
``minimize=True`` the function is a cost and ``target=`` a cost to get down to. In a
notebook the progress is one table redrawn in place; ``quiet=True`` prints nothing. Runs can
follow each other in one process. The launcher is a thin layer over :func:`prepare` and
:func:`execute`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .config import Config, ConfigError, default_out_dir, from_options, resolve
from .config.resolve import counts_joined_nodes

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from .evaluate import Controller


@dataclass(frozen=True)
class Result:
    """A finished run: its directory and summary, and what it found, read on first use."""

    run_dir: str
    summary: dict[str, Any]

    @property
    def solved(self) -> bool:
        """Reached the target, confirmed on fresh episodes (``summary["solved"]``)."""
        return bool(self.summary.get("solved"))

    @property
    def best_fitness(self) -> float:
        return float(self.summary["best_fitness"])

    @property
    def best_value(self) -> float:
        """The best genome's value in the objective's own scale: a user's function's (the
        cost, with ``minimize=True``), else the fitness (``best_fitness``)."""
        obj = self.summary.get("objective")
        return float(obj["best"]) if obj else self.best_fitness

    @property
    def episodes_to_solve(self) -> int | None:
        """Training episodes (a function's evaluations) summed over the islands when the
        solution was found; None for an unsolved run."""
        return self.summary.get("episodes_to_solve")

    @property
    def time_to_solve(self) -> float | None:
        """Seconds from the start of evolution to the report that found the solution
        (``wall_to_solve``); None for an unsolved run."""
        return self.summary.get("wall_to_solve")

    @property
    def stop_reason(self) -> str:
        return str(self.summary["stop_reason"])

    @functools.cached_property
    def solution(self) -> dict[str, Any]:
        """``solution.npz``: the best genome, its policy spec, observation statistics, env."""
        from .persistence.solution import load_solution

        return load_solution(self.run_dir)

    @property
    def best(self) -> np.ndarray:
        """The best genome (float64, the policy's flat parameters)."""
        return self.solution["params"]

    def policy(self) -> Controller:
        """The best genome as a controller of one Gymnasium env: ``ctrl(obs)`` is the action
        (``ctrl.reset()`` before each episode), with the run's observation statistics."""
        from .evaluate import Controller

        return Controller(self.solution)

    @functools.cached_property
    def metrics(self) -> pd.DataFrame:
        """``metrics.parquet``: one row per island report."""
        import pandas as pd

        return pd.read_parquet(os.path.join(self.run_dir, "metrics.parquet"))

    def evaluate(self, episodes: int = 100, seed: int | None = None) -> dict[str, Any]:
        """Re-test the best genome on ``episodes`` fresh episodes (``islands.evaluate``);
        a user's function's test has its ``value`` in the function's own scale too."""
        from .evaluate import AUDIT_SEED, solution_eval_spec, test_genome, with_value

        spec = solution_eval_spec(self.solution, int(episodes))
        return with_value(spec, test_genome(spec, self.best, self.solution.get("obs_stats"),
                                            AUDIT_SEED if seed is None else int(seed)))


def prepare(config: Config | str | dict[str, Any] | None = None, **options: Any) -> Config:
    """A resolved config from a Config, a YAML path or a dict, with ``options`` on top;
    the run directory defaults to ``runs/<env>-<time>``. Raises ConfigError."""
    packed = _by_name_or_value(options)
    if isinstance(config, Config):
        given = from_options(options)  # names checked, values coerced as on the command line
        cfg = dataclasses.replace(config, **{k: getattr(given, k) for k in options})
    else:
        base = {"config": config} if isinstance(config, str) else dict(config or {})
        cfg = from_options({**base, **options})
    if packed:
        cfg = _pack(cfg, packed)
    if cfg.out is None:  # decided before resolving: the checkpoint location follows it
        cfg = dataclasses.replace(cfg, out=default_out_dir(cfg.env))
    node_cpus = None
    if counts_joined_nodes(cfg):  # --islands fill on a cluster: count the nodes it has now
        from .runtime.cluster import joined_node_cpus

        node_cpus = joined_node_cpus(cfg)
    return resolve(cfg, node_cpus=node_cpus)


def _by_name_or_value(options: dict[str, Any]) -> dict[str, Any]:
    """``problem=f`` / ``env=SomeEnv`` (callables) -> what the config holds. A function
    becomes its objective's source (``module:qualname`` or ``byvalue:...``:
    envs/objective.py ``source_of``, the one place that decides). An env class the islands'
    processes can import becomes ``module:qualname``; any other (a notebook cell's,
    ``__main__``'s, one found only through this process's ``sys.path`` edits) becomes
    ``islands_user:NAME``, with the class returned (name -> object) to pickle by value into
    ``env_module`` (envs/byvalue.py)."""
    from envs import byvalue
    from envs.objective import ObjectiveError, source_of

    if callable(options.get("problem")):
        try:
            options["problem"] = source_of(options["problem"])
        except ObjectiveError as e:
            raise ConfigError(str(e)) from None
    packed: dict[str, Any] = {}
    obj = options.get("env")
    if callable(obj):
        if byvalue.importable_elsewhere(obj):
            options["env"] = f"{obj.__module__}:{obj.__qualname__}"
        else:
            name = byvalue.safe_name(obj)
            packed[name] = obj
            options["env"] = f"{byvalue.MODULE}:{name}"
    return packed


def _pack(cfg: Config, packed: dict[str, Any]) -> Config:
    """``cfg`` with ``packed`` (name -> object) pickled into its ``env_module``."""
    from envs import byvalue

    try:
        return dataclasses.replace(cfg, env_module=byvalue.pack(packed, cfg.env_module))
    except Exception as e:  # noqa: BLE001 - cloudpickle's errors name what failed
        raise ConfigError(f"{', '.join(packed)}: cannot be pickled to reach the islands "
                          f"({type(e).__name__}: {e})") from None


def execute(cfg: Config, display: bool = True) -> dict[str, Any]:
    """Run a resolved config on Ray (:func:`islands.runtime.driver.run`), or on a virtual
    clock (``runtime="virtual"``: :func:`islands.runtime.virtual_driver.run_virtual`); its
    summary. Raises ConfigError, ResourceError or StartError on input that cannot run."""
    if cfg.runtime == "virtual":
        from .runtime.virtual_driver import run_virtual

        return run_virtual(cfg, display=display)
    from .runtime.driver import run as run_on_ray

    return run_on_ray(cfg, display=display)


def trainable(**base: Any) -> Any:
    """A Ray Tune trainable that runs one archipelago per trial: ``base`` are launcher
    options, the trial's config (``param_space``: Tune's search spaces over the same names)
    goes on top; it reports ``best_fitness`` as it runs. Use it on a connected Ray::

        tune.Tuner(islands.trainable(env="LunarLander-v3", islands=4, time_budget=120),
                   param_space={"sigma": tune.loguniform(0.01, 0.5)},
                   tune_config=tune.TuneConfig(metric="best_fitness", mode="max",
                                               num_samples=8)).fit()
    """
    from .runtime.sweep import user_trainable

    return user_trainable(base)


def run(config: Config | str | dict[str, Any] | None = None, /, **options: Any) -> Result:
    """Run an archipelago; see the module docstring. ``islands.run(env="CartPole-v1",
    islands=2, generations=50)`` or ``islands.run("run.yaml", seed=3)``."""
    cfg = prepare(config, **options)
    summary = execute(cfg)
    return Result(run_dir=str(cfg.out), summary=summary)
