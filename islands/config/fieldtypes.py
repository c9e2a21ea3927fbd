"""How a value is read: a flag's string or a YAML value becomes a typed field value.

Each field kind is a pydantic type (``Annotated`` with validators for the spellings users
write: ``on``/``off``, ``none``/``auto``, ``64,64``, ``0>1,1>2``, ``NAME=AMOUNT``, JSON).
:func:`coerce` validates one field and turns pydantic's ``ValidationError`` into a one-line
:class:`ConfigError` naming the flag: ``--popsize: expected an integer, got 'x'``.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Annotated, Any, Literal, NoReturn

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Strict,
    TypeAdapter,
    ValidationError,
    WrapValidator,
)
from pydantic_core import PydanticCustomError

from .. import topology as topo
from .schema import FIELDS, FILL, ISLAND_SPEC_KEYS, ConfigError, flag

_NONE = ("none", "null", "")
_TRUE = ("on", "true", "yes", "1")
_FALSE = ("off", "false", "no", "0")

# What the one-line message says was expected, by pydantic error type.
_EXPECTED = {
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
    "float_type": "a number", "float_parsing": "a number",
    "bool_type": "on or off", "string_type": "a string",
    "dict_type": "a JSON object", "list_type": "a JSON list",
}


# ---- errors raised inside validators ------------------------------------------------------
def _expected(what: str) -> NoReturn:
    """'expected WHAT, got <the value as given>'."""
    raise PydanticCustomError("expected", "expected {what}", {"what": what})


def _problem(message: str, got: bool = False) -> NoReturn:
    """A message of its own, shown after the flag (with ', got <the value as given>')."""
    raise PydanticCustomError("problem_got" if got else "problem", message)


def _one_line(name: str, value: Any, err: ValidationError, expected: str | None
              ) -> ConfigError:
    """The first error of ``err`` as one line; ``expected`` overrides what a kind expects."""
    e = err.errors(include_url=False)[0]
    if e["type"] == "problem":
        return ConfigError(f"{flag(name)}: {e['msg']}")
    if e["type"] == "problem_got":
        return ConfigError(f"{flag(name)}: {e['msg']}, got {value!r}")
    what = (e.get("ctx") or {}).get("what") or _EXPECTED.get(e["type"])
    if what is None:
        return ConfigError(f"{flag(name)}: {e['msg']}")
    return ConfigError(f"{flag(name)}: expected {expected or what}, got {value!r}")


# ---- spellings ----------------------------------------------------------------------------
def _is_none(v: Any) -> bool:
    return v is None or (isinstance(v, str) and v.strip().lower() in _NONE)


def _none_or_auto(v: Any) -> Any:
    return None if _is_none(v) or str(v).lower() == "auto" else v


def _fill(v: Any) -> Any:
    """``fill`` (any case) -> FILL: a count the cluster's CPUs decide (config.resolve)."""
    return FILL if isinstance(v, str) and v.strip().lower() == FILL else v


def _int(v: Any) -> Any:
    # Python's int() for strings: pydantic's own parsing also takes "5.0" and "0-1".
    if isinstance(v, bool):  # True is an int to Python, not a size
        _expected("an integer")
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            _expected("an integer")
    return v


def _float(v: Any) -> Any:
    # Python's float() for strings, like _int; "nan" passes here and is refused after.
    if isinstance(v, bool):
        _expected("a number")
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            _expected("a number")
    return v


def _not_nan(x: float) -> float:
    if math.isnan(x):
        _expected("a number")
    return x


def _on_off(v: Any) -> Any:
    # Only these spellings (pydantic would also take "t", "y", ...); the strict bool
    # behind this refuses whatever is left.
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    return True if s in _TRUE else False if s in _FALSE else v


