"""Per-environment defaults: the one table that makes ``--env ID`` alone a sensible run.

Every value is a default for a field of :class:`islands.config.Config`, used only where the
command line / YAML leaves that field unset (field default < this table < YAML < command
line). :func:`env_defaults` returns a copy of the row of ``env_id``, or of :data:`GENERIC`
for an id the table does not know.

Keys every row has: ``strategy``, ``policy``, ``hidden``, ``popsize`` (None: the strategy's
own), ``sigma``, ``episodes`` (per evaluation), ``max_episode_steps`` (None: the env's own),
``obs_norm``, ``target`` (None: no target) and ``generations`` (a safety cap per island, so
that a run without a target or time budget ends). The test's episode limit is not here: it
is the task's own (the limit Gymnasium registers for the id, else ``max_episode_steps``),
decided in :func:`islands.config.resolve`.

Optional keys (where a row lacks one, the config's own default holds):
``migration_interval`` (``--migration-interval``, else the generic row's 5),
``episodes_cap`` (``--episodes-cap``: episodes per evaluation may double up to it, on noisy
ranking probes or stagnation; never below the run's ``--episodes``; ``--episodes-cap 1``
turns it off), ``restart_patience`` (``--restart-patience``, else
``islands.island.restarts.DEFAULT_PATIENCE``), ``strategy_options`` and ``islands`` (the
shape measured best for the row, ``--islands``, else one island per CPU of the machine).

``sigma`` and ``strategy_options`` apply only to the islands that run the table's strategy:
an island that runs another (``--strategy cmaes,openai-es``) uses that strategy's own
defaults unless ``--sigma`` / ``--strategy-options`` or its island spec sets them, and those
flags override the table's (``--strategy-options '{"bounds": null}'`` removes
BipedalWalker's box). ``popsize`` applies to every island.

Why each row holds its values, and the runs behind them: ``docs/results/env-table.md``, one
section per row (each row's ``# why:`` line links to it). The reasoning rests on N. Hansen
(2016), "The CMA evolution strategy: a tutorial", arXiv:1604.00772 (full CMA-ES costs
O(D^2) per generation: small networks for small tasks); R. Ros and N. Hansen (2008), "A
simple modification in CMA-ES achieving linear time and space complexity", PPSN X
(sep-CMA-ES); D. V. Arnold and H.-G. Beyer (2006), "A general noise model and its effects on
evolution strategy performance", IEEE TEC 10(4) (under noise, more samples beat more
episodes per sample); H. Mania, A. Guy and B. Recht (2018), "Simple random search of static
linear policies is competitive for reinforcement learning", NeurIPS (linear policies); T.
Salimans et al. (2017), "Evolution strategies as a scalable alternative to reinforcement
learning", arXiv:1703.03864 (first-order ES for big networks, weights kept small).
"""

from __future__ import annotations

from typing import Any

# MuJoCo locomotion (EnvPool's v4 builds): task -> its row's strategy settings. Targets:
# ARS's reward thresholds, Table 1 of H. Mania, A. Guy and B. Recht (2018), arXiv:1803.07055.
# The "ars" rows run ARS V2-t with that paper's own settings for the task (popsize = 2N
# directions, sigma = nu, lr = alpha, top = b, reward_shift = its survival-bonus shift).
MUJOCO = {
    "Swimmer": dict(strategy="cmaes", sigma=0.5, target=325.0),
    # one island: 0.65x two islands' episodes over 20 hold-out seeds (env-table.md#mujoco-v4)
    "Hopper": dict(strategy="ars", popsize=16, sigma=0.025, target=3120.0, reward_shift=1.0,
                   strategy_options={"lr": 0.01, "top": 4}, islands=1),
    "HalfCheetah": dict(strategy="ars", popsize=64, sigma=0.03, target=3430.0,
                        strategy_options={"lr": 0.02, "top": 4}),
    "Walker2d": dict(strategy="ars", popsize=80, sigma=0.01, target=4390.0, reward_shift=1.0,
                     strategy_options={"lr": 0.025, "top": 30}),
    "Ant": dict(strategy="ars", popsize=120, sigma=0.025, target=3580.0, reward_shift=1.0,
                strategy_options={"lr": 0.015, "top": 20}),
    "Humanoid": dict(strategy="ars", popsize=460, sigma=0.0075, target=6000.0,
                     reward_shift=5.0, strategy_options={"lr": 0.02, "top": 230}),
}

