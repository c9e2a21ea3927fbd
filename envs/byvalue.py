"""Functions and env classes that travel by value: a notebook's, a lambda, a closure.

The islands import a user's objective or env class by its name (``package.module:name``),
which a function defined in ``__main__`` or a Jupyter cell does not have in another
process. :func:`pack` pickles such objects by value with cloudpickle (as Ray does for its
remote functions) into one string, ``byvalue:<base64>``, that rides in the config: a user's
function as its objective's source (envs/objective.py), an env class in the ``env_module``
field. Wherever a process loads them (the driver's resolve, every evaluator, ``islands
evaluate``), :func:`install` unpickles them into the module :data:`MODULE`, so they are
named ``islands_user:NAME`` like any import. The
string is plain text: it reaches every node of a cluster with the config and stays in
``config.yaml`` and ``solution.json`` for a resume or a re-test.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib
import keyword
import re
import subprocess
import sys
import types
from typing import Any

PREFIX = "byvalue:"
MODULE = "islands_user"
_installed: set[str] = set()  # digests of payloads this process has installed


def is_packed(env_module: str | None) -> bool:
    return bool(env_module) and str(env_module).startswith(PREFIX)


def safe_name(obj: Any) -> str:
    """A Python identifier for ``obj`` in :data:`MODULE`: its qualified name with every
    character an attribute name cannot hold made ``_`` (``<lambda>`` -> ``_lambda_``)."""
    raw = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or "obj"
    name = re.sub(r"\W", "_", str(raw))
    if not name or name[0].isdigit() or keyword.iskeyword(name):
        name = "_" + name
    return name


def importable_elsewhere(obj: Any) -> bool:
    """Whether another process of this Python, started in this directory (as Ray starts
    the islands' workers, with the driver's working directory on their path), finds the
    top-level package of ``obj``'s module: False for ``__main__``, a notebook, a lambda or
    closure, or a module found only through this process's own ``sys.path`` edits."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", "")
    if not module or module == "__main__" or not qualname or "<" in qualname:
        return False
    top = module.partition(".")[0]
    if top in sys.builtin_module_names or top in sys.stdlib_module_names:
        return True
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({top!r}) is None)"
    try:  # find_spec of the top-level name imports nothing
        return subprocess.run([sys.executable, "-c", probe], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def pack(objects: dict[str, Any], env_module: str | None = None) -> str:
    """``byvalue:<base64>`` holding ``objects`` (name -> object) and the user's own
    ``env_module`` (a module name to import first, or an earlier packed string whose
    objects are kept)."""
    import cloudpickle  # a Gymnasium dependency; needed only where something is packed

    payload: dict[str, Any] = {"import": env_module, "objects": dict(objects)}
    if is_packed(env_module):  # a second object on top of a packed config: merge
        earlier = _load(env_module)
        payload = {"import": earlier["import"],
                   "objects": {**earlier["objects"], **objects}}
    # a function of a module the islands cannot import goes by value, not by reference
    own = {sys.modules[m] for m in (getattr(o, "__module__", None) for o in objects.values())
           if m and m != "__main__" and m in sys.modules
           and m not in cloudpickle.list_registry_pickle_by_value()}
    for m in own:
        cloudpickle.register_pickle_by_value(m)
    try:
        raw = cloudpickle.dumps(payload, protocol=4)
    finally:
        for m in own:
            cloudpickle.unregister_pickle_by_value(m)
    return PREFIX + base64.b64encode(raw).decode("ascii")


@functools.lru_cache(maxsize=16)
def _load(packed: str) -> dict[str, Any]:
    import pickle

    try:
        raw = base64.b64decode(packed[len(PREFIX):].encode("ascii"), validate=True)
        payload = pickle.loads(raw)  # noqa: S301 - the run's own config, written by pack
    except Exception as e:  # noqa: BLE001 - a truncated or edited string, a missing module
        raise ValueError(f"env_module {PREFIX}...: cannot unpickle the run's functions and "
                         f"env classes ({type(e).__name__}: {e})") from None
    if not isinstance(payload, dict) or "objects" not in payload:
        raise ValueError(f"env_module {PREFIX}...: not a payload islands packed")
    return payload


def names(packed: str) -> list[str]:
    """The names of the objects ``packed`` holds, in order."""
    return list(_load(packed)["objects"])


def load_one(packed: str) -> tuple[str, Any]:
    """Install ``packed`` (:func:`install`) and return its one object with its name
    (a user's objective travels alone)."""
    install(packed)
    name = names(packed)[0]
    return name, getattr(sys.modules[MODULE], name)


def install(packed: str) -> None:
    """Import the payload's own ``env_module`` and set each of its objects on module
    :data:`MODULE` (created on first use); once per payload per process."""
    digest = hashlib.sha1(packed.encode("ascii")).hexdigest()
    if digest in _installed:
        return
    payload = _load(packed)
    if payload.get("import"):
        importlib.import_module(payload["import"])
    module = sys.modules.get(MODULE)
    if module is None:
        module = sys.modules[MODULE] = types.ModuleType(
            MODULE, "functions and env classes islands.run received by value")
    for name, obj in payload["objects"].items():
        setattr(module, name, obj)
    _installed.add(digest)
