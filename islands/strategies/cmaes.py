"""CMA-ES with a full covariance matrix, through pycma.

N. Hansen and A. Ostermeier (2001), "Completely derandomized self-adaptation in evolution
strategies", Evolutionary Computation 9(2); N. Hansen (2016), "The CMA evolution strategy: a
tutorial", arXiv:1604.00772. The algorithm is pycma's ``cma.CMAEvolutionStrategy``
(https://github.com/CMA-ES/pycma), adapted to the :class:`Strategy` contract. Each generation
(pycma minimizes, so it is told ``-fitness``):

* sample   ``x_k = m + sigma * y_k``, ``y_k ~ N(0, C)``, ``k = 1..lambda``
* mean     ``m' = m + c_m * sum_{i<=mu} w_i (x_{i:lambda} - m)`` (best mu, weights w_i)
* CSA      ``p_s = (1-c_s) p_s + sqrt(c_s (2-c_s) mu_eff) C^(-1/2) (m'-m)/sigma``,
  ``sigma *= exp(c_s/d_s * (|p_s| / E|N(0,I)| - 1))``
* covariance ``C = (1 - c_1 - c_mu sum w) C + c_1 p_c p_c^T + c_mu sum_i w_i y_i y_i^T``
  (rank-one plus rank-mu update; "active" CMA gives the worst samples negative w_i).

Defaults are pycma's (popsize ``4 + floor(3 ln n)``, mu ``popsize // 2``, log weights: Hansen
2016, Table 1) except ``sigma`` 0.1: network weights start near 0 with scale ~1/sqrt(fan_in)
(0.05-0.3 for small policies), and 0.1 is estool's ``sigma_init`` for CMA-ES on RL policies
(Ha 2017). ``x0`` is the caller's initialised policy weights; any ``cma.CMAOptions`` key may
be passed through.

Migrants enter through pycma's ``inject()`` with its default ``force=False`` (N. Hansen
(2011), "Injecting external solutions into CMA-ES", arXiv:1110.4181): each replaces one of
the first samples of the next ``ask()`` and takes part in the next ``tell()`` like any sample
(pycma leaves it out of the negative, "active" update). pycma treats it as a *direction* from
the mean: one within Mahalanobis distance ``sqrt(n)`` (``||C^(-1/2) (x - m)|| / sigma``) is
sampled verbatim, a farther one is moved along its direction to a typical sample length, so
one far migrant cannot blow up the step size (``force=True`` did worse:
docs/results/cmaes-inject.md). Migrants are handed to pycma right before the next ``ask``
(the direction is taken from the current mean); at most ``popsize // 2``, the fittest by
reported fitness, are kept per generation, so the update still rests mostly on independent
samples. The reported fitness only ranks migrants and updates ``best``; the sample pycma
makes from them is evaluated like every other.

:meth:`CMAES.stop_reason` (for restarts, :mod:`islands.island.restarts`): pycma's ``es.stop()``
criteria of convergence or stall (tolx, tolfun, tolflatfitness, tolstagnation, ...), not its
budgets (maxiter, maxfevals: the run's). ``state_dict`` walks pycma's object graph into plain
data (:mod:`islands.strategies.pycma_state`); sampling draws from our own numpy Generator
through pycma's ``randn`` option, so a restored run continues bit-identically.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import sys
import threading
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import Strategy, check_x0, rng_state, set_rng_state
from .pycma_state import decode_graph, encode_graph, is_plain

if TYPE_CHECKING:
    import cma


def _pycma():
    """pycma, imported on first use: it pulls in scipy.stats and matplotlib (about 1.5 s
    per process), which every process that never runs CMA-ES (the coordinator, the tester,
    the launcher, other strategies' islands) would otherwise pay at start-up. A process
    that runs CMA-ES skips them too where they are not loaded yet (:class:`_Optional`)."""
    if "cma" in sys.modules:
        return sys.modules["cma"]
    with _Optional.hidden(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycma's "could not import matplotlib.pyplot"
        return importlib.import_module("cma")


class _Optional(importlib.abc.MetaPathFinder):
    """While pycma's package loads in this thread, its optional imports that this module
    never uses fail as if not installed: matplotlib (``cma.s``'s plots; cma.plot imports
    pyplot again when called) and scipy.stats (kendalltau, for pycma's surrogate models,
    with its own fallback). Each sits in a ``try: import ... except ImportError`` in pycma
    4.x, so CMAEvolutionStrategy is unchanged (tests/test_strategies.py checks the centers
    bit for bit), and an island process that runs CMA-ES starts about 1 s of CPU sooner
    (docs/results/suite-time.md). Other threads and any later import see both modules as
    usual: the flag is thread-local and only modules not loaded yet are hidden."""

    HIDDEN = ("matplotlib", "scipy.stats")
    _local = threading.local()

    def find_spec(self, name, path=None, target=None):
        if getattr(self._local, "on", False) and any(
                name == m or name.startswith(m + ".") for m in self.HIDDEN):
            raise ModuleNotFoundError(f"{name} skipped while pycma loads", name=name)
        return None

    @classmethod
    @contextlib.contextmanager
    def hidden(cls):
        finder = cls()
        sys.meta_path.insert(0, finder)
        cls._local.on = True
        try:
            yield
        finally:
            cls._local.on = False
            sys.meta_path.remove(finder)


DEFAULT_SIGMA = 0.1
# Options this module sets itself: passing them would break the contract or state capture.
_RESERVED = {
    "popsize": "pass popsize= to the strategy",
    "seed": "pass seed= to the strategy",
    "randn": "sampling uses the strategy's own numpy Generator",
    "verbose": "pycma output is switched off",
    "verb_log": "pycma writes no log files",
    "verb_disp": "pycma output is switched off",
    "verb_filenameprefix": "pycma writes no log files",
    "verb_append": "pycma writes no log files",
    "verb_plot": "pycma output is switched off",
    "CMA_diagonal": "use strategy 'sep-cmaes' for a diagonal covariance",
    "signals_filename": "pycma reads no signal files",
}
# pycma ``stop()`` criteria that are budgets or user requests, not convergence or
# stagnation: ``stop_reason`` leaves them out (an island's budget is the run's, not pycma's;
# pycma's default maxiter, 100 + 150 (n+3)^2 / sqrt(popsize), would end long RL runs).
_NOT_CONVERGENCE = frozenset({"maxiter", "maxfevals", "ftarget", "timeout", "callback"})


class CMAES(Strategy):
    """Full-covariance CMA-ES (pycma). ``options``: any ``cma.CMAOptions`` key (plain values)."""

    name = "cmaes"
    _diagonal = False

    def __init__(self, dim, popsize=None, sigma=None, seed=0, x0=None, **options) -> None:
        super().__init__(dim, popsize, sigma, seed, x0)
        valid = _pycma().CMAOptions().keys()
        for k, v in options.items():
            if k in _RESERVED:
                raise ValueError(f"option {k!r} cannot be set for {self.name}: {_RESERVED[k]}")
            if k not in valid:
                raise ValueError(f"unknown option {k!r} for {self.name} (see cma.CMAOptions())")
            if not is_plain(v):  # plain values only, so the state stays plain data
                raise ValueError(f"option {k!r} must be a plain value (number, str, list), "
                                 f"got {type(v).__name__}")
        if popsize is not None and int(popsize) < 4:
            raise ValueError(f"{self.name} needs popsize >= 4, got {popsize}")
        self._popsize_arg = None if popsize is None else int(popsize)
        self.sigma0 = DEFAULT_SIGMA if sigma is None else float(sigma)
        self._x0 = check_x0(x0, self.dim)
        self._options = dict(options)
        self._rng = np.random.default_rng(self.seed)
        self._pending_X = np.empty((0, self.dim))
        self._pending_f = np.empty(0)
        self.es = self._make_es()

    def _randn(self, *shape: int) -> np.ndarray:
        # pycma calls randn(lam, N); a bound method is skipped by state capture, and the
        # Generator it draws from is saved separately.
        return self._rng.standard_normal(shape)

    def _make_es(self) -> cma.CMAEvolutionStrategy:
        opts = dict(self._options)
        opts.update(
            seed=np.nan,  # NaN: pycma leaves np.random alone (we pass randn)
            randn=self._randn,
            verbose=-9,
            verb_log=0,
            verb_disp=0,
            signals_filename="",  # stop() would otherwise read options from cma_signals.in
            CMA_diagonal=self._diagonal,
        )
        if self._popsize_arg is not None:
            opts["popsize"] = self._popsize_arg
        cma = _pycma()
        es = cma.CMAEvolutionStrategy(self._x0, self.sigma0, opts)
        # pycma's post-tell archive is "not really in use" (its own docstring) but holds up
        # to 30 * popsize solutions when popsize < 33: 74 MB at 10K dims. The empty
        # stand-in is pycma's own class for switching it off.
        es.archive = cma.evolution_strategy.get_CMASolutionDict(False)()
        self.popsize = int(es.popsize)
        return es

    @property
    def center(self) -> np.ndarray:
        # the mean as a genome (pycma's ``result.xfavorite``): with ``bounds`` the mean
        # itself may lie outside the box, and what is evaluated is its image inside
        return np.array(self.es.boundary_handler.repair(self.es.mean), dtype=np.float64)

    @property
    def sigma(self) -> float:
        return float(self.es.sigma)

    def stop_reason(self) -> str | None:
        """pycma's own termination criteria that hold now (``es.stop()``: tolx, tolfun,
        tolfunhist, tolflatfitness, tolstagnation, tolxstagnation, tolconditioncov,
        noeffectaxis/coord, tolupsigma, tolfacupx), budgets left out; None if none holds."""
        if self.es.countiter == 0:  # pycma's tests are undefined before the first tell
            return None
        hits = [k for k in self.es.stop() if k not in _NOT_CONVERGENCE]
        return "pycma " + ", ".join(hits) if hits else None

    def _ask(self) -> np.ndarray:
        if len(self._pending_f):
            # pycma's default (force=False): the migrant becomes a direction from the mean,
            # kept as is within Mahalanobis length sqrt(n), else rescaled to a typical
            # sample length (Hansen 2011, arXiv:1110.4181); see the module docstring.
            self.es.inject(list(self._pending_X))
            self._pending_X, self._pending_f = np.empty((0, self.dim)), np.empty(0)
        return np.array(self.es.ask(), dtype=np.float64)

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        # pycma finds its own samples again by their bytes; X is the array ask() returned.
        self.es.tell(list(X), (-f).tolist())

    def _inject(self, S: np.ndarray, f: np.ndarray) -> None:
        X = np.concatenate([self._pending_X, S])
        F = np.concatenate([self._pending_f, f])
        keep = np.argsort(-F, kind="stable")[: max(1, self.popsize // 2)]
        self._pending_X, self._pending_f = X[keep], F[keep]

    def _adopt(self, x: np.ndarray, fitness: float) -> None:
        # between a tell and the next ask (an island accepts migrants there), so the next
        # generation is sampled around x and pycma's update takes x as the old mean; sigma,
        # C and the evolution paths are kept (they describe the landscape's local scale)
        self.es.mean = self.es.gp.geno(np.array(x, dtype=np.float64), copy=True)

    def _state(self) -> dict[str, Any]:
        return {
            "pycma": _pycma().__version__,
            "sigma0": self.sigma0,
            "popsize_arg": self._popsize_arg,
            "x0": self._x0.copy(),
            "options": encode_graph(self._options),
            "rng": rng_state(self._rng),
            "pending_X": self._pending_X.copy(),
            "pending_f": self._pending_f.copy(),
            "es": encode_graph(self.es),
        }

    def _load_state(self, d: dict[str, Any]) -> None:
        if d["pycma"] != _pycma().__version__:  # the captured graph is pycma's internal layout
            raise ValueError(f"{self.name} state was saved with pycma {d['pycma']}, "
                             f"this is pycma {_pycma().__version__}")
        self.sigma0 = float(d["sigma0"])
        self._popsize_arg = None if d["popsize_arg"] is None else int(d["popsize_arg"])
        self._x0 = np.array(d["x0"], dtype=np.float64)
        self._options = decode_graph(d["options"])
        self.es = self._make_es()  # fresh ES with the saved options, then overwrite its state
        decode_graph(d["es"], self.es)
        set_rng_state(self._rng, d["rng"])
        self._pending_X = np.array(d["pending_X"], dtype=np.float64).reshape(-1, self.dim)
        self._pending_f = np.array(d["pending_f"], dtype=np.float64).reshape(-1)
