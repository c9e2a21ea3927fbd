"""The contract every strategy meets, and the bookkeeping they share.

A strategy **maximizes** fitness. Public methods do the bookkeeping (shape checks, NaN/inf
sanitizing, best-so-far tracking); subclasses implement the maths in ``_ask`` / ``_tell`` /
``_inject`` and their state in ``_state`` / ``_load_state``.

State dicts hold only plain data (numpy arrays, Python numbers, strings, lists and dicts of
those) so that checkpoints load without unpickling (``np.savez`` + JSON).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np


def sanitize_fitness(fitness: np.ndarray) -> np.ndarray:
    """Return float64 fitness where NaN and ±inf become the worst finite value.

    "Worst" is one below the smallest finite value in the batch (or -1e300 if none is
    finite), so a broken individual ranks last without dragging a distribution's update
    towards infinities. +inf counts as broken too: an env that overflows is not a success.
    """
    f = np.asarray(fitness, dtype=np.float64).reshape(-1).copy()
    bad = ~np.isfinite(f)
    if bad.any():
        good = f[~bad]
        worst = (good.min() - 1.0) if good.size else -1e300
        f[bad] = worst
    return f


def rng_state(rng: np.random.Generator) -> dict:
    """A numpy Generator's state as a plain dict (PCG64: ints and strings only)."""
    return rng.bit_generator.state


def set_rng_state(rng: np.random.Generator, state: dict) -> None:
    # JSON round trips may turn the ints into Python ints already; PCG64 accepts them.
    rng.bit_generator.state = state


def check_x0(x0, dim: int) -> np.ndarray:
    """``x0`` as a float64 copy of shape ``(dim,)`` (zeros when None); ValueError otherwise."""
    if x0 is None:
        return np.zeros(dim)
    x = np.array(x0, dtype=np.float64).reshape(-1)
    if x.shape != (dim,) or not np.isfinite(x).all():
        raise ValueError(f"x0 must be {dim} finite numbers, got shape {np.shape(x0)}")
    return x


def check_options(strategy: str, options: dict, allowed) -> None:
    """Refuse option names a strategy does not know (never silently ignored)."""
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(
            f"unknown option {unknown[0]!r} for strategy {strategy!r}; valid: {sorted(allowed)}"
        )


class Strategy(ABC):
    """Base class. Subclasses set ``name`` and implement the underscore methods."""

    name: str = "base"

    def __init__(
        self,
        dim: int,
        popsize: int | None = None,
        sigma: float | None = None,
        seed: int = 0,
        x0: np.ndarray | None = None,
    ) -> None:
        if int(dim) < 1:
            raise ValueError(f"dim must be positive, got {dim}")
        if popsize is not None and int(popsize) < 2:
            raise ValueError(f"popsize must be at least 2, got {popsize}")
        if sigma is not None and not float(sigma) > 0:
            raise ValueError(f"sigma must be positive, got {sigma}")
        self.dim = int(dim)
        self.seed = int(seed)
        self._best_x: np.ndarray | None = None
        self._best_f: float = -np.inf
        self._asked: np.ndarray | None = None
        self.generation = 0

    # ---- public contract -------------------------------------------------------------
    popsize: int
    sigma: float  # the step size now (CMA-ES adapts it; the others keep their initial one)

    def ask(self) -> np.ndarray:
        """Sample the next population, shape ``(popsize, dim)``, float64."""
        X = np.asarray(self._ask(), dtype=np.float64)
        assert X.shape == (self.popsize, self.dim), X.shape
        self._asked = X
        return X.copy()

    def tell(self, fitness) -> None:
        """Update with the fitness (to maximize) of the last ``ask()``, shape ``(popsize,)``."""
        if self._asked is None:
            raise RuntimeError("tell() called before ask()")
        f = np.asarray(fitness, dtype=np.float64).reshape(-1)
        if f.shape != (self.popsize,):
            raise ValueError(f"fitness must have shape ({self.popsize},), got {f.shape}")
        f = sanitize_fitness(f)
        i = int(np.argmax(f))
        if np.isfinite(np.asarray(fitness, dtype=np.float64)[i]) and f[i] > self._best_f:
            self._best_f, self._best_x = float(f[i]), self._asked[i].copy()
        X, self._asked = self._asked, None
        self._tell(X, f)
        self.generation += 1

    def inject(self, solutions, fitness) -> None:
        """Accept migrants (rows of ``solutions``) with their fitness from other islands."""
        S = np.asarray(solutions, dtype=np.float64)
        if S.ndim == 1:
            S = S[None, :]
        f = np.asarray(fitness, dtype=np.float64).reshape(-1)
        if S.shape[1:] != (self.dim,) or f.shape[0] != S.shape[0]:
            raise ValueError(
                f"migrants must have shape (k, {self.dim}) with k fitness values, "
                f"got {S.shape} and {f.shape}"
            )
        keep = np.isfinite(f) & np.isfinite(S).all(axis=1)
        S, f = S[keep], f[keep]
        if len(f) == 0:
            return
        i = int(np.argmax(f))
        if f[i] > self._best_f:
            self._best_f, self._best_x = float(f[i]), S[i].copy()
        self._inject(S, f)

    @property
    def best(self) -> tuple[np.ndarray | None, float]:
        """(params, fitness) of the best solution evaluated here (or received as migrant)."""
        return (None if self._best_x is None else self._best_x.copy()), self._best_f

    def stop_reason(self) -> str | None:
        """Why this strategy has converged or stalled by its own criteria (a collapsed step
        size, flat fitness, ...), or None to go on. Asked once per generation, after
        ``tell``, by islands that restart (:mod:`islands.island.restarts`); it may update internal
        bookkeeping, so it is part of the strategy's deterministic trajectory there.
        Strategies without such criteria (fixed step sizes) keep this default."""
        return None

    @property
    @abstractmethod
    def center(self) -> np.ndarray:
        """The current search center (distribution mean, or the GA elite)."""

    def state_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dim": self.dim,
            "popsize": self.popsize,
            "seed": self.seed,
            "generation": self.generation,
            "best_x": None if self._best_x is None else self._best_x.copy(),
            "best_f": self._best_f,
            "asked": None if self._asked is None else self._asked.copy(),
            "impl": self._state(),
        }

    def load_state_dict(self, d: dict[str, Any]) -> None:
        if d["name"] != self.name or int(d["dim"]) != self.dim:
            raise ValueError(
                f"state is for {d['name']} with dim {d['dim']}, "
                f"this is {self.name} with dim {self.dim}"
            )
        self.seed = int(d["seed"])
        self.generation = int(d["generation"])
        self._best_x = None if d["best_x"] is None else np.array(d["best_x"], dtype=np.float64)
        self._best_f = float(d["best_f"])
        self._asked = None if d["asked"] is None else np.array(d["asked"], dtype=np.float64)
        self._load_state(d["impl"])

    # ---- subclass hooks --------------------------------------------------------------
    @abstractmethod
    def _ask(self) -> np.ndarray: ...

    @abstractmethod
    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        """``f`` is already sanitized (finite) and to be maximized."""

    @abstractmethod
    def _inject(self, S: np.ndarray, f: np.ndarray) -> None: ...

    @abstractmethod
    def _state(self) -> dict[str, Any]: ...

    @abstractmethod
    def _load_state(self, d: dict[str, Any]) -> None: ...