# fmt: off
ENV_DEFAULTS: dict[str, dict[str, Any]] = {
    # why: small task, small net: docs/results/env-table.md#cartpole-v1
    "CartPole-v1": dict(
        strategy="cmaes", policy="mlp", hidden=(8,), popsize=16, sigma=0.5, episodes=2,
        max_episode_steps=500, obs_norm=False, target=475.0, generations=300),
    # why: sep-CMA-ES 48x3, migration 25: docs/results/env-table.md#lunarlander-v3
    "LunarLander-v3": dict(
        strategy="sep-cmaes", policy="mlp", hidden=(16,), popsize=48, sigma=0.5, episodes=3,
        max_episode_steps=1000, obs_norm=False, target=200.0, generations=3000,
        migration_interval=25),
    # why: the old LunarLander row: docs/results/env-table.md#lunarlandercontinuous-v3
    "LunarLanderContinuous-v3": dict(
        strategy="cmaes", policy="mlp", hidden=(16,), popsize=24, sigma=0.5, episodes=6,
        max_episode_steps=1000, obs_norm=False, target=200.0, generations=3000),
    # why: linear, boxed weights, resampling: docs/results/env-table.md#bipedalwalker-v3
    "BipedalWalker-v3": dict(
        strategy="cmaes", policy="mlp", hidden=(), popsize=48, sigma=0.5, episodes=1,
        max_episode_steps=1600, obs_norm=True, target=300.0, generations=20000,
        episodes_cap=4, restart_patience=20, strategy_options={"bounds": [-0.5, 0.5]}),
    # why: big CNN, first-order ES: docs/results/env-table.md#pong-v5
    "Pong-v5": dict(
        strategy="openai-es", policy="cnn", hidden=(32,), popsize=64, sigma=0.02, episodes=1,
        max_episode_steps=27000, obs_norm=False, target=0.0, generations=20000),
    # why: big MLP, first-order ES: docs/results/env-table.md#humanoid-v5
    "Humanoid-v5": dict(
        strategy="openai-es", policy="mlp", hidden=(64, 64), popsize=256, sigma=0.02,
        episodes=1, max_episode_steps=1000, obs_norm=True, target=6000.0, generations=20000),
    # why: MuJoCo locomotion, linear policies (ARS): docs/results/env-table.md#mujoco-v4
    **{f"{task}-v4": {**dict(
        policy="mlp", hidden=(), popsize=None, episodes=1, max_episode_steps=1000,
        obs_norm=True, generations=20000), **row} for task, row in MUJOCO.items()},
}
# why: a starting point for unknown ids: docs/results/env-table.md#any-other-id
GENERIC: dict[str, Any] = dict(
    strategy="cmaes", policy="mlp", hidden=(32,), popsize=None, sigma=0.5, episodes=3,
    max_episode_steps=None, obs_norm=True, target=None, generations=1000, migration_interval=5)
# fmt: on


def mujoco_task(env_id: str) -> str | None:
    """The MuJoCo task of ``env_id`` (``"Hopper"`` for ``"Hopper-v4"``), None for others."""
    task = str(env_id).rsplit("-v", 1)[0]
    return task if task in MUJOCO else None


# A user's function (``--problem``, env ``problem:TARGET``): one call is the whole
# evaluation (no episodes to average) and there are no observations to normalize.
FUNCTION: dict[str, Any] = dict(GENERIC, episodes=1, obs_norm=False)


def env_defaults(env_id: str) -> dict[str, Any]:
    """The table row for ``env_id`` (:data:`FUNCTION` for a user's function, the generic
    row for other ids not in the table)."""
    from envs.problem import PREFIX

    if str(env_id).startswith(PREFIX):
        return dict(FUNCTION)
    return dict(ENV_DEFAULTS.get(env_id, GENERIC))
