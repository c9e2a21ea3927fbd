"""CMA-ES with a full covariance matrix, through pycma.

N. Hansen and A. Ostermeier (2001), "Completely derandomized self-adaptation in evolution
strategies", Evolutionary Computation 9(2); N. Hansen (2016), "The CMA evolution strategy: a
tutorial", arXiv:1604.00772. The algorithm is pycma's ``cma.CMAEvolutionStrategy``
(https://github.com/CMA-ES/pycma); this module adapts it to the :class:`Strategy` contract.

The maths pycma runs each generation (pycma minimizes, so it is told ``-fitness``):

* sample   ``x_k = m + sigma * y_k``, ``y_k ~ N(0, C)``, ``k = 1..lambda``
* mean     ``m' = m + c_m * sum_{i<=mu} w_i (x_{i:lambda} - m)`` (best mu, weights w_i)
* CSA      ``p_s = (1-c_s) p_s + sqrt(c_s (2-c_s) mu_eff) C^(-1/2) (m'-m)/sigma``,
  ``sigma *= exp(c_s/d_s * (|p_s| / E|N(0,I)| - 1))``
* covariance ``C = (1 - c_1 - c_mu sum w) C + c_1 p_c p_c^T + c_mu sum_i w_i y_i y_i^T``
  (rank-one plus rank-mu update; "active" CMA gives the worst samples negative w_i).

Defaults (pycma's unless stated):

=============  ==================  =====================================================
parameter      default             source / why
=============  ==================  =====================================================
popsize        4 + floor(3 ln n)   Hansen (2016), Table 1
mu, weights    popsize // 2, log   Hansen (2016), Table 1
sigma          0.1                 NN weights start near 0 with scale ~1/sqrt(fan_in)
                                   (0.05-0.3 for small policies); 0.1 is estool's
                                   ``sigma_init`` for CMA-ES on RL policies (Ha 2017)
x0             zeros(dim)          the caller passes the initialised policy weights
other options  pycma defaults      any ``cma.CMAOptions`` key may be passed through
=============  ==================  =====================================================

Migrants enter through pycma's ``inject()`` with its default ``force=False`` (N. Hansen
(2011), "Injecting external solutions into CMA-ES", arXiv:1110.4181): each migrant replaces
one of the first samples of the next ``ask()`` and takes part in the next ``tell()`` like any
sample (pycma leaves it out of the negative, "active" covariance update). pycma treats it as
a *direction* from the mean: a migrant within Mahalanobis distance ``sqrt(n)`` of the mean
(``||C^(-1/2) (x - m)|| / sigma``) is sampled verbatim; a farther one is moved along its
direction to a typical sample length, so one far migrant cannot blow up the step size.
We measured the alternative, ``force=True`` (always verbatim): injecting the optimum from 25
sigma away makes the next generation much better but doubles sigma through CSA, and over
the following 5-40 generations the island is *worse* off than without the migrant (median
of 30 seeds, 10-D sphere); with ``force=False`` it is never worse. Migrants are handed to
pycma right before the next ``ask`` (so the direction is taken from the current mean); at
most ``popsize // 2`` are kept per generation, the fittest by reported fitness, so that the
update still rests mostly on independent samples. The reported fitness only ranks migrants
and updates ``best``; the sample pycma makes from them is evaluated like every other.

State capture: pycma's ``CMAEvolutionStrategy`` is a deep object graph. ``state_dict``
walks it and writes every attribute as plain data (arrays, numbers, strings, lists/dicts,
with ``{"__t__": ...}`` markers for sub-objects, tuples, numpy scalars and shared
references), skipping what is not state (options, the logger, bound functions such as
the sampler's ``randn``). ``load_state_dict`` builds a fresh ES with the saved options and
writes the values back into its sub-objects (creating pycma objects that appeared later
with ``cls.__new__``; only classes from the ``cma`` package are accepted). pycma's solution
archives are keyed by ``hash(x.tobytes())``, which changes between Python processes, so
they are stored as (solution, value) entries and re-keyed on load. Sampling randomness
comes from our own ``numpy`` Generator via pycma's ``randn`` option, so the RNG state is
part of the captured state and a restored run continues bit-identically. The captured
graph is pycma's internal layout, so a state loads only under the pycma version that wrote
it (checked, ValueError otherwise).
"""

