"""Resuming a run from its checkpoints: are they there, and do they fit the config?"""

from __future__ import annotations

import os
from typing import Any

from .config import Config, ConfigError
from .planning import IslandSpec


def check_resume(cfg: Config, plan: list[IslandSpec] | None = None) -> None:
    """ConfigError (one line) unless the checkpoints of the run in ``cfg.out`` can be loaded
    and belong to this config (island count, strategies)."""
    from .storage import COORDINATOR_FILE, Storage, island_file

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
    for i, s in enumerate(isl):
        if s is None:
            continue
        name = (s.get("strategy") or {}).get("name") if isinstance(s.get("strategy"),
                                                                   dict) else None
        want = plan[i].strategy if plan else None
        if s.get("kind") != "island" or int(s.get("index", -1)) != i or (
                want is not None and name != want):
            raise ConfigError(f"--resume: {st.path(island_file(i))} does not match island "
                              f"{i} of the config (strategy {name!r}, expected {want!r})")


def prior_rows(out: str) -> list[dict[str, Any]]:
    path = os.path.join(out, "metrics.parquet")
    if not os.path.exists(path):
        return []
    import pandas as pd

    return pd.read_parquet(path).to_dict("records")
