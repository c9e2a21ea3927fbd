"""How much of an island's one-episode ranking is noise: measured on a run's checkpoint.

    python -m islands.output.fitness_noise RUN_DIR [--island 0] [--columns 4] [--seed 0]

Loads the island's checkpoint (strategy state and observation statistics), samples one
population from its strategy and evaluates every genome on ``--columns`` independent
episodes, each episode seed shared by the whole population (as training does: common
random numbers). From the returns ``R[genome, column]``:

* ``noise_sd``: the genome-specific episode noise -- the standard deviation of a genome's
  returns around its own mean after each column's population mean is removed (the shared
  terrain's difficulty does not change a ranking);
* ``signal_sd``: the spread of the genomes' true means, ``var(row means) - noise^2 / K``;
* ``noise_share``: the share of a one-episode fitness spread that is noise,
  ``noise^2 / (noise^2 + signal^2)``; with E episodes per evaluation the noise variance is
  divided by E (the table's ``share@E`` columns);
* ``rank_corr``: the mean Spearman correlation between two columns' rankings of the
  population -- how well one episode's ranking predicts another's (1: no noise; 0: the
  selection is a lottery). Uncertainty-handling CMA-ES (Hansen et al. 2009) reacts to the
  same quantity, measured as rank changes under re-evaluation;
* the search center's mean and standard deviation over 20 episodes.

Table, then one JSON line. Needs the run's ``config.yaml`` and ``checkpoints/``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr


def load_island(run: Path, island: int):
    """(eval_spec, strategy, island state) from the run's checkpoint: the strategy rebuilt
    as the island built it and loaded; the state as stored (obs_stats, build, ...)."""
    from .. import strategies
    from ..config import parse_args, resolve
    from ..persistence import plainstate
    from ..persistence.storage import island_file

    cfg = resolve(parse_args(["--config", str(run / "config.yaml")]), check_env=False)
    state = plainstate.load(run / "checkpoints" / island_file(island))
    build = {k: state["build"][k] for k in ("popsize", "sigma", "seed", "x0")}
    spec = cfg.eval_spec()
    s = strategies.make(state["strategy"]["name"], int(state["dim"]), **build,
                        **dict(cfg.strategy_options or {}))
    s.load_state_dict(state["strategy"])
    return spec, s, state


def returns(spec, X: np.ndarray, obs_stats, seeds: list[int]) -> np.ndarray:
    """R[genome, k]: one episode per genome from evaluation seed ``seeds[k]``."""
    ev = spec.replace(episodes=1).build(num_threads=1, device="cpu")
    try:
        if obs_stats is not None and ev.obs_stats is not None:
            ev.set_obs_stats(obs_stats)
        cols = []
        for seed in seeds:
            ev.restart_episodes()  # this column's episodes from its own seed alone
            cols.append(np.asarray(ev.evaluate(X, seed=int(seed)).returns)[:, 0])
        return np.stack(cols, axis=1)
    finally:
        ev.close()


def noise_figures(R: np.ndarray) -> dict[str, float]:
    """The module docstring's figures from R[genome, column] (at least 2 columns)."""
    k = R.shape[1]
    resid = R - R.mean(axis=0, keepdims=True)  # without each column's shared difficulty
    noise_var = float(np.mean(resid.var(axis=1, ddof=1)))
    signal_var = max(0.0, float(resid.mean(axis=1).var(ddof=1)) - noise_var / k)
    corr = [spearmanr(R[:, a], R[:, b])[0] for a in range(k) for b in range(a + 1, k)]
    out = {"noise_sd": noise_var ** 0.5, "signal_sd": signal_var ** 0.5,
           "rank_corr": float(np.nanmean(corr)), "population_mean": float(R.mean())}
    for e in (1, 2, 4, 8):
        out[f"share@{e}"] = noise_var / e / max(noise_var / e + signal_var, 1e-12)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m islands.output.fitness_noise",
                                description=__doc__.split("\n")[0])
    p.add_argument("run", type=Path)
    p.add_argument("--island", type=int, default=0)
    p.add_argument("--columns", type=int, default=4, help="episodes per genome (>= 2)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.columns < 2:
        p.error("--columns must be at least 2")
    import torch

    torch.set_num_threads(1)  # beside one EnvPool thread; do not take a running run's CPUs
    spec, strat, state = load_island(a.run, a.island)
    obs_stats, gen = state.get("obs_stats"), int(strat.generation)
    X = strat.ask()
    base = 2**29 + 1000 * a.seed  # away from the run's training seeds of early generations
    fig = noise_figures(returns(spec, X, obs_stats, [base + k for k in range(a.columns)]))
    c = returns(spec, np.asarray(strat.center)[None, :], obs_stats,
                [base + 100 + k for k in range(20)])[0]
    fig.update(center_mean=float(c.mean()), center_sd=float(c.std(ddof=1)))
    fig.update(island=a.island, generation=gen, popsize=len(X), columns=a.columns)
    print(f"island {a.island} gen {gen}: population mean {fig['population_mean']:.1f}, "
          f"center {fig['center_mean']:.1f} +- {fig['center_sd']:.1f} (20 episodes)")
    print(f"  noise sd {fig['noise_sd']:.1f}  signal sd {fig['signal_sd']:.1f}  "
          f"rank corr {fig['rank_corr']:.2f}  noise share at 1/2/4/8 episodes: "
          + " / ".join(f"{fig[f'share@{e}']:.2f}" for e in (1, 2, 4, 8)))
    print(json.dumps(fig))


if __name__ == "__main__":
    main()