from __future__ import annotations

import importlib
import types
from typing import Any

import cma
import numpy as np
from cma.evolution_strategy import get_CMASolutionDict
from cma.utilities.utils import SolutionDict

from islands.strategies.base import Strategy, check_x0, rng_state, set_rng_state

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
}
_TOP_LEVEL_SKIP = {"opts", "inopts", "inputargs", "logger"}


class CMAES(Strategy):
    """Full-covariance CMA-ES (pycma). ``options``: any ``cma.CMAOptions`` key (plain values)."""

    name = "cmaes"
    _diagonal = False

    def __init__(self, dim, popsize=None, sigma=None, seed=0, x0=None, **options) -> None:
        super().__init__(dim, popsize, sigma, seed, x0)
        valid = cma.CMAOptions().keys()
        for k, v in options.items():
            if k in _RESERVED:
                raise ValueError(f"option {k!r} cannot be set for {self.name}: {_RESERVED[k]}")
            if k not in valid:
                raise ValueError(f"unknown option {k!r} for {self.name} (see cma.CMAOptions())")
            if not _is_plain(v):  # plain values only, so the state stays plain data
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
            CMA_diagonal=self._diagonal,
        )
        if self._popsize_arg is not None:
            opts["popsize"] = self._popsize_arg
        es = cma.CMAEvolutionStrategy(self._x0, self.sigma0, opts)
        # pycma's post-tell archive is "not really in use" (its own docstring) but holds up
        # to 30 * popsize solutions when popsize < 33: 74 MB at 10K dims. The empty
        # stand-in is pycma's own class for switching it off.
        es.archive = get_CMASolutionDict(False)()
        self.popsize = int(es.popsize)
        return es

    @property
    def center(self) -> np.ndarray:
        return np.array(self.es.mean, dtype=np.float64)

    @property
    def sigma(self) -> float:
        return float(self.es.sigma)

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

    def _state(self) -> dict[str, Any]:
        return {
            "pycma": cma.__version__,
            "sigma0": self.sigma0,
            "popsize_arg": self._popsize_arg,
            "x0": self._x0.copy(),
            "options": _encode_graph(self._options),
            "rng": rng_state(self._rng),
            "pending_X": self._pending_X.copy(),
            "pending_f": self._pending_f.copy(),
            "es": _encode_graph(self.es),
        }

    def _load_state(self, d: dict[str, Any]) -> None:
        if d["pycma"] != cma.__version__:  # the captured graph is pycma's internal layout
            raise ValueError(f"{self.name} state was saved with pycma {d['pycma']}, "
                             f"this is pycma {cma.__version__}")
        self.sigma0 = float(d["sigma0"])
        self._popsize_arg = None if d["popsize_arg"] is None else int(d["popsize_arg"])
        self._x0 = np.array(d["x0"], dtype=np.float64)
        self._options = _decode_graph(d["options"])
        self.es = self._make_es()  # fresh ES with the saved options, then overwrite its state
        _decode_graph(d["es"], self.es)
        set_rng_state(self._rng, d["rng"])
        self._pending_X = np.array(d["pending_X"], dtype=np.float64).reshape(-1, self.dim)
        self._pending_f = np.array(d["pending_f"], dtype=np.float64).reshape(-1)


# ---- pycma object graph <-> plain data ----------------------------------------------------
_SKIP = {"__t__": "skip"}
_CALLABLE_TYPES = (
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
    type,
    types.ModuleType,
)


def _skip_type(v) -> bool:
    from cma.logger import CMADataLogger
    from cma.options_parameters import CMAOptions

    if isinstance(v, (CMAOptions, CMADataLogger, _CALLABLE_TYPES)):
        return True
    # foreign callables (numpy dispatchers such as the eigen method): configuration, not state
    return callable(v) and not type(v).__module__.startswith("cma")


