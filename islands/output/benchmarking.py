"""What every script in ``benchmarks/`` shares: its flags and its final JSON line.

Flags (one spelling each): ``--seconds`` for the one time a script is given (a run's length,
a budget), ``--out DIR`` where it writes files, ``--quick`` for a smoke run at tiny sizes;
an older spelling stays accepted, hidden from ``--help``, with a one-line note on stderr
(:func:`renamed`).

The final JSON line (:func:`emit`) has one shape: ``benchmark`` (the script's name),
``machine`` (:func:`machine_facts`), ``commit`` (:func:`commit_id`), ``rows`` (one dict per
measured row), ``baseline`` (what the ratios compare with, measured in the same run) and
``ratio`` (the script's headline ratio against it; None where only its rows carry ratios),
then the script's own keys. Scripts import this module from the installed package, never by
editing ``sys.path``; a script that imports a sibling script imports it by its plain name
when run as ``python benchmarks/x.py`` (its folder is then first on the path) and
relatively when run as ``python -m benchmarks.x``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from typing import Any

STANDARD_KEYS = ("benchmark", "machine", "commit", "rows", "baseline", "ratio")


def parser(doc: str | None, **kwargs: Any) -> argparse.ArgumentParser:
    """An ``ArgumentParser`` described by the first line of the script's docstring."""
    return argparse.ArgumentParser(description=(doc or "").strip().split("\n")[0], **kwargs)


class _Renamed(argparse.Action):
    """An old spelling of a flag: stores into the new flag's destination (times ``scale``)
    and says on stderr what the flag is called now."""

    def __init__(self, option_strings, dest, new: str, scale: float | None = None, **kw):
        super().__init__(option_strings, dest, default=argparse.SUPPRESS,
                         help=argparse.SUPPRESS, **kw)
        self.new, self.scale = new, scale

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog}: {option_string} is now {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values * self.scale if self.scale else values)


def renamed(p: argparse.ArgumentParser, old: str, new: str, scale: float | None = None,
            **kwargs: Any) -> None:
    """Accept ``old`` for the flag ``new`` (already added), hidden from ``--help``;
    ``scale`` converts its unit (``--minutes`` into ``--seconds``: 60)."""
    dest = next(a.dest for a in p._actions if new in a.option_strings)
    p.add_argument(old, dest=dest, action=_Renamed, new=new, scale=scale, **kwargs)


def add_seconds(p: argparse.ArgumentParser, default: float | None, help: str,
                old: tuple[str, ...] = ()) -> None:
    """``--seconds S``: the one time a script is given; ``old``: its former spellings."""
    p.add_argument("--seconds", type=float, default=default, metavar="S", help=help)
    for flag in old:
        renamed(p, flag, "--seconds", type=float)


def add_out(p: argparse.ArgumentParser, default: Any, help: str,
            old: tuple[str, ...] = (), type: Any = str) -> None:
    """``--out DIR``: where a script writes its files; ``old``: its former spellings."""
    p.add_argument("--out", metavar="DIR", default=default, type=type, help=help)
    for flag in old:
        renamed(p, flag, "--out", type=type)


def add_quick(p: argparse.ArgumentParser, help: str) -> None:
    """``--quick``: a smoke run at tiny sizes."""
    p.add_argument("--quick", action="store_true", help=help)


def commit_id() -> str:
    """The checkout's commit, ``+dirty`` when tracked files differ from it
    (``segments.commit``, as runs and experiments record it); ``GIT_COMMIT`` where the copy
    has no ``.git`` (a GPU machine's); else ``unknown``."""
    from .segments import commit

    return os.environ.get("GIT_COMMIT") or commit()


def machine_facts() -> dict[str, Any]:
    """Where the figures were measured: CPUs and their model, memory, load, platform, Python
    and, when the script has loaded torch, the GPUs it sees (None: not asked)."""
    try:
        memory = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        memory = None
    torch = sys.modules.get("torch")
    gpus = None
    if torch is not None:
        gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] \
            if torch.cuda.is_available() else []
    from .segments import cpu

    return {"host": platform.node(), "platform": platform.platform(),
            "python": platform.python_version(), "cpus": os.cpu_count(), "cpu": cpu(),
            "memory_gb": memory, "load_1m": round(os.getloadavg()[0], 2), "gpus": gpus}


def result(benchmark: str, rows: list, baseline: Any, ratio: float | None, *,
           machine: dict | None = None, commit: str | None = None, **extra: Any
           ) -> dict[str, Any]:
    """The final JSON line's dict: the standard keys first, then the script's own."""
    return {"benchmark": benchmark,
            "machine": machine_facts() if machine is None else machine,
            "commit": commit_id() if commit is None else commit,
            "rows": rows, "baseline": baseline, "ratio": ratio, **extra}


def emit(benchmark: str, rows: list, baseline: Any, ratio: float | None, **extra: Any
         ) -> dict[str, Any]:
    """Print :func:`result` as the script's last stdout line and return it."""
    out = result(benchmark, rows, baseline, ratio, **extra)
    print(json.dumps(out), flush=True)
    return out
