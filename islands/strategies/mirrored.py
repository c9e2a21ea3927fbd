"""Mirrored sampling around a center with a fixed sigma: what OpenAI-ES and ARS share.

Both evaluate antithetic pairs ``theta + sigma eps_j`` and ``theta - sigma eps_j`` (rows
``j`` and ``j + n/2``, so the popsize is even), re-center on a migrant that beats the best so
far, and drop the gradient of a generation asked around a center that has since been
replaced. They differ in the update (``_step``), in their settings (``_settings``) and in
what comes with a new center (``_recenter``: fresh Adam moments for OpenAI-ES, nothing for
ARS). Salimans et al. (2017), arXiv:1703.03864; Mania, Guy and Recht (2018),
arXiv:1803.07055.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Strategy, check_options, check_x0, rng_state, set_rng_state


class MirroredES(Strategy):
    """A center ``theta``, a fixed ``sigma`` and a mirrored population; subclasses set
    ``DEFAULT_POPSIZE`` / ``DEFAULT_SIGMA`` and implement ``_settings`` and ``_step``."""

    DEFAULT_POPSIZE: int
    DEFAULT_SIGMA: float

    def __init__(self, dim, popsize=None, sigma=None, seed=0, x0=None, **options) -> None:
        super().__init__(dim, popsize, sigma, seed, x0)
        check_options(self.name, options, self.OPTIONS)
        self.popsize = self.DEFAULT_POPSIZE if popsize is None else int(popsize)
        if self.popsize % 2:
            raise ValueError(
                f"{self.name} needs an even popsize (mirrored pairs), got {self.popsize}")
        self.sigma = self.DEFAULT_SIGMA if sigma is None else float(sigma)
        self.hp = self._settings(options)
        self._setup(options)
        self._rng = np.random.default_rng(self.seed)
        self._stale = False  # outstanding generation asked around a theta we have left
        self._recenter(check_x0(x0, self.dim))

    def _settings(self, options: dict) -> dict[str, Any]:
        """The validated hyperparameters ``self.hp`` from the options."""
        raise NotImplementedError

    def _setup(self, options: dict) -> None:
        """A variant's own options, read after the shared ones and before theta exists."""

    def _vector(self, x: np.ndarray):
        """``x`` (float64 numpy) as a new array of the type ``theta`` is kept in."""
        return np.array(x, dtype=np.float64)

    def _recenter(self, x: np.ndarray) -> None:
        """``theta = x``: at the start, for a migrant, on load."""
        self.theta = self._vector(x)

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
        self._step(X, f)

    def _step(self, X, f: np.ndarray) -> None:
        """The update of ``theta`` from the asked generation ``X`` and its fitness ``f``."""
        raise NotImplementedError

    def _inject(self, S: np.ndarray, f: np.ndarray) -> None:
        """The migrant rule: a migrant whose fitness beats this island's best-so-far (as it
        stood before the migrant arrived: the base class calls this hook first) re-centers
        the distribution there. Other migrants are ignored: a single point carries no
        gradient information for a fixed-sigma ES. A generation outstanding (asked, not yet
        told) at the re-centering still counts for the best-so-far, but its gradient,
        estimated around the old ``theta``, is dropped."""
        i = int(np.argmax(f))
        if f[i] > self._best_f:
            self._recenter(S[i])
            self._stale = self._asked is not None

    def _adopt(self, x: np.ndarray, fitness: float) -> None:
        self._recenter(x)  # as for a migrant that beats the best so far
        self._stale = self._asked is not None

    def _state(self) -> dict[str, Any]:
        return {"popsize": self.popsize, "sigma": self.sigma, "hp": dict(self.hp),
                "theta": self.center, "stale": self._stale, "rng": rng_state(self._rng)}

    def _load_state(self, d: dict[str, Any]) -> None:
        self.popsize, self.sigma = int(d["popsize"]), float(d["sigma"])
        self.hp = self._loaded_settings(d["hp"])
        self._recenter(np.asarray(d["theta"], dtype=np.float64))
        self._stale = bool(d["stale"])
        set_rng_state(self._rng, d["rng"])

    def _loaded_settings(self, hp: dict) -> dict[str, Any]:
        """``self.hp`` as a checkpoint stored it (JSON may have turned numbers into others)."""
        return {k: float(v) for k, v in hp.items()}
