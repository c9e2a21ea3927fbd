"""A run's directory, decided and checked once (:func:`settle_run_dir`): a new run's must be
new or empty (never overwrite a run); a resumed run's checkpoints must be there and fit
the config (:func:`check_resume`)."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from .parse import default_out_dir
from .resolve import resolve
from .schema import Config, ConfigError


def check_new(path: str) -> None:
    """ConfigError if ``path`` exists and is not an empty directory."""
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise ConfigError(f"output directory {path!r} already exists and is not empty")


def settle_run_dir(cfg: Config, out: str | None = None) -> Config:
    """``cfg`` with its run directory decided (``--resume``'s, else ``out``, ``cfg.out`` or
    a fresh default) and checked; resolved again only where that moved ``cfg.out`` (the
    checkpoint location follows it). The one place a run's directory is decided."""
    where = cfg.resume or out or cfg.out or default_out_dir(cfg.env)
    if where != cfg.out or cfg.checkpoint_uri is None:
        cfg = resolve(dataclasses.replace(cfg, out=where), check_env=False)
    if cfg.resume is not None:
        check_resume(cfg)
    else:
        check_new(where)
    return cfg


def check_resume(cfg: Config, plan: list | None = None) -> None:
    """ConfigError (one line) unless the checkpoints of the run in ``cfg.out`` can be loaded
    and belong to this config (island count, strategies, the policy's parameter count).
    Called before Ray starts (without ``plan``) and again once the islands are planned
    (``plan``: their :class:`~islands.island.spec.IslandSpec` rows)."""
    from ..persistence.storage import COORDINATOR_FILE, Storage, island_file

    st = Storage(cfg.checkpoint_uri)
    try:
        coord = st.load(COORDINATOR_FILE)
        isl = [st.load(island_file(i)) for i in range(cfg.islands)]
    except ValueError as e:
        raise ConfigError(f"--resume: {e}") from None
    if coord is None and not any(isl):
        raise ConfigError(f"--resume: no checkpoints in {st.uri}")
    if coord is not None and (coord.get("kind") != "coordinator"
                              or int(coord.get("n", -1)) != cfg.islands):
        raise ConfigError(f"--resume: {st.path(COORDINATOR_FILE)} is for "
                          f"{coord.get('n')} islands, the config has {cfg.islands}")
    dim = policy_dim(cfg)
    for i, s in enumerate(isl):
        if s is None:
            continue
        if dim is not None and s.get("dim") is not None and int(s["dim"]) != dim:
            raise ConfigError(
                f"--resume: checkpoint {st.path(island_file(i))} does not fit island {i}: "
                f"it holds {int(s['dim']):,} parameters, this config's policy has {dim:,} "
                "(leave --policy / --hidden as the run had them)")
        name = (s.get("strategy") or {}).get("name") if isinstance(s.get("strategy"),
                                                                   dict) else None
        want = plan[i].strategy if plan else None
        if s.get("kind") != "island" or int(s.get("index", -1)) != i or (
                want is not None and name != want):
            raise ConfigError(f"--resume: {st.path(island_file(i))} does not match island "
                              f"{i} of the config (strategy {name!r}, expected {want!r})")


def policy_dim(cfg: Config) -> int | None:
    """Parameters of the policy ``cfg`` builds, from the env's spaces alone (no evaluator,
    no Ray); None where the spaces cannot be read here (the islands check it then)."""
    import policies
    from envs.spaces import env_spaces

    spec = cfg.eval_spec()
    try:
        obs, action = env_spaces(spec.env_id, spec.backend, spec.env_kwargs, spec.env_module)
        return int(policies.make(spec.policy, obs, action, **spec.policy_options).num_params)
    except Exception:  # an env that only builds on the cluster: leave it to the islands
        return None


def prior_rows(out: str) -> list[dict[str, Any]]:
    path = os.path.join(out, "metrics.parquet")
    if not os.path.exists(path):
        return []
    import pandas as pd

    return pd.read_parquet(path).to_dict("records")
