"""The contract every strategy meets, and the bookkeeping they share.

A strategy **maximizes** fitness. Public methods do the bookkeeping (shape checks, NaN/inf
sanitizing, best-so-far tracking); subclasses implement the maths in ``_ask`` / ``_tell`` /
``_inject`` and their state in ``_state`` / ``_load_state``.

Between ask and tell the base class keeps what ``_ask`` returned: the population, or for a
strategy that describes its genomes more compactly (openai-es-nt: offsets into a noise
table), that description, with ``_population`` / ``_asked_row`` building genomes from it.
``ask_native`` hands out the population in the strategy's own array type (a GPU tensor for
openai-es-nt), ``ask`` as float64 numpy; ``tell`` takes fitness in either.

State dicts hold only plain data (numpy arrays, Python numbers, strings, lists and dicts of
those) so that checkpoints load without unpickling (``np.savez`` + JSON).
"""

from __future__ import annotations

import math
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
    # the fixed settings the strategy runs with, by name ("sigma" or a key of ``self.hp``):
    # what --hp-spread spreads over the islands and an adopted migrant carries
    # (islands/island/spread.py); none where the strategy adapts its own (CMA-ES)
    TUNABLE: tuple[str, ...] = ()

    def ask(self) -> np.ndarray:
        """Sample the next population, shape ``(popsize, dim)``, float64."""
        return np.asarray(self._to_host(self.ask_native()), dtype=np.float64)

    def ask_native(self):
        """:meth:`ask` without the trip to the host: the population ``(popsize, dim)`` as the
        strategy builds it (numpy for most; a torch tensor on its device for openai-es-nt,
        what a GPU evaluator consumes). :meth:`tell` answers either."""
        X = self._population(self._begin_generation())
        assert tuple(X.shape) == (self.popsize, self.dim), X.shape
        return X

    def _begin_generation(self):
        """Sample a generation with ``_ask`` and keep what it returned until the tell."""
        self._asked = np.asarray(self._ask(), dtype=self._asked_dtype)
        return self._asked

    def tell(self, fitness) -> None:
        """Update with the fitness (to maximize) of the last ask, shape ``(popsize,)`` (numpy,
        or the strategy's own array type)."""
        if self._asked is None:
            raise RuntimeError("tell() called before ask()")
        raw = np.asarray(self._to_host(fitness), dtype=np.float64).reshape(-1)
        if raw.shape != (self.popsize,):
            raise ValueError(f"fitness must have shape ({self.popsize},), got {raw.shape}")
        f = sanitize_fitness(raw)
        self.measured = np.isfinite(raw)  # rows ranked last as broken, not measured (ars)
        i = int(np.argmax(f))
        if np.isfinite(raw[i]) and f[i] > self._best_f:
            self._best_f, self._best_x = float(f[i]), self._asked_row(i)
        asked, self._asked = self._asked, None
        self._tell(asked, f)
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
        self._inject(S, f)  # first: the hook sees the best-so-far the migrants met
        i = int(np.argmax(f))
        if f[i] > self._best_f:
            self._best_f, self._best_x = float(f[i]), S[i].copy()

    def adopt(self, x, fitness: float) -> None:
        """Move the search center to ``x``, a migrant of ``fitness`` that beat this island
        (``--migrant-rule adopt``: islands/island/adopt.py). Step size, covariance and the
        other settings stay the island's own. Strategies without a center that can move
        (GA) take it as a migrant."""
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        if x.shape != (self.dim,) or not np.isfinite(x).all():
            raise ValueError(f"an adopted center must be {self.dim} finite numbers")
        self._adopt(x, float(fitness))
        if fitness > self._best_f:
            self._best_f, self._best_x = float(fitness), x.copy()

    def _adopt(self, x: np.ndarray, fitness: float) -> None:
        self._inject(x[None, :], np.array([fitness]))

    def hyperparameters(self) -> dict[str, float]:
        """The :attr:`TUNABLE` settings as they are now, by name."""
        return {k: float(self.sigma if k == "sigma" else self.hp[k]) for k in self.TUNABLE}

    def set_hyperparameters(self, values: dict[str, float]) -> None:
        """Run on with these :attr:`TUNABLE` settings (a subset; each positive and finite).
        Between generations only: a generation asked with one step size and told with
        another would scale its step wrongly."""
        unknown = sorted(set(values) - set(self.TUNABLE))
        if unknown:
            raise ValueError(f"{self.name} has no tunable setting {unknown[0]!r}; "
                             f"tunable: {list(self.TUNABLE)}")
        bad = [k for k, v in values.items() if not (math.isfinite(float(v)) and v > 0)]
        if bad:
            raise ValueError(f"{bad[0]} must be positive and finite, got {values[bad[0]]}")
        if self._asked is not None:
            raise RuntimeError("hyperparameters change between generations, not after ask()")
        for k, v in values.items():
            self._set_hyperparameter(k, float(v))

    def _set_hyperparameter(self, name: str, value: float) -> None:
        if name == "sigma":
            self.sigma = value
        else:
            self.hp[name] = value

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
        asked = d["asked"]
        self._asked = None if asked is None else np.array(asked, dtype=self._asked_dtype)
        self._load_state(d["impl"])

    # ---- subclass hooks --------------------------------------------------------------
    @abstractmethod
    def _ask(self) -> np.ndarray:
        """The next generation as kept until its tell: by default the population itself; a
        strategy may return a compact description instead (openai-es-nt: noise-table
        offsets) and build the genomes in ``_population`` / ``_asked_row``."""

    @abstractmethod
    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        """``X`` is what ``_ask`` returned; ``f`` is already sanitized (finite), to maximize."""

    @abstractmethod
    def _inject(self, S: np.ndarray, f: np.ndarray) -> None:
        """Finite migrants; called before the best-so-far takes them in, so ``best`` is still
        the one they are measured against (openai-es's migrant rule reads it)."""

    @abstractmethod
    def _state(self) -> dict[str, Any]: ...

    @abstractmethod
    def _load_state(self, d: dict[str, Any]) -> None: ...

    # ---- hooks with defaults, for an ``_ask`` that returns no population ---------------
    _asked_dtype = np.float64  # dtype of what _ask returns (the state's "asked")

    def _population(self, asked):
        """The population to hand out for ``asked`` (what ``_ask`` returned): by default a copy,
        which the caller may write into without touching what tell will use."""
        return asked.copy()

    def _asked_row(self, i: int) -> np.ndarray:
        """Genome ``i`` of the outstanding generation, float64 ``(dim,)``, the caller's own."""
        return self._asked[i].copy()

    def _to_host(self, x):
        """A population or fitness in the strategy's own array type as numpy (or as is)."""
        return x
