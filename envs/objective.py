"""A user's objective as one typed value: the function, and everything a run needs to know of it.

:class:`Objective` is what ``islands.run(problem=f, ...)`` and ``islands launch --problem
module:function ...`` become: its dimension, direction (``minimize``: ``f`` is a cost),
box (``bounds``), whether it is ``noisy`` (two calls at one genome may differ), the
``target`` in the user's own scale (a cost to get below with ``minimize``, a value to reach
without) and how the function travels to the islands' processes (:attr:`Objective.source`).
The config builds it (``Config.objective()``), the evaluation spec carries it to every
island and the tester (``EvalSpec.objective``), and ``solution.json`` keeps it for
``islands evaluate``.

How a user's function reaches the islands' processes, in one place (:func:`source_of`):

* **by name**, ``"package.module:function"``, when another process of this Python started in
  this directory finds the module (as Ray starts its workers; on a cluster ``--working-dir``
  ships the module): the islands import it;
* **by value**, ``"byvalue:<base64>"``, for a function with no importable name (a notebook
  cell's, ``__main__``'s, a lambda, a closure): pickled with cloudpickle (as Ray pickles its
  remote functions, envs/byvalue.py) into the string itself, which rides in the config, so a
  resume and ``islands evaluate`` find it too. It is installed as ``islands_user.NAME``.

Strategies maximize a fitness; :attr:`Objective.sign` maps the user's values onto it
(fitness ``= -f`` when minimizing) and back (:meth:`Objective.user`), so the target, the
summary, the live table and TensorBoard speak the user's scale while the strategies do not
change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .byvalue import MODULE, importable_elsewhere, is_packed, load_one, names, pack, safe_name

PREFIX = "problem:"  # the env id a run on a user's objective shows: problem:<name>


class ObjectiveError(ValueError):
    """A function that does not import or unpickle, is not callable, or settings that do
    not fit (one line)."""


def load_function(source: str | Callable) -> Callable:
    """The callable ``source`` names: itself when callable, the function of a
    ``"package.module:function"`` name, or the one a ``byvalue:`` string carries;
    ObjectiveError (one line) otherwise."""
    import importlib

    if callable(source):
        return source
    if is_packed(source):
        try:
            return load_one(source)[1]
        except ValueError as e:
            raise ObjectiveError(f"problem: {e}") from None
    module, sep, attr = str(source).partition(":")
    if not sep or not module or not attr:
        raise ObjectiveError(f"problem {source!r}: expected package.module:function")
    try:
        fn = importlib.import_module(module)
        for part in attr.split("."):
            fn = getattr(fn, part)
    except (ImportError, AttributeError) as e:
        raise ObjectiveError(f"problem {source!r} cannot be imported: {e}") from None
    if not callable(fn):
        raise ObjectiveError(f"problem {source!r} is not callable ({type(fn).__name__})")
    return fn


def source_of(fn: Callable) -> str:
    """How ``fn`` travels to the islands: its ``module:qualname`` when their processes can
    import it, else ``byvalue:<base64>`` holding it (see the module docstring)."""
    if importable_elsewhere(fn):
        return f"{fn.__module__}:{fn.__qualname__}"
    try:
        return pack({safe_name(fn): fn})
    except Exception as e:  # noqa: BLE001 - cloudpickle's errors name what failed
        raise ObjectiveError(f"{safe_name(fn)}: cannot be pickled to reach the "
                             f"islands ({type(e).__name__}: {e})") from None


@dataclass(frozen=True)
class Scale:
    """How a run shows its values: the fitness itself (an env: ``sign`` 1, ``word``
    "fitness"), or a user's function's own values (a cost: ``sign`` -1)."""

    sign: float = 1.0
    word: str = "fitness"

    def user(self, fitness: float | None) -> float | None:
        """A fitness (or a test's mean) in this scale."""
        return None if fitness is None else self.sign * float(fitness)

    @property
    def best(self) -> str:
        """The word for the best value: ``min`` of a cost, else ``max``."""
        return "min" if self.sign < 0 else "max"


FITNESS = Scale()  # an env's: the fitness as it is


@dataclass(frozen=True)
class Objective:
    """A user's function of genomes and what a run needs to know of it (module docstring).

    ``source``: ``"package.module:function"`` or ``"byvalue:<base64>"``; ``dim``: the
    genome's length; ``minimize``: ``f`` is a cost; ``bounds``: ``(low, high)``, genomes are
    clipped into the box before ``f`` sees them and start uniformly inside it; ``noisy``:
    ``f`` is random, so tests average several calls; ``target``: in the user's scale, None
    for none."""

    source: str
    dim: int
    minimize: bool = False
    bounds: tuple[float, float] | None = None
    noisy: bool = False
    target: float | None = None

    def __post_init__(self) -> None:
        if int(self.dim) < 1:
            raise ObjectiveError(f"problem dimension must be at least 1, got {self.dim}")
        if self.bounds is not None:
            try:
                low, high = (float(b) for b in self.bounds)
            except (TypeError, ValueError):
                low = high = None
            if low is None or not low < high:
                raise ObjectiveError(f"problem bounds must be (low, high) with low < high, "
                                     f"got {self.bounds!r}")
            object.__setattr__(self, "bounds", (low, high))
        object.__setattr__(self, "dim", int(self.dim))
        if self.target is not None:
            object.__setattr__(self, "target", float(self.target))

    # ---- how it travels ------------------------------------------------------------------
    @property
    def by_value(self) -> bool:
        return is_packed(self.source)

    @property
    def travels(self) -> str:
        return "by value" if self.by_value else "by name"

    @property
    def name(self) -> str:
        """``package.module:function``, or ``islands_user:NAME`` for one sent by value."""
        if self.by_value:
            return f"{MODULE}:{names(self.source)[0]}"
        return str(self.source)

    @property
    def env_id(self) -> str:
        return PREFIX + self.name

    def function(self) -> Callable:
        """The callable, imported or unpickled in this process (ObjectiveError otherwise)."""
        return load_function(self.source)

    # ---- the user's scale and the strategies' -------------------------------------------
    @property
    def sign(self) -> float:
        """Fitness (maximized) = ``sign`` * the user's value."""
        return -1.0 if self.minimize else 1.0

    @property
    def scale(self) -> Scale:
        """The user's scale: a ``cost`` (minimized) or a ``value`` (maximized)."""
        return Scale(self.sign, "cost" if self.minimize else "value")

    @property
    def fitness_target(self) -> float | None:
        """The target as the fitness the strategies maximize (``-target`` for a cost)."""
        return None if self.target is None else self.sign * self.target

    # ---- plain data ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["bounds"] = None if self.bounds is None else list(self.bounds)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Objective:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def describe(self) -> str:
        """One line for the plan: ``cost islands_user:f, 20 dimensions, deterministic, sent
        by value``."""
        box = "" if self.bounds is None else f" in [{self.bounds[0]:g}, {self.bounds[1]:g}]"
        aim = "" if self.target is None else (
            f", target {'<=' if self.minimize else '>='} {self.target:g}")
        return (f"{'minimize' if self.minimize else 'maximize'} {self.name}, {self.dim} "
                f"dimensions{box}, {'noisy' if self.noisy else 'deterministic'}{aim}, "
                f"sent {self.travels}")
