"""Augmented Random Search, V2-t: mirrored directions, the top ``b`` of them, a step scaled
by their returns' spread, plain gradient ascent.

H. Mania, A. Guy and B. Recht (2018), "Simple random search provides a competitive approach
to reinforcement learning", arXiv:1803.07055 (Algorithm 1, versions V1-t/V2-t; V2's
observation normalization is the evaluator's ``--obs-norm``, the survival-bonus ``shift``
is ``--reward-shift``). The field's yardstick on MuJoCo: its episode counts are what
``docs/results/mujoco.md`` compares with, so the algorithm itself runs as an island here.

The maths. Each generation draws ``N = popsize / 2`` directions ``delta_k ~ N(0, I)`` and
evaluates ``theta + nu delta_k`` and ``theta - nu delta_k`` (rows ``k`` and ``k + N``;
``nu`` is ``sigma``). The directions are sorted by ``max(r+_k, r-_k)`` and the ``b`` best
kept (``top``); with ``sigma_R`` the standard deviation of those ``2b`` returns,

    theta <- theta + lr / (b sigma_R) * sum_{k in top b} (r+_k - r-_k) delta_k.

Unlike OpenAI-ES (:mod:`islands.strategies.openai_es`) the raw returns, not their ranks,
weight the directions, there is no Adam and no weight decay, and dropping the directions
whose both sides did badly keeps their noise out of the step (the paper's "-t").

==========  =======  ==================================================================
parameter   default  source / why
==========  =======  ==================================================================
popsize     16       2N with N = 8, Hopper's N in the paper's V2-t table (its Table 9
                     ranges from N = 1, Swimmer, to 230, Humanoid)
sigma       0.03     ``nu``, HalfCheetah's and the ARS code's default ``delta_std``
lr          0.02     ``alpha``, the ARS code's default ``step_size``
top         N        ``b``: every direction (V2); the table uses fewer on HalfCheetah
                     (4 of 32), Hopper (4 of 8), Walker2d (30 of 40), Ant (20 of 60)
==========  =======  ==================================================================

A pair with a broken side (NaN or infinite return: a crashed episode) is left out of the
step. Migrants: as OpenAI-ES, one that beats the best-so-far re-centers ``theta`` there.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Strategy, check_options, check_x0, rng_state, set_rng_state
from .openai_es import OpenAIES

ARS_DEFAULTS: dict[str, Any] = {"lr": 0.02, "top": None}
DEFAULT_SIGMA = 0.03
DEFAULT_POPSIZE = 16


class ARS(OpenAIES):
    """ARS V2-t. Options: ``lr`` (alpha), ``top`` (b, at most popsize / 2).

    Shares OpenAI-ES's mirrored sampling and migrant rule; replaces its update (and so
    keeps no Adam moments)."""

    name = "ars"
    OPTIONS: dict = ARS_DEFAULTS
    TUNABLE = ("sigma", "lr")  # nu and alpha: the paper tunes both per task (its Table 9)

    def __init__(self, dim, popsize=None, sigma=None, seed=0, x0=None, **options) -> None:
        Strategy.__init__(self, dim, popsize, sigma, seed, x0)
        check_options(self.name, options, self.OPTIONS)
        self.popsize = DEFAULT_POPSIZE if popsize is None else int(popsize)
        if self.popsize % 2:
            raise ValueError(f"ars needs an even popsize (mirrored pairs), got {self.popsize}")
        self.sigma = DEFAULT_SIGMA if sigma is None else float(sigma)
        self.hp = _settings(options, self.popsize // 2)
        self._rng = np.random.default_rng(self.seed)
        self._stale = False
        self._recenter(check_x0(x0, self.dim))

    def _recenter(self, x: np.ndarray) -> None:
        self.theta = np.array(x, dtype=np.float64)

    # no Adam here: the step size is hp["lr"] alone
    _set_hyperparameter = Strategy._set_hyperparameter

    def _tell(self, X, f: np.ndarray) -> None:
        if self._stale:  # asked around a theta a migrant has replaced since: dropped
            self._stale = False
            return
        h = self.popsize // 2
        plus, minus = f[:h], f[h:]
        # a broken return (NaN, inf) is ranked "worst - 1" by the base class, a value that
        # would enter the step and the spread as if measured: only pairs seen on both sides
        pairs = np.flatnonzero(self.measured[:h] & self.measured[h:])
        b = min(int(self.hp["top"]), len(pairs))
        if not b:
            return
        keep = pairs[np.argsort(-np.maximum(plus, minus)[pairs], kind="stable")[:b]]
        spread = np.concatenate([plus[keep], minus[keep]]).std()
        if not spread > 0:  # every kept return equal: no direction is better than another
            return
        delta = (X[keep] - self.theta) / self.sigma
        self.theta = self.theta + self.hp["lr"] / (b * spread) * (
            (plus[keep] - minus[keep]) @ delta)

    def _state(self) -> dict[str, Any]:
        return {"popsize": self.popsize, "sigma": self.sigma, "hp": dict(self.hp),
                "theta": self.center, "stale": self._stale, "rng": rng_state(self._rng)}

    def _load_state(self, d: dict[str, Any]) -> None:
        self.popsize, self.sigma = int(d["popsize"]), float(d["sigma"])
        self.hp = {"lr": float(d["hp"]["lr"]), "top": int(d["hp"]["top"])}
        self._recenter(np.asarray(d["theta"], dtype=np.float64))
        self._stale = bool(d["stale"])
        set_rng_state(self._rng, d["rng"])


def _settings(options: dict, directions: int) -> dict[str, Any]:
    """Validated ``{"lr", "top"}``: ``top`` defaults to every direction."""
    lr = float(options.get("lr", ARS_DEFAULTS["lr"]))
    top = options.get("top")
    top = directions if top is None else int(top)
    if not lr > 0:
        raise ValueError(f"ars needs lr > 0, got {lr}")
    if not 1 <= top <= directions:
        raise ValueError(f"ars needs 1 <= top <= popsize / 2 = {directions}, got {top}")
    return {"lr": lr, "top": top}
