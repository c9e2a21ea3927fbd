"""Where and on what an experiment ran: recorded when it starts, stated by its report.

:func:`record` is stored as ``provenance`` in ``experiment.json`` by ``run``: the date, the
git commit of the islands package (and whether its tree had uncommitted changes), the
machine (CPUs, memory, GPUs), the versions of Python, Ray, torch, EnvPool, Gymnasium, numpy
and scipy, and the environment table's row of every environment the experiment uses.
:func:`table_changes` compares that row with today's table, so that a report rendered after
the table moved says its runs used other defaults than a rerun would.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("ray", "torch", "envpool", "gymnasium", "numpy", "scipy", "cma")


def _git(*args: str) -> str:
    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                             timeout=10, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def commit() -> str:
    """The package's git commit, ``+dirty`` when its tracked files differ from it
    (``unknown`` outside a git checkout)."""
    head = _git("rev-parse", "--short=12", "HEAD")
    if not head:
        return "unknown"
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return head + ("+dirty" if dirty else "")


def _memory_gb() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _gpus() -> list[str]:
    try:
        import torch

        return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception:  # no torch, or a driver problem: the report says "none"
        return []


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def env_ids(spec: dict[str, Any]) -> list[str]:
    """The environments an experiment spec runs (base and grid)."""
    ids = [spec.get("base", {}).get("env")] + list(spec.get("grid", {}).get("env", []))
    return sorted({str(e) for e in ids if e})


def env_table(ids: list[str]) -> dict[str, dict[str, Any]]:
    """Today's environment-table rows of ``ids``, as JSON data."""
    import json

    from ..envdefaults import env_defaults

    return {e: json.loads(json.dumps(env_defaults(e), default=list)) for e in ids}


def record(spec: dict[str, Any]) -> dict[str, Any]:
    """Everything the report states about where the experiment ran."""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit(), "host": platform.node(), "platform": platform.platform(),
        "cpus": os.cpu_count(), "memory_gb": _memory_gb(), "gpus": _gpus(),
        "versions": versions(), "env_table": env_table(env_ids(spec)),
    }


def table_changes(recorded: dict[str, dict[str, Any]]) -> list[str]:
    """One line per environment-table value that differs today from the recorded row."""
    now = env_table(list(recorded))
    lines = []
    for env, row in recorded.items():
        for key in sorted(set(row) | set(now[env])):
            if row.get(key) != now[env].get(key):
                lines.append(f"{env} {key}: {row.get(key)!r} then, {now[env].get(key)!r} now")
    return lines
