"""OpenAI-ES: mirrored Gaussian perturbations, centered-rank shaping, Adam, fixed sigma.

T. Salimans, J. Ho, X. Chen, S. Sidor and I. Sutskever (2017), "Evolution strategies as a
scalable alternative to reinforcement learning", arXiv:1703.03864; hyperparameters and the
update as in their code (github.com/openai/evolution-strategies-starter). Adam: D. P.
Kingma and J. Ba (2015), "Adam: a method for stochastic optimization", ICLR
(:mod:`islands.strategies.adam`).

The maths. The search distribution is ``N(theta, sigma^2 I)`` with fixed ``sigma``; the
objective is the smoothed fitness ``J(theta) = E_eps[F(theta + sigma eps)]`` whose gradient
is ``grad J = E[F(theta + sigma eps) eps] / sigma``. Each generation draws ``n/2`` noise
vectors and evaluates both ``theta + sigma eps_j`` and ``theta - sigma eps_j`` (antithetic
pairs: the even part of F cancels, lowering the variance). Fitness is replaced by centered
ranks ``u = rank / (n - 1) - 1/2`` in ``[-1/2, 1/2]`` (ascending, so the best gets +1/2),
which makes the update invariant to monotone transforms of F and robust to outliers; then
``g = 1/n sum_j (u_j+ - u_j-) eps_j`` (:meth:`OpenAIES._gradient`: why without the
``1/sigma``) and one Adam ascent step on ``d = g - l2 * theta`` (L2 weight decay).

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

Migrants: one that beats the best-so-far re-centers the search (:meth:`OpenAIES._inject`).
:class:`OpenAIES` runs on numpy; ``openai-es-nt`` (:mod:`islands.strategies.openai_es_nt`)
subclasses it and changes only where the noise comes from and where the arithmetic runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .adam import Adam
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
    """Validated (popsize, sigma, hyperparameters) of an OpenAI-ES variant."""
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
    """Salimans et al. (2017) ES. Options: ``lr``, ``l2``, ``b1``, ``b2``, ``adam_eps``.

    The update, the migrant rule and the state are written once, here; a variant changes
    the noise and the array type through ``_setup``, ``_vector``, ``_ask`` /
    ``_population`` and ``_gradient`` (openai-es-nt: a noise table on a torch device)."""

    name = "openai-es"
    OPTIONS: dict = DEFAULTS  # the option names accepted (a variant adds its own)
    TUNABLE = ("sigma", "lr")

    def __init__(self, dim, popsize=None, sigma=None, seed=0, x0=None, **options) -> None:
        super().__init__(dim, popsize, sigma, seed, x0)
        check_options(self.name, options, self.OPTIONS)
        self.popsize, self.sigma, self.hp = es_settings(self.name, popsize, sigma, options)
        self._setup(options)
        self._rng = np.random.default_rng(self.seed)
        self._stale = False  # outstanding generation asked around a theta we have left
        self._recenter(check_x0(x0, self.dim))

    def _set_hyperparameter(self, name: str, value: float) -> None:
        super()._set_hyperparameter(name, value)
        if name == "lr":
            self.adam.lr = value  # Adam holds the step size it ascends with

    def _setup(self, options: dict) -> None:
        """A variant's own options, read after the shared ones and before theta exists."""

    def _vector(self, x: np.ndarray):
        """``x`` (float64 numpy) as a new array of the type ``theta`` is kept in."""
        return np.array(x, dtype=np.float64)

    def _recenter(self, x: np.ndarray) -> None:
        """``theta = x`` with fresh Adam moments: at the start, for a migrant, on load."""
        self.theta = self._vector(x)
        hp = self.hp
        self.adam = Adam(self.theta, hp["lr"], hp["b1"], hp["b2"], hp["adam_eps"])

    @property
    def m(self):
        """Adam's first moment (kept in :attr:`adam`; read-only here)."""
        return self.adam.m

    @property
    def v(self):
        """Adam's second moment."""
        return self.adam.v

    @property
    def t(self) -> int:
        """Adam steps since the last re-centering."""
        return self.adam.t

    @property
    def center(self) -> np.ndarray:
        return np.array(self._to_host(self.theta))

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

    def _tell(self, X, f: np.ndarray) -> None:
        if self._stale:  # asked around a theta a migrant has replaced since: dropped
            self._stale = False
            return
        g = self._gradient(X, centered_ranks(f))
        self.theta = self.adam.ascend(self.theta, g, self.hp["l2"])

    def _gradient(self, X, u: np.ndarray):
        """``g = 1/n sum_j (u_j+ - u_j-) eps_j`` from the asked generation ``X`` and its
        centered ranks ``u`` (rows ``j`` and ``j + n/2`` are the mirrored pair).

        ``g`` is sigma times the estimate of ``grad J``: it leaves out the ``1/sigma`` factor,
        as the reference code does (``g /= returns_n2.size; optimizer.update(-g + l2coeff *
        theta)``). Adam is invariant to a global scale of its input, but the balance between
        ``g`` and the decay ``l2 * theta`` is not, and ``l2 = 0.005`` was tuned with this
        convention. Here ``eps`` is recovered from the samples (theta is unchanged since the
        ask), which saves storing it."""
        h = self.popsize // 2
        eps = (X[:h] - self.theta) / self.sigma
        return (u[:h] - u[h:]) @ eps / self.popsize

    def _inject(self, S: np.ndarray, f: np.ndarray) -> None:
        """The migrant rule (both variants).

        A migrant whose fitness beats this island's best-so-far (as it stood before the
        migrant arrived: the base class calls this hook first) re-centers the distribution
        there (``theta = migrant``) and resets Adam (``m = v = 0, t = 0``): the moments were
        estimated around the old ``theta`` and point the wrong way from the new one. Other
        migrants are ignored: a single point carries no gradient information for a
        fixed-sigma ES. If a generation is outstanding (asked, not yet told) when the
        distribution is re-centered, its fitness still counts for the best-so-far but its
        gradient, estimated around the old ``theta``, is dropped."""
        i = int(np.argmax(f))
        if f[i] > self._best_f:
            self._recenter(S[i])
            self._stale = self._asked is not None

    def _adopt(self, x: np.ndarray, fitness: float) -> None:
        self._recenter(x)  # fresh Adam moments, as for a migrant that beats the best so far
        self._stale = self._asked is not None

    def _state(self) -> dict[str, Any]:
        return {
            "popsize": self.popsize,
            "sigma": self.sigma,
            "hp": dict(self.hp),
            "theta": self.center,
            **self.adam.state_dict(),  # "m", "v", "t"
            "stale": self._stale,
            "rng": rng_state(self._rng),
        }

    def _load_state(self, d: dict[str, Any]) -> None:
        self.popsize = int(d["popsize"])
        self.sigma = float(d["sigma"])
        self.hp = {k: float(v) for k, v in d["hp"].items()}
        self._recenter(np.asarray(d["theta"], dtype=np.float64))
        self.adam.load_state_dict(d)
        self._stale = bool(d["stale"])
        set_rng_state(self._rng, d["rng"])
