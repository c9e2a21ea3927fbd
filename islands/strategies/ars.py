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

from .mirrored import MirroredES

ARS_DEFAULTS: dict[str, Any] = {"lr": 0.02, "top": None}
DEFAULT_SIGMA = 0.03
DEFAULT_POPSIZE = 16


class ARS(MirroredES):
    """ARS V2-t. Options: ``lr`` (alpha), ``top`` (b, at most popsize / 2).

    Mirrored sampling and the migrant rule come from
    :class:`~islands.strategies.mirrored.MirroredES`; the update is here (no Adam)."""

    name = "ars"
    OPTIONS: dict = ARS_DEFAULTS
    TUNABLE = ("sigma", "lr")  # nu and alpha: the paper tunes both per task (its Table 9)
    DEFAULT_POPSIZE, DEFAULT_SIGMA = DEFAULT_POPSIZE, DEFAULT_SIGMA

    def _settings(self, options: dict) -> dict[str, Any]:
        """Validated ``{"lr", "top"}``: ``top`` defaults to every direction."""
        directions = self.popsize // 2
        lr = float(options.get("lr", ARS_DEFAULTS["lr"]))
        top = options.get("top")
        top = directions if top is None else int(top)
        if not lr > 0:
            raise ValueError(f"ars needs lr > 0, got {lr}")
        if not 1 <= top <= directions:
            raise ValueError(f"ars needs 1 <= top <= popsize / 2 = {directions}, got {top}")
        return {"lr": lr, "top": top}

    def _loaded_settings(self, hp: dict) -> dict[str, Any]:
        return {"lr": float(hp["lr"]), "top": int(hp["top"])}

    def _top(self, f: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The kept directions and their step coefficients ``lr / (b sigma_R) * (r+ - r-)``
        (None: no step this generation); the step is ``sum_k coef_k delta_k``."""
        h = self.popsize // 2
        plus, minus = f[:h], f[h:]
        # a broken return (NaN, inf) is ranked "worst - 1" by the base class, a value that
        # would enter the step and the spread as if measured: only pairs seen on both sides
        pairs = np.flatnonzero(self.measured[:h] & self.measured[h:])
        b = min(int(self.hp["top"]), len(pairs))
        if not b:
            return None
        keep = pairs[np.argsort(-np.maximum(plus, minus)[pairs], kind="stable")[:b]]
        spread = np.concatenate([plus[keep], minus[keep]]).std()
        if not spread > 0:  # every kept return equal: no direction is better than another
            return None
        return keep, self.hp["lr"] / (b * spread) * (plus[keep] - minus[keep])

    def _step(self, X, f: np.ndarray) -> None:
        top = self._top(f)
        if top is not None:
            keep, coef = top
            self.theta = self.theta + coef @ ((X[keep] - self.theta) / self.sigma)
