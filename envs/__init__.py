"""Evaluators: a population of parameter vectors in, fitness out (no Ray needed).

::

    from envs import make_evaluator
    ev = make_evaluator("LunarLander-v3", policy="mlp", policy_options={"hidden": (16,)},
                        episodes=4, num_threads=2)
    res = ev.evaluate(params, seed=generation)  # params (P, ev.num_params)
    res.fitness, res.lengths, res.env_steps, res.live_fraction

or from an :class:`EvalSpec`, one picklable value holding the same arguments (what the
launcher sends to islands and the tester)::

    spec = EvalSpec("LunarLander-v3", policy_options={"hidden": (16,)}, episodes=4)
    ev = spec.build(num_threads=2)

Backends: ``"envpool"`` (default for every id EnvPool has), ``"gymnasium"`` (any other
Gymnasium id, ``"package.module:ClassName"``, or an id registered by ``env_module``) and
``"torch"`` (torch-native CartPole and Snake on CPU or CUDA).
"""

from __future__ import annotations

from .base import EvalResult, Evaluator
from .factory import make_evaluator
from .spaces import BACKENDS, env_spaces
from .spec import EvalSpec

__all__ = ["BACKENDS", "EvalResult", "EvalSpec", "Evaluator", "env_spaces", "make_evaluator"]
