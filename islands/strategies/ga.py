"""Deep GA: truncation selection, Gaussian mutation, one elite; no crossover.

F. P. Such, V. Madhavan, E. Conti, J. Lehman, K. O. Stanley and J. Clune (2017), "Deep
neuroevolution: genetic algorithms are a competitive alternative for training deep neural
networks for reinforcement learning", arXiv:1712.06567.

The maths. The *pool* is the last evaluated population ``{(theta_i, F_i)}`` (plus any
immigrants). Each generation:

    parents  = the T fittest members of the pool                  (truncation selection)
    elite    = argmax_i F_i, copied unmutated into row 0           (elitism)
    child_k  = theta_{p_k} + sigma * eps_k,  p_k ~ U(parents),  eps_k ~ N(0, I),
               k = 1 .. N-1                                        (Gaussian mutation)

The elite is *re-evaluated* with the rest of the population: under noisy RL returns one
lucky episode must not keep an individual elite forever (the paper re-evaluates its top
10 candidates on 30 extra episodes to pick the elite; here the next generation's
evaluation of row 0 plays that role at no extra cost). Before the first ``tell`` the pool
is ``x0`` alone (fitness -inf), so the first population is ``x0`` and mutants of it.

Defaults: ``popsize`` 64 per island (the paper's 1,000 (Atari) or 12,500 (humanoid) are
reached by running many islands); truncation ``T = max(2, N // 5)`` (the paper keeps 20 of
1,000, 2 %; with an island of 64 that would be one parent, so 20 %, 12 of 64, keeps selection
strong while leaving some diversity); ``sigma`` 0.02 (the paper's 0.002 is ~10 % of a
Xavier-scaled Atari weight, fan-in ~3,000, scale ~0.02; for small MLPs, fan-in ~64 and weight
scale ~0.1-0.2, 10 % is 0.01-0.02, and 0.02 matches OpenAI-ES's sigma on similar nets).

Immigrants replace the worst members of the pool the next population is bred from (the
pool keeps at most ``popsize`` members; a full pool drops its worst members, and at most
``popsize`` immigrants, the fittest, are kept). An immigrant that beats the elite becomes
the next elite (re-evaluated in row 0); one in the top T can be chosen as a parent; worse
ones are never selected. Migrants that arrive while a generation is outstanding join the
pool right after that generation's ``tell``.
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

DEFAULT_SIGMA = 0.02
DEFAULT_POPSIZE = 64


class GA(Strategy):
    """Such et al. (2017) deep GA. Options: ``truncation`` (number of parents T)."""

    name = "ga"
    TUNABLE = ("sigma",)  # the mutation strength, fixed for the run

    def __init__(self, dim, popsize=None, sigma=None, seed=0, x0=None, **options) -> None:
        super().__init__(dim, popsize, sigma, seed, x0)
        check_options(self.name, options, {"truncation"})
        self.popsize = DEFAULT_POPSIZE if popsize is None else int(popsize)
        self.sigma = DEFAULT_SIGMA if sigma is None else float(sigma)
        t = options.get("truncation")
        self.truncation = max(2, self.popsize // 5) if t is None else int(t)
        if not 1 <= self.truncation <= self.popsize:
            raise ValueError(f"truncation must be in [1, popsize={self.popsize}], got {t}")
        self._rng = np.random.default_rng(self.seed)
        self.pool_X = check_x0(x0, self.dim)[None, :]
        self.pool_f = np.array([-np.inf])
        self._pending_X = np.empty((0, self.dim))  # migrants waiting for the outstanding tell
        self._pending_f = np.empty(0)

    @property
    def center(self) -> np.ndarray:
        """The elite: the fittest member of the pool."""
        return self.pool_X[int(np.argmax(self.pool_f))].copy()

    def _ask(self) -> np.ndarray:
        order = np.argsort(-self.pool_f, kind="stable")  # stable: ties keep the incumbent
        parents = self.pool_X[order[: self.truncation]]
        k = self._rng.integers(len(parents), size=self.popsize - 1)
        X = np.empty((self.popsize, self.dim))
        X[0] = self.pool_X[order[0]]
        children = self._rng.standard_normal(out=X[1:])  # built in place, rows 1..N-1
        children *= self.sigma
        children += parents[k]
        return X

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        self.pool_X, self.pool_f = X.copy(), f.copy()
        if len(self._pending_f):
            S, g = self._pending_X, self._pending_f
            self._pending_X, self._pending_f = np.empty((0, self.dim)), np.empty(0)
            self._merge(S, g)

    def _inject(self, S: np.ndarray, f: np.ndarray) -> None:
        if self._asked is not None:  # the pool is about to be replaced by the next tell
            self._pending_X = np.concatenate([self._pending_X, S])
            self._pending_f = np.concatenate([self._pending_f, f])
        else:
            self._merge(S, f)

    def _merge(self, S: np.ndarray, f: np.ndarray) -> None:
        best = np.argsort(-f, kind="stable")[: self.popsize]
        S, f = S[best], f[best]
        keep = min(len(self.pool_f), self.popsize - len(f))
        survivors = np.argsort(-self.pool_f, kind="stable")[:keep]  # drop the worst
        self.pool_X = np.concatenate([self.pool_X[survivors], S])
        self.pool_f = np.concatenate([self.pool_f[survivors], f])

    def _state(self) -> dict[str, Any]:
        return {
            "popsize": self.popsize,
            "sigma": self.sigma,
            "truncation": self.truncation,
            "pool_X": self.pool_X.copy(),
            "pool_f": self.pool_f.copy(),
            "pending_X": self._pending_X.copy(),
            "pending_f": self._pending_f.copy(),
            "rng": rng_state(self._rng),
        }

    def _load_state(self, d: dict[str, Any]) -> None:
        self.popsize = int(d["popsize"])
        self.sigma = float(d["sigma"])
        self.truncation = int(d["truncation"])
        self.pool_X = np.array(d["pool_X"], dtype=np.float64).reshape(-1, self.dim)
        self.pool_f = np.array(d["pool_f"], dtype=np.float64).reshape(-1)
        self._pending_X = np.array(d["pending_X"], dtype=np.float64).reshape(-1, self.dim)
        self._pending_f = np.array(d["pending_f"], dtype=np.float64).reshape(-1)
        set_rng_state(self._rng, d["rng"])
