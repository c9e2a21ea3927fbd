"""Checkpoints of plain data, loadable without unpickling.

A *tree* is nested dicts (string keys) and lists of numpy arrays, Python/numpy numbers,
strings, bools and None, such as a strategy's ``state_dict()``. It is written as one ``.npz``
file (``np.savez``): every array becomes an entry ``a0, a1, ...`` and the structure becomes
JSON, stored as the uint8 entry ``__tree__``, in which an array is ``{"__ndarray__": i}``
and a numpy scalar is ``{"__npscalar__": i}`` (a 0-d array entry, so its dtype survives).
Reading uses ``np.load(allow_pickle=False)``: a file holding a pickled object array is
refused, so loading a checkpoint never runs code from the file.

Floats go through JSON's shortest round-trip ``repr`` (NaN and infinities included), so
numbers come back bit-identical; arrays keep dtype, shape, bytes and memory order.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from typing import Any

import numpy as np

_TREE = "__tree__"
_MARKERS = ("__ndarray__", "__npscalar__")


def _flatten(tree, arrays: list, path: str):
    if tree is None or type(tree) in (bool, int, float, str):
        return tree
    if isinstance(tree, (np.ndarray, np.generic)):
        a = np.asarray(tree)
        if a.dtype.hasobject:
            raise ValueError(f"{path}: object arrays are not plain data")
        arrays.append(a)
        return {_MARKERS[isinstance(tree, np.generic)]: len(arrays) - 1}
    for plain in (int, float, str):  # subclasses (e.g. IntEnum) are written as the base type
        if isinstance(tree, plain):
            return plain(tree)
    if isinstance(tree, dict):
        out = {}
        for k, v in tree.items():
            if not isinstance(k, str):
                raise ValueError(f"{path}: dict keys must be strings, got {k!r}")
            if k in _MARKERS and len(tree) == 1:
                raise ValueError(f"{path}: {k!r} is reserved")
            out[k] = _flatten(v, arrays, f"{path}/{k}")
        return out
    if isinstance(tree, list):
        return [_flatten(v, arrays, f"{path}[{i}]") for i, v in enumerate(tree)]
    raise ValueError(f"{path}: {type(tree).__name__} is not plain data (use dict, list, "
                     "numpy arrays, numbers, str, bool, None)")


def _unflatten(node, arrays):
    if isinstance(node, dict):
        if len(node) == 1 and _MARKERS[0] in node:
            return arrays[f"a{node[_MARKERS[0]]}"]
        if len(node) == 1 and _MARKERS[1] in node:
            return arrays[f"a{node[_MARKERS[1]]}"][()]
        return {k: _unflatten(v, arrays) for k, v in node.items()}
    if isinstance(node, list):
        return [_unflatten(v, arrays) for v in node]
    return node


def _write(file, tree) -> None:
    arrays: list[np.ndarray] = []
    structure = _flatten(tree, arrays, "")
    text = json.dumps(structure, allow_nan=True, separators=(",", ":"))
    entries = {f"a{i}": a for i, a in enumerate(arrays)}
    entries[_TREE] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    np.savez(file, **entries)


def save(path_or_file, tree: Any) -> None:
    """Write ``tree`` to a path (atomically: temp file + ``os.replace``) or a binary file.

    A path is used exactly as given (no ``.npz`` suffix is appended).
    """
    if hasattr(path_or_file, "write"):
        _write(path_or_file, tree)
        return
    path = os.fspath(path_or_file)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            _write(f, tree)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # readers see the old file or the new one, never a partial one
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(path_or_file) -> Any:
    """Read a tree written by :func:`save`; refuses pickled content."""
    try:
        with np.load(path_or_file, allow_pickle=False) as z:
            if _TREE not in z.files:
                raise ValueError(f"not a plainstate file (no {_TREE!r} entry)")
            arrays = {k: z[k] for k in z.files if k != _TREE}
            structure = json.loads(z[_TREE].tobytes().decode("utf-8"))
    except ValueError as e:
        if "pickle" in str(e).lower():
            raise ValueError("refusing to load a pickled object array from a state file") from e
        raise
    return _unflatten(structure, arrays)


def to_bytes(tree: Any) -> bytes:
    buf = io.BytesIO()
    _write(buf, tree)
    return buf.getvalue()


def from_bytes(data: bytes) -> Any:
    return load(io.BytesIO(data))
