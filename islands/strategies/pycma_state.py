"""pycma's ``CMAEvolutionStrategy`` object graph <-> plain data (for ``CMAES.state_dict``).

pycma's ``CMAEvolutionStrategy`` is a deep object graph. ``encode_graph`` walks it and
writes every attribute as plain data (arrays, numbers, strings, lists/dicts, with
``{"__t__": ...}`` markers for sub-objects, tuples, ranges, numpy scalars and shared
references), skipping what is not state (options, the logger, bound functions such as the
sampler's ``randn``). ``CMAES.load_state_dict`` builds a fresh ES with the saved options, and
``decode_graph`` writes the values back into its sub-objects (creating pycma objects that
appeared later with ``cls.__new__``; only classes from the ``cma`` package are accepted).
pycma's solution archives are keyed by ``hash(x.tobytes())``, which changes between Python
processes, so they are stored as (solution, value) entries and re-keyed on load. The
captured graph is pycma's internal layout, so a state loads only under the pycma version
that wrote it (``CMAES`` checks, ValueError otherwise).
"""

from __future__ import annotations

import importlib
import types
from typing import Any

import numpy as np

_TOP_LEVEL_SKIP = {"opts", "inopts", "inputargs", "logger"}

_SKIP = {"__t__": "skip"}
_CALLABLE_TYPES = (
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
    type,
    types.ModuleType,
)


def _solution_dict() -> type:
    """pycma's SolutionDict, imported where a graph is walked (pycma is loaded by then:
    importing it here at the top would cost every process that imports the strategies)."""
    from cma.utilities.utils import SolutionDict

    return SolutionDict


def _skip_type(v) -> bool:
    from cma.logger import CMADataLogger
    from cma.options_parameters import CMAOptions

    if isinstance(v, (CMAOptions, CMADataLogger, _CALLABLE_TYPES)):
        return True
    # foreign callables (numpy dispatchers such as the eigen method): configuration, not state
    return callable(v) and not type(v).__module__.startswith("cma")


def is_plain(v) -> bool:
    if v is None or isinstance(v, (bool, int, float, str, np.generic)):
        return True
    if isinstance(v, np.ndarray):
        return not v.dtype.hasobject
    if isinstance(v, (list, tuple)):
        return all(is_plain(x) for x in v)
    if isinstance(v, dict):
        return all(is_plain(k) and is_plain(x) for k, x in v.items())
    return False


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def encode_graph(obj) -> dict[str, Any]:
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
        if type(v) is range:  # selective mirroring keeps its mirrors' indices as a range
            return {"__t__": "range", "v": [v.start, v.stop, v.step]}
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
        special = special if isinstance(v, _solution_dict()) else ()
        out["attrs"] = {
            k: _SKIP if top and k in _TOP_LEVEL_SKIP else self.encode(x, f"{path}.{k}")
            for k, x in vars(v).items()
            if k not in special
        }
        if isinstance(v, _solution_dict()):
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
        if t == "range":
            return range(*(int(x) for x in e["v"]))
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
        if isinstance(target, _solution_dict()):
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


def decode_graph(d: dict[str, Any], existing=None):
    return _Decoder(d["buffers"]).decode(d["root"], existing)
