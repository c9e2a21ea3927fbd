"""A one-island CartPole ``IslandCore`` without Ray for the restart and resampling tests:
Gymnasium backend (its episodes depend on seeds alone, so resumed islands compare exactly),
CMA-ES with popsize 8, one episode of at most 100 steps per evaluation."""

from __future__ import annotations

from islands.config import parse_args, resolve
from islands.island.core import IslandCore
from islands.planning import plan_islands


def island_cfg(**kw):
    """The config, with ``kw`` as extra flags (``restart_patience=1`` -> --restart-patience 1)."""
    return resolve(parse_args([
        "--env", "CartPole-v1", "--islands", "1", "--strategy", "cmaes", "--popsize", "8",
        "--episodes", "1", "--max-episode-steps", "100", "--target", "none",
        "--backend", "gymnasium", *sum(([f"--{k.replace('_', '-')}", str(v)]
                                        for k, v in kw.items()), [])]))


def island(cfg, checkpoint=None) -> IslandCore:
    return IslandCore(plan_islands(cfg, [2.0])[0], cfg.eval_spec(), run_seed=cfg.seed,
                      checkpoint=checkpoint)


def row(core: IslandCore) -> dict:
    """One ``evolve(1)``'s report row without what may differ between equal islands: its
    timings and the process's peak memory (both islands of a comparison live in this one
    process, so the second sees the first's peak)."""
    r = core.evolve(1).report.row()
    for key in ("call_s", "evals_per_s", "steps_per_s", "island_wall_s", "peak_rss_mb"):
        r.pop(key)
    return r
