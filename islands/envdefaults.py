"""Per-environment defaults: the one table that makes ``--env ID`` alone a sensible run.

Every value here is a default for a field of :class:`islands.config.Config` and is used only
where the command line / YAML leaves that field unset. Columns:

========================  =========  ======  ========  =======  =====  ========  =====  ====  ======
env                       strategy   policy  hidden    popsize  sigma  episodes  max    norm  target
========================  =========  ======  ========  =======  =====  ========  =====  ====  ======
CartPole-v1               cmaes      mlp     (8,)      16       0.5    2         500    off   475
LunarLander-v3            cmaes      mlp     (16,)     24       0.5    6         1000   off   200
LunarLanderContinuous-v3  cmaes      mlp     (16,)     24       0.5    6         1000   off   200
BipedalWalker-v3          cmaes      mlp     ()        24       0.5    2         1600   on    300
Pong-v5                   openai-es  cnn     (32,)     64       0.02   1         27000  off   0
Humanoid-v5               openai-es  mlp     (64, 64)  256      0.02   1         1000   on    6000
(any other id)            cmaes      mlp     (32,)     (auto)   0.5    3         (env)  on    (none)
========================  =========  ======  ========  =======  =====  ========  =====  ====  ======

Why these values:

- CartPole and LunarLander are solved by small networks; full CMA-ES costs O(D^2) per
  generation and needs ~D^2 evaluations to learn its covariance, so fewer parameters solve
  faster (8-16-4: 212 parameters; a 64-64 net has 5,000). ``sigma`` 0.5 with zero initial
  weights gives a first population with visibly different behaviours.
- LunarLander returns are noisy (random terrain and initial push), so each evaluation averages
  6 episodes; the 100-episode test filters the remaining lucky genomes. Measured on 2 busy
  cores, 2 islands, seconds of evolution until a genome passed the 100-episode test (seeds
  0-5 unless noted): 4 episodes 81/136/205 (seeds 0-2); 6 episodes 50/81/77/>240/42/47;
  8 episodes 120/126/48/167/147/86 (two runs each of seeds 0-2); (8,) hidden with 6
  episodes and popsize 20: 193/121/46. Runs are not reproducible to the second: migration
  timing depends on which island finishes first.
- BipedalWalker: a linear policy (``hidden=()``: 24 normalized observations -> 4 tanh-squashed
  torques, 100 parameters) with full CMA-ES, as Mania et al. (2018, ARS) found linear
  policies enough for it. The previous row (sep-CMA-ES, 24-40-40-4 = 2,804 parameters,
  popsize 64, sigma 0.1, 1 episode) stalled at a training best of 27.8 after 900 s on 2
  islands (it learned to stand still); the linear row, same machine, ``--islands 2 --seed
  1``: training best 300 at 751 s, a 100-episode test mean of 301.0 at 821 s, 23,280
  episodes. Not yet robust: the same defaults with seeds 0 / 2 / 3 reached training bests
  of 235 / 260 / 241 in 1,800 / 1,800 / 1,565 s (84K / 55K / 44K episodes; hall-of-fame
  tests 150 and 221), unsolved (``benchmarks/time_to_solve.py --env BipedalWalker-v3
  --seeds 0,2,3 -- --time-budget 1800``). One episode per evaluation (``--episodes 1``,
  seed 0, same 1,800 s) doubled the generation rate and reached a training best of 255
  within 3 minutes (2 episodes: 235 after 30), then 291.5 at 1,800 s, test mean 230.6 +-
  107 over 100 episodes, 67K episodes: better, still unsolved, one seed -- not yet the
  default; seed 2 with ``--episodes 1`` (3,600 s, half of it beside CI runs) reached a
  training best of 256 whose genome tested at -21 +- 92 (84K episodes): one episode lets
  the hall of fame keep lucky genomes. Observation
  normalization is what makes a linear map work here: the raw observations range over very
  different scales (lidar in [0, 1], speeds, angles).
- The big networks use diagonal / first-order strategies (sep-CMA-ES, OpenAI-ES) whose cost
  is O(D); they need observation normalization for the same reason.
- Pong's target is the research plan's "better than random" (> 0); CNN pixels are not
  normalized (the policy scales them itself).
- ``sigma`` applies to the islands that run the table's strategy; an island that runs another
  strategy (``--strategy cmaes,openai-es``) uses that strategy's own default step size unless
  ``--sigma`` or its island spec sets one. ``popsize`` applies to every island.
- ``generations`` is a safety cap per island so that a run without a target or time budget
  ends. The episode limit of the tests is not in the table: it is the task's own (the limit
  Gymnasium registers for the id, else ``max``), decided in :func:`islands.config.resolve`.
"""

from __future__ import annotations

from typing import Any

# fmt: off
ENV_DEFAULTS: dict[str, dict[str, Any]] = {
    "CartPole-v1": dict(
        strategy="cmaes", policy="mlp", hidden=(8,), popsize=16, sigma=0.5, episodes=2,
        max_episode_steps=500, obs_norm=False, target=475.0, generations=300),
    "LunarLander-v3": dict(
        strategy="cmaes", policy="mlp", hidden=(16,), popsize=24, sigma=0.5, episodes=6,
        max_episode_steps=1000, obs_norm=False, target=200.0, generations=3000),
    "LunarLanderContinuous-v3": dict(
        strategy="cmaes", policy="mlp", hidden=(16,), popsize=24, sigma=0.5, episodes=6,
        max_episode_steps=1000, obs_norm=False, target=200.0, generations=3000),
    "BipedalWalker-v3": dict(
        strategy="cmaes", policy="mlp", hidden=(), popsize=24, sigma=0.5, episodes=2,
        max_episode_steps=1600, obs_norm=True, target=300.0, generations=20000),
    "Pong-v5": dict(
        strategy="openai-es", policy="cnn", hidden=(32,), popsize=64, sigma=0.02, episodes=1,
        max_episode_steps=27000, obs_norm=False, target=0.0, generations=20000),
    "Humanoid-v5": dict(
        strategy="openai-es", policy="mlp", hidden=(64, 64), popsize=256, sigma=0.02,
        episodes=1, max_episode_steps=1000, obs_norm=True, target=6000.0, generations=20000),
}
GENERIC: dict[str, Any] = dict(
    strategy="cmaes", policy="mlp", hidden=(32,), popsize=None, sigma=0.5, episodes=3,
    max_episode_steps=None, obs_norm=True, target=None, generations=1000)
# fmt: on


def env_defaults(env_id: str) -> dict[str, Any]:
    """The table row for ``env_id`` (the generic row for ids not in the table)."""
    return dict(ENV_DEFAULTS.get(env_id, GENERIC))
