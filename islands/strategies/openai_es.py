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

Migrants: one that beats the best-so-far re-centers the search and resets Adam
(:meth:`~islands.strategies.mirrored.MirroredES._inject`).
:class:`OpenAIES` runs on numpy; ``openai-es-nt`` (:mod:`islands.strategies.openai_es_nt`)
subclasses it and changes only where the noise comes from and where the arithmetic runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .adam import Adam
from .mirrored import MirroredES

DEFAULTS = {"lr": 0.01, "l2": 0.005, "b1": 0.9, "b2": 0.999, "adam_eps": 1e-8}
DEFAULT_SIGMA = 0.02
DEFAULT_POPSIZE = 64


def centered_ranks(f: np.ndarray) -> np.ndarray:
    """Ranks scaled to ``[-0.5, 0.5]``, the largest fitness getting +0.5."""
    ranks = np.empty(len(f))
    ranks[np.argsort(f, kind="stable")] = np.arange(len(f))
    return ranks / (len(f) - 1) - 0.5


class OpenAIES(MirroredES):
    """Salimans et al. (2017) ES. Options: ``lr``, ``l2``, ``b1``, ``b2``, ``adam_eps``.

    Mirrored sampling, the migrant rule and the shared state come from
    :class:`~islands.strategies.mirrored.MirroredES`; the update and Adam are here. A
    variant changes the noise and the array type through ``_setup``, ``_vector``, ``_ask``
    / ``_population`` and ``_gradient`` (openai-es-nt: a noise table on a torch device)."""

    name = "openai-es"
    OPTIONS: dict = DEFAULTS  # the option names accepted (a variant adds its own)
    TUNABLE = ("sigma", "lr")
    DEFAULT_POPSIZE, DEFAULT_SIGMA = DEFAULT_POPSIZE, DEFAULT_SIGMA

    def _settings(self, options: dict) -> dict[str, Any]:
        hp = {k: float(options.get(k, v)) for k, v in DEFAULTS.items()}
        if not hp["lr"] > 0 or not hp["l2"] >= 0 or not hp["adam_eps"] > 0:
            raise ValueError(f"{self.name} needs lr > 0, l2 >= 0, adam_eps > 0, got {hp}")
        if not (0 <= hp["b1"] < 1 and 0 <= hp["b2"] < 1):
            raise ValueError(f"{self.name} needs 0 <= b1, b2 < 1, got {hp}")
        return hp

    def _set_hyperparameter(self, name: str, value: float) -> None:
        super()._set_hyperparameter(name, value)
        if name == "lr":
            self.adam.lr = value  # Adam holds the step size it ascends with

    def _recenter(self, x: np.ndarray) -> None:
        """``theta = x`` with fresh Adam moments: at the start, for a migrant (the moments
        were estimated around the old ``theta`` and point the wrong way from the new one),
        on load."""
        super()._recenter(x)
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

    def _step(self, X, f: np.ndarray) -> None:
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

    def _state(self) -> dict[str, Any]:
        return {**super()._state(), **self.adam.state_dict()}  # + "m", "v", "t"

    def _load_state(self, d: dict[str, Any]) -> None:
        super()._load_state(d)  # a fresh Adam at the stored theta, then its moments
        self.adam.load_state_dict(d)