def _is_plain(v) -> bool:
    if v is None or isinstance(v, (bool, int, float, str, np.generic)):
        return True
    if isinstance(v, np.ndarray):
        return not v.dtype.hasobject
    if isinstance(v, (list, tuple)):
        return all(_is_plain(x) for x in v)
    if isinstance(v, dict):
        return all(_is_plain(k) and _is_plain(x) for k, x in v.items())
    return False


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _encode_graph(obj) -> dict[str, Any]:
    """Plain-data image of a pycma object graph: ``{"root": node, "buffers": [uint8 arrays]}``.

    Arrays that share memory (pycma keeps ``es.dC = np.diag(es.sm.C)``, a view that follows
    in-place updates of C) are stored once as a byte buffer plus (offset, shape, strides)
    per array, so the restored arrays alias each other the same way.
    """
    enc = _Encoder()
    root = enc.encode(obj, "es", top=True)
    groups: dict[int, list] = {}
    for node, a in enc.arrays:
        groups.setdefault(id(_root(a)), []).append((node, a))
    buffers = []
    for members in groups.values():
        if len(members) == 1:
            node, a = members[0]
            node["v"] = a.copy(order="K")  # "K" keeps Fortran order (BLAS results depend on it)
            continue
        base = _root(members[0][1])
        if not (base.flags.c_contiguous or base.flags.f_contiguous):
            raise TypeError("shared array memory that is not contiguous cannot be captured")
        buffers.append(base.ravel(order="K").view(np.uint8).copy())
        for node, a in members:
            node.update(buf=len(buffers) - 1, dtype=a.dtype.str, shape=list(a.shape),
                        strides=list(a.strides), offset=_address(a) - _address(base))
    return {"root": root, "buffers": buffers}


class _Encoder:
    def __init__(self) -> None:
        self.memo: dict[int, int] = {}  # id() of a mutable object -> its reference number
        self.arrays: list[tuple[dict, np.ndarray]] = []

    def _ref(self, v) -> int:
        self.memo[id(v)] = n = len(self.memo)
        return n

    def encode(self, v, path: str, top: bool = False):
        if v is None or type(v) in (bool, int, float, str):
            return v
        if isinstance(v, np.generic):
            return {"__t__": "np", "v": np.array(v)}  # 0-d array keeps the exact dtype
        if type(v) is tuple:
            items = [self.encode(x, f"{path}[{i}]") for i, x in enumerate(v)]
            return {"__t__": "tuple", "v": items}
        if id(v) in self.memo:
            return {"__t__": "ref", "id": self.memo[id(v)]}
        if type(v) is np.ndarray:
            if v.dtype.hasobject or v.dtype.names:
                raise TypeError(f"array of dtype {v.dtype} at {path} is not plain data")
            node = {"__t__": "arr", "id": self._ref(v), "writeable": bool(v.flags.writeable)}
            self.arrays.append((node, v))  # data filled in by _encode_graph
            return node
        if type(v) is list:
            n = self._ref(v)
            return {"__t__": "list", "id": n,
                    "v": [self.encode(x, f"{path}[{i}]") for i, x in enumerate(v)]}
        if type(v) is dict:
            return {"__t__": "dict", "id": self._ref(v), "v": self._items(v.items(), path)}
        if _skip_type(v):
            return _SKIP
        cls = type(v)
        if not cls.__module__.startswith("cma") or not hasattr(v, "__dict__"):
            raise TypeError(f"cannot capture {cls.__module__}.{cls.__qualname__} at {path}")
        out: dict[str, Any] = {"__t__": "obj", "id": self._ref(v),
                               "cls": f"{cls.__module__}:{cls.__qualname__}"}
        # SolutionDict's three hash-keyed dicts are rebuilt from "entries"/"same" below
        special = ("data", "data_with_same_key", "_unhashed_keys")
        special = special if isinstance(v, SolutionDict) else ()
        out["attrs"] = {
            k: _SKIP if top and k in _TOP_LEVEL_SKIP else self.encode(x, f"{path}.{k}")
            for k, x in vars(v).items()
            if k not in special
        }
        if isinstance(v, SolutionDict):
            # keys are hash(x.tobytes()), which differs between processes: keep the solution
            uk = v._unhashed_keys
            if set(uk) != set(v.data) or not set(v.data_with_same_key) <= set(v.data):
                raise TypeError(f"inconsistent pycma SolutionDict at {path}")
            out["entries"] = self._items(((uk[k], x) for k, x in v.data.items()), path)
            out["same"] = self._items(((uk[k], x) for k, x in v.data_with_same_key.items()), path)
        elif isinstance(v, dict):
            out["items"] = self._items(dict.items(v), path)
        elif isinstance(v, list):
            out["items"] = [self.encode(x, f"{path}[{i}]") for i, x in enumerate(list.__iter__(v))]
        return out

    def _items(self, items, path: str) -> list:
        return [[self.encode(k, f"{path}.key"), self.encode(x, f"{path}[{k!r}]")]
                for k, x in items]


