"""OpenAI-ES: mirrored Gaussian perturbations, centered-rank shaping, Adam, fixed sigma.

T. Salimans, J. Ho, X. Chen, S. Sidor and I. Sutskever (2017), "Evolution strategies as a
scalable alternative to reinforcement learning", arXiv:1703.03864; hyperparameters and the
update as in their code (github.com/openai/evolution-strategies-starter). Adam: D. P.
Kingma and J. Ba (2015), "Adam: a method for stochastic optimization", ICLR.

The maths. The search distribution is ``N(theta, sigma^2 I)`` with fixed ``sigma``; the
objective is the smoothed fitness ``J(theta) = E_eps[F(theta + sigma eps)]`` whose gradient
is ``grad J = E[F(theta + sigma eps) eps] / sigma``. Each generation draws ``n/2`` noise
vectors and evaluates both ``theta + sigma eps_j`` and ``theta - sigma eps_j`` (antithetic
pairs: the even part of F cancels, lowering the variance). Fitness is replaced by centered
ranks ``u = rank / (n - 1) - 1/2`` in ``[-1/2, 1/2]`` (ascending, so the best gets +1/2),
which makes the update invariant to monotone transforms of F and robust to outliers:

    g = 1 / n * sum_j (u_j+ - u_j-) eps_j            (sigma times the estimate of grad J)
    d = g - l2 * theta                                      (L2 weight decay)
    t += 1;  m = b1 m + (1 - b1) d;  v = b2 v + (1 - b2) d^2
    theta += lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)     (Adam ascent)

The gradient estimate leaves out the ``1/sigma`` factor, as the reference code does
(``g /= returns_n2.size; optimizer.update(-g + l2coeff * theta)``): Adam is invariant to a
global scale of its input, but the balance between ``g`` and the decay ``l2 * theta`` is not,
and ``l2 = 0.005`` was tuned with this convention.

Defaults:

==========  =======  ==================================================================
parameter   default  source / why
==========  =======  ==================================================================
sigma       0.02     Salimans et al. (2017) code, MuJoCo configs ("noise_stdev")
lr          0.01     ibid. ("stepsize", Adam)
l2          0.005    ibid. ("l2coeff")
b1, b2      0.9,     Kingma & Ba (2015), as in the OpenAI code
            0.999
adam_eps    1e-8     ibid.
popsize     64       even (mirrored pairs). The paper evaluates thousands of perturbations
                     per update over all workers; 64 per island keeps one island cheap,
                     and 8-16 islands give the paper's order of magnitude
==========  =======  ==================================================================

Migrant rule: a migrant whose fitness beats this island's best-so-far (as it stood before
the migrant arrived) re-centers the distribution there (``theta = migrant``) and resets
Adam (``m = v = 0, t = 0``): the moments were estimated around the old ``theta`` and point
the wrong way from the new one. Other migrants are ignored: a single point carries no
gradient information for a fixed-sigma ES. If a generation is outstanding (asked, not yet
told) when the distribution is re-centered, its fitness still counts for the best-so-far
but its gradient, estimated around the old ``theta``, is dropped.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import (
    Strategy,
    check_options,
    check_x0,
    rng_state,
    set_rng_state,
)

DEFAULTS = {"lr": 0.01, "l2": 0.005, "b1": 0.9, "b2": 0.999, "adam_eps": 1e-8}
DEFAULT_SIGMA = 0.02
DEFAULT_POPSIZE = 64


def centered_ranks(f: np.ndarray) -> np.ndarray:
    """Ranks scaled to ``[-0.5, 0.5]``, the largest fitness getting +0.5."""
    ranks = np.empty(len(f))
    ranks[np.argsort(f, kind="stable")] = np.arange(len(f))
    return ranks / (len(f) - 1) - 0.5



def es_settings(name: str, popsize, sigma, options: dict) -> tuple[int, float, dict]:
    """Validated (popsize, sigma, hyperparameters) of an OpenAI-ES variant (shared by
    ``openai-es`` and ``openai-es-nt`` so both read the same defaults the same way)."""
    popsize = DEFAULT_POPSIZE if popsize is None else int(popsize)
    if popsize % 2:
        raise ValueError(f"{name} needs an even popsize (mirrored pairs), got {popsize}")
    sigma = DEFAULT_SIGMA if sigma is None else float(sigma)
    hp = {k: float(options.get(k, v)) for k, v in DEFAULTS.items()}
    if not hp["lr"] > 0 or not hp["l2"] >= 0 or not hp["adam_eps"] > 0:
        raise ValueError(f"{name} needs lr > 0, l2 >= 0, adam_eps > 0, got {hp}")
    if not (0 <= hp["b1"] < 1 and 0 <= hp["b2"] < 1):
        raise ValueError(f"{name} needs 0 <= b1, b2 < 1, got {hp}")
    return popsize, sigma, hp

class OpenAIES(Strategy):
    """Salimans et al. (2017) ES. Options: ``lr``, ``l2``, ``b1``, ``b2``, ``adam_eps``."""

    name = "openai-es"

    def __init__(self, dim, popsize=None, sigma=None, seed=0, x0=None, **options) -> None:
        super().__init__(dim, popsize, sigma, seed, x0)
        check_options(self.name, options, DEFAULTS)
        self.popsize, self.sigma, self.hp = es_settings(self.name, popsize, sigma, options)
        self.theta = check_x0(x0, self.dim)
        self._rng = np.random.default_rng(self.seed)
        self._reset_adam()
        self._stale = False  # outstanding generation asked around a theta we have left

    def _reset_adam(self) -> None:
        self.m = np.zeros(self.dim)
        self.v = np.zeros(self.dim)
        self.t = 0

    @property
    def center(self) -> np.ndarray:
        return self.theta.copy()

    def _ask(self) -> np.ndarray:
        self._stale = False
        # rows j and j + n/2 are the mirrored pair theta +- sigma eps_j (built in place: at
        # 1M parameters a population is 512 MB, so no temporaries of that size)
        h = self.popsize // 2
        X = np.empty((self.popsize, self.dim))
        step = self._rng.standard_normal(out=X[:h])
        step *= self.sigma
        np.subtract(self.theta, step, out=X[h:])
        step += self.theta
        return X

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        if self._stale:
            self._stale = False
            return
        h = self.popsize // 2
        # eps recovered from the samples (theta is unchanged since ask): saves storing it
        eps = (X[:h] - self.theta) / self.sigma
        u = centered_ranks(f)
        g = (u[:h] - u[h:]) @ eps / self.popsize
        d = g - self.hp["l2"] * self.theta
        b1, b2 = self.hp["b1"], self.hp["b2"]
        self.t += 1
        self.m = b1 * self.m + (1 - b1) * d
        self.v = b2 * self.v + (1 - b2) * d * d
        a = self.hp["lr"] * np.sqrt(1 - b2**self.t) / (1 - b1**self.t)
        self.theta = self.theta + a * self.m / (np.sqrt(self.v) + self.hp["adam_eps"])

    def inject(self, solutions, fitness) -> None:
        self._best_before_inject = self._best_f  # the base class updates the best first
        super().inject(solutions, fitness)

    def _inject(self, S: np.ndarray, f: np.ndarray) -> None:
        i = int(np.argmax(f))
        if f[i] > self._best_before_inject:
            self.theta = S[i].copy()
            self._reset_adam()
            self._stale = self._asked is not None

    def _state(self) -> dict[str, Any]:
        return {
            "popsize": self.popsize,
            "sigma": self.sigma,
            "hp": dict(self.hp),
            "theta": self.theta.copy(),
            "m": self.m.copy(),
            "v": self.v.copy(),
            "t": self.t,
            "stale": self._stale,
            "rng": rng_state(self._rng),
        }

    def _load_state(self, d: dict[str, Any]) -> None:
        self.popsize = int(d["popsize"])
        self.sigma = float(d["sigma"])
        self.hp = {k: float(v) for k, v in d["hp"].items()}
        self.theta = np.array(d["theta"], dtype=np.float64)
        self.m = np.array(d["m"], dtype=np.float64)
        self.v = np.array(d["v"], dtype=np.float64)
        self.t = int(d["t"])
        self._stale = bool(d["stale"])
        set_rng_state(self._rng, d["rng"])
