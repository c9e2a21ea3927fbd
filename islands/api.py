"""islands from Python: ``islands.run(env="LunarLander-v3", islands=4, time_budget=60)``.

:func:`run` takes the launcher's options as keyword arguments (``--migration-interval`` is
``migration_interval``; ``config=`` a YAML file, ``resume=`` a run directory, as on the
command line) or a :class:`~islands.config.Config`, and does what ``python -m
islands.launch`` does: an embedded local Ray unless ``address=`` names a cluster or Ray is
already initialized in this process (then it uses that one as it is), the islands, their
checkpoints, the run directory. It returns a :class:`Result`. Bad input raises
:class:`~islands.config.ConfigError` with a one-line message before anything starts.

In a notebook the progress is printed as plain lines (no live table); ``quiet=True``
prints nothing. Runs can follow each other in one process. The launcher is a thin layer
over :func:`prepare` and :func:`execute`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .config import Config, ConfigError, default_out_dir, from_options, resolve

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
        """Re-test the best genome on ``episodes`` fresh episodes (``islands.evaluate``)."""
        from .evaluate import AUDIT_SEED, solution_eval_spec, test_genome

        spec = solution_eval_spec(self.solution, int(episodes))
        return test_genome(spec, self.best, self.solution.get("obs_stats"),
                           AUDIT_SEED if seed is None else int(seed))


def prepare(config: Config | str | dict[str, Any] | None = None, **options: Any) -> Config:
    """A resolved config from a Config, a YAML path or a dict, with ``options`` on top;
    the run directory defaults to ``runs/<env>-<time>``. Raises ConfigError."""
    for key in ("problem", "env"):  # a function / an env class: by its importable name
        if callable(options.get(key)):
            options[key] = _importable_name(options[key], key)
    if isinstance(config, Config):
        given = from_options(options)  # names checked, values coerced as on the command line
        cfg = dataclasses.replace(config, **{k: getattr(given, k) for k in options})
    else:
        base = {"config": config} if isinstance(config, str) else dict(config or {})
        cfg = from_options({**base, **options})
    if cfg.out is None:  # decided before resolving: the checkpoint location follows it
        cfg = dataclasses.replace(cfg, out=default_out_dir(cfg.env))
    return resolve(cfg)


def _importable_name(obj: Any, key: str) -> str:
    """``module:qualname`` of a function or env class the islands' processes can import by
    name (the config and ``config.yaml`` hold names, and a run resumes from them);
    ConfigError for one they cannot (a lambda, anything defined in ``__main__`` or a
    notebook cell)."""
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", "")
    if not module or module == "__main__" or "<" in name:
        raise ConfigError(f"{key}={getattr(obj, '__name__', obj)!r}: pass one defined in an "
                          "importable module (package.module:name); lambdas and functions "
                          "or classes of __main__ or a notebook cannot reach the islands yet")
    return f"{module}:{name}"


def execute(cfg: Config, display: bool = True) -> dict[str, Any]:
    """Run a resolved config on Ray (:func:`islands.runtime.driver.run`); its summary.
    Raises ConfigError, ResourceError or StartError on input that cannot run."""
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