def _resolve(spec: str) -> type:
    module, _, qualname = spec.partition(":")
    if module != "cma" and not module.startswith("cma."):
        raise ValueError(f"refusing to restore class {spec!r}: only pycma classes are allowed")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise ValueError(f"{spec!r} is not a class")
    return obj


def _is_skip(e) -> bool:
    return isinstance(e, dict) and e.get("__t__") == "skip"


class _Decoder:
    """Inverse of :class:`_Encoder`; pycma objects found in ``existing`` are updated in place."""

    def __init__(self, buffers) -> None:
        self.buffers = [np.array(b, dtype=np.uint8) for b in buffers]
        self.memo: dict[int, Any] = {}
        self.claimed: set[int] = set()  # existing objects already reused (never twice)

    def decode(self, e, existing=None):
        if not isinstance(e, dict):
            return e
        t = e["__t__"]
        if t == "skip":
            return existing
        if t == "np":
            return np.asarray(e["v"])[()]
        if t == "tuple":
            return tuple(self.decode(x) for x in e["v"])
        if t == "ref":
            return self.memo[int(e["id"])]
        if t == "arr":
            if "v" in e:
                a = np.array(e["v"])
            else:
                a = np.ndarray(tuple(e["shape"]), np.dtype(e["dtype"]), self.buffers[int(e["buf"])],
                               int(e["offset"]), tuple(e["strides"]))
            a.flags.writeable = bool(e["writeable"])
            self.memo[int(e["id"])] = a
            return a
        if t == "list":
            self.memo[int(e["id"])] = out = []
            out.extend(self._decode_seq(e["v"], existing if isinstance(existing, list) else []))
            return out
        if t == "dict":
            self.memo[int(e["id"])] = out = {}
            out.update(self._decode_items(e["v"], existing if isinstance(existing, dict) else {}))
            return out
        if t != "obj":
            raise ValueError(f"unknown state marker {t!r}")
        return self._decode_obj(e, existing)

    def _decode_seq(self, es, old) -> list:
        return [self.decode(x, old[i] if i < len(old) else None) for i, x in enumerate(es)]

    def _decode_items(self, items, old) -> list:
        out = []
        for ke, xe in items:
            k = self.decode(ke)
            out.append((k, self.decode(xe, old.get(k) if old else None)))
        return out

    def _decode_obj(self, e, existing):
        cls = _resolve(e["cls"])
        reuse = type(existing) is cls and id(existing) not in self.claimed
        target = existing if reuse else cls.__new__(cls)
        self.claimed.add(id(target))
        self.memo[int(e["id"])] = target
        old = vars(existing) if hasattr(existing, "__dict__") else {}
        new = {}
        for k, xe in e["attrs"].items():
            if not _is_skip(xe):
                new[k] = self.decode(xe, old.get(k))
            elif k in old:  # not state (options, logger, randn): keep the fresh ES's value
                new[k] = old[k]
        if isinstance(target, SolutionDict):
            new["data"], new["data_with_same_key"], new["_unhashed_keys"] = {}, {}, {}
            for u, x in self._decode_items(e["entries"], {}):
                key = target.key(u)  # re-hash in this process
                new["_unhashed_keys"][key], new["data"][key] = u, x
            for u, x in self._decode_items(e["same"], {}):
                new["data_with_same_key"][target.key(u)] = x
        elif isinstance(target, dict):
            olds = dict(dict.items(existing)) if isinstance(existing, dict) else {}
            vals = self._decode_items(e["items"], olds)
            dict.clear(target)
            dict.update(target, vals)
        elif isinstance(target, list):
            olds = list(list.__iter__(existing)) if isinstance(existing, list) else []
            vals = self._decode_seq(e["items"], olds)
            list.clear(target)
            list.extend(target, vals)
        d = vars(target)
        d.clear()
        d.update(new)
        return target


def _decode_graph(d: dict[str, Any], existing=None):
    return _Decoder(d["buffers"]).decode(d["root"], existing)
