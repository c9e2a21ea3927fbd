"""islands.persistence.plainstate: plain-data checkpoints in .npz without pickle."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

from islands.persistence import plainstate
from islands.strategies import STRATEGIES, make


def same(a, b) -> bool:
    """Structural equality with dtype/bit identity for arrays, numpy scalars and floats."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape
                and a.tobytes() == b.tobytes()
                and a.flags.f_contiguous == b.flags.f_contiguous)
    if isinstance(a, np.generic):
        return type(a) is type(b) and a.tobytes() == b.tobytes()
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return np.float64(a).tobytes() == np.float64(b).tobytes()  # NaN, -0.0 included
    return a == b


def tree():
    return {
        "f64": np.linspace(0, 1, 7),
        "f32_2d": np.arange(12, dtype=np.float32).reshape(3, 4),
        "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        "ints": np.array([-(2**62), 0, 2**62], dtype=np.int64),
        "bools": np.array([True, False]),
        "zero_d": np.array(3.5),
        "empty": np.empty((0, 4)),
        "scalars": [np.float64(0.1), np.int64(-3), np.bool_(True), np.float32(2.5)],
        "floats": [0.1, -0.0, float("nan"), float("inf"), -float("inf"), 1e-310],
        "big_int": 2**127 + 5,  # e.g. a PCG64 state
        "text": "ünïcode ✓",
        "nothing": None,
        "flags": [True, False],
        "nested": {"a": [{"b": np.ones(2)}, [], {}], "": "empty key"},
    }


def test_round_trip_nested_tree(tmp_path):
    t = tree()
    path = tmp_path / "t.state"
    plainstate.save(path, t)
    assert same(plainstate.load(path), t)
    assert os.listdir(tmp_path) == ["t.state"]  # exact name, no temp files left behind
    assert same(plainstate.from_bytes(plainstate.to_bytes(t)), t)
    buf = io.BytesIO()
    plainstate.save(buf, t)
    buf.seek(0)
    assert same(plainstate.load(buf), t)


def test_save_is_atomic(tmp_path):
    path = tmp_path / "ckpt.npz"
    plainstate.save(path, {"v": 1})
    plainstate.save(path, {"v": 2})  # overwrite
    assert plainstate.load(path) == {"v": 2}
    with pytest.raises(ValueError, match="not plain data"):
        plainstate.save(path, {"v": 3, "bad": object()})
    assert plainstate.load(path) == {"v": 2}  # the old checkpoint survives a failed save
    assert os.listdir(tmp_path) == ["ckpt.npz"]


def test_refuses_non_plain_input():
    with pytest.raises(ValueError, match="dict keys must be strings"):
        plainstate.to_bytes({1: 2})
    with pytest.raises(ValueError, match="tuple is not plain data"):
        plainstate.to_bytes({"t": (1, 2)})
    with pytest.raises(ValueError, match="object arrays"):
        plainstate.to_bytes({"o": np.array([{"x": 1}], dtype=object)})
    with pytest.raises(ValueError, match="reserved"):
        plainstate.to_bytes({"x": {"__ndarray__": 0}})


def test_refuses_pickled_object_arrays(tmp_path):
    path = tmp_path / "evil.npz"
    structure = np.frombuffer(b'{"x":{"__ndarray__":0}}', dtype=np.uint8)
    np.savez(path, __tree__=structure, a0=np.array([{"x": 1}], dtype=object))  # pickles a0
    with pytest.raises(ValueError, match="refusing to load a pickled object array"):
        plainstate.load(path)
    np.savez(tmp_path / "other.npz", a=np.ones(2))
    with pytest.raises(ValueError, match="not a plainstate file"):
        plainstate.load(tmp_path / "other.npz")


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_strategy_state_round_trips(name, tmp_path):
    s = make(name, 6, seed=3)
    for g in range(4):
        X = s.ask()
        s.tell(-np.sum(X**2, axis=1))
        if g == 1:
            s.inject(np.ones((2, 6)), [-0.5, -1.0])
    s.ask()  # mid-generation: the outstanding population is part of the state
    sd = s.state_dict()
    plainstate.save(tmp_path / "s.npz", sd)
    back = plainstate.load(tmp_path / "s.npz")
    assert same(back, sd)
    t = make(name, 6, seed=99)
    t.load_state_dict(back)
    assert same(t.state_dict(), sd)