def _json(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return json.loads(v)
        except json.JSONDecodeError as e:
            _expected(f"JSON ({e.msg})")
    return v


def _auto_target(v: Any, handler) -> Any:
    return "auto" if isinstance(v, str) and v.strip().lower() == "auto" else handler(v)


def _layers(v: Any) -> Any:
    """``64,64``, ``[64, 64]`` or ``64`` -> a list of sizes (not yet checked); ``linear``
    -> ``[]`` (no hidden layer: observations map straight to actions)."""
    if v is None:
        return None
    if isinstance(v, str) and v.strip().lower() == "linear":
        return []
    if isinstance(v, (list, tuple)):
        return list(v)
    if isinstance(v, int):
        return [v]
    return [h for h in str(v).replace(" ", "").split(",") if h != ""]


def _positive_sizes(sizes: list[int]) -> list[int]:
    if any(h < 1 for h in sizes):
        _problem("layer sizes must be positive", got=True)
    return sizes


def _island_specs(specs: list) -> list[dict]:
    for i, s in enumerate(specs):
        if not isinstance(s, dict):
            _problem(f"entry {i} must be a mapping, got {s!r}")
        unknown = sorted(set(s) - set(ISLAND_SPEC_KEYS))
        if unknown:
            _problem(f"entry {i} has unknown key {unknown[0]!r}; allowed: "
                     f"{', '.join(ISLAND_SPEC_KEYS)}")
    return [dict(s) for s in specs]


def _edges(v: Any) -> Any:
    if _is_none(v):
        return None
    try:
        return topo.format_edges(topo.parse_edges(v))
    except TypeError:  # not a string nor a list
        _expected("edges like 0>1,1>2")
    except ValueError as e:
        _problem(str(e))


def _resources(v: Any) -> Any:
    """``NAME=AMOUNT,...`` or a JSON object -> {name: amount as given}."""
    if v is None:
        return {}
    if isinstance(v, str) and not v.strip().startswith("{"):
        out = {}
        for part in [p for p in v.split(",") if p.strip()]:
            k, sep, amount = part.partition("=")
            if not sep or not k.strip():
                _expected("NAME=AMOUNT[,NAME=AMOUNT]")
            out[k.strip()] = amount
        return out
    v = _json(v)
    return {str(k): a for k, a in v.items()} if isinstance(v, dict) else v


def _elastic(v: Any) -> Any:
    """``MIN:MAX`` (island counts, 1 <= MIN <= MAX) -> the same, normalized; none: unset."""
    if _is_none(v):
        return None
    lo, sep, hi = str(v).strip().partition(":")
    try:
        lo_n, hi_n = int(lo), int(hi)
    except ValueError:
        _expected("MIN:MAX island counts, e.g. 2:16")
    if not sep or lo_n < 1 or hi_n < lo_n:
        _problem("needs MIN:MAX with 1 <= MIN <= MAX, e.g. 2:16", got=True)
    return f"{lo_n}:{hi_n}"


def _bounds(v: Any) -> Any:
    """``LOW,HIGH``, ``[low, high]`` or ``(low, high)`` -> ``[low, high]`` (checked after);
    none: unset."""
    if _is_none(v):
        return None
    parts = str(v).replace(" ", "").split(",") if isinstance(v, str) else v
    if not isinstance(parts, (list, tuple)) or len(parts) != 2:
        _expected("LOW,HIGH")
    return list(parts)


def _low_below_high(b: list[float]) -> list[float]:
    if not b[0] < b[1]:
        _problem("needs LOW < HIGH", got=True)
    return b


# ---- the kinds ----------------------------------------------------------------------------
def _unset(v: Any) -> Any:
    return None if _is_none(v) else v


def _or_none(check) -> AfterValidator:
    """An after-validator that lets None (unset) through."""
    return AfterValidator(lambda v: None if v is None else check(v))


# In ``Annotated[T, ...]`` before-validators run last-listed first, then T, then
# after-validators in order.
Int = Annotated[int, Strict(), BeforeValidator(_int)]
Float = Annotated[float, AfterValidator(_not_nan), BeforeValidator(_float)]
Bool = Annotated[bool, Strict(), BeforeValidator(_on_off)]
_AUTO = BeforeValidator(_none_or_auto)  # none / null / auto / "": unset

# kind -> (pydantic type, what any failure of its parts is reported as expecting)
KINDS: dict[str, tuple[Any, str | None]] = {
    "int": (Int, None),
    "optint": (Annotated[Int | None, _AUTO], None),
    "fillint": (Annotated[Int | Literal[FILL] | None, _AUTO, BeforeValidator(_fill)],
                "an integer or fill"),
    "float": (Float, None),
    "optfloat": (Annotated[Float | None, _AUTO], None),
    "bool": (Bool, None),
    "optbool": (Annotated[Bool | None, _AUTO], None),
    "target": (Annotated[Float | None, WrapValidator(_auto_target), BeforeValidator(_unset)],
               None),
    "json": (Annotated[dict, Strict(), BeforeValidator(_json),
                       BeforeValidator(lambda v: {} if v is None else v)], None),
    "specs": (Annotated[Annotated[list, Strict()] | None, _or_none(_island_specs),
                        BeforeValidator(_json), BeforeValidator(_unset)], None),
    "hidden": (Annotated[list[Int] | None, _or_none(_positive_sizes), BeforeValidator(_layers),
                         _AUTO], "comma-separated layer sizes like 64,64, or linear"),
    "edges": (Annotated[str | None, BeforeValidator(_edges)], None),
    "bounds": (Annotated[list[Float] | None, _or_none(_low_below_high),
                         BeforeValidator(_bounds)], "LOW,HIGH"),
    "elastic": (Annotated[str | None, BeforeValidator(_elastic)], None),
    "resources": (Annotated[dict[str, Float], Strict(), BeforeValidator(_resources)], None),
}


def _text(optional: bool, choices: tuple[str, ...] | None) -> Any:
    """A stripped string, one of ``choices`` if given; empty means unset when optional."""
    def check(s: str) -> Any:
        s = s.strip()
        if choices and s not in choices:
            sep = " / " if any("," in c for c in choices) else ", "  # choices with commas
            _problem(f"unknown value {s!r}; choose one of {sep.join(choices)}")
        return (s or None) if optional else s

    text = Annotated[str, Strict(), AfterValidator(check)]
    return (text | None) if optional else text


@functools.cache
def _adapter(name: str) -> tuple[TypeAdapter, str | None]:
    f = FIELDS[name]
    kind = f.metadata["kind"]
    if kind == "str":
        return TypeAdapter(_text(f.default is None, f.metadata["choices"])), None
    typ, expected = KINDS[kind]
    return TypeAdapter(typ), expected


def coerce(name: str, value: Any) -> Any:
    """Turn a CLI string or YAML value for field ``name`` into its typed value; ConfigError
    (one line, naming the flag) when it cannot."""
    adapter, expected = _adapter(name)
    try:
        return adapter.validate_python(value)
    except ValidationError as err:
        raise _one_line(name, value, err, expected) from None
