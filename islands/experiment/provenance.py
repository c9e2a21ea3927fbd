"""Where and on what an experiment ran: recorded when it starts, stated by its report.

:func:`record` is stored as ``provenance`` in ``experiment.json`` by ``run``: the date, the
git commit of the islands package (and whether its tree had uncommitted changes), the
machine (CPUs and their model, memory, GPUs, or why they could not be queried), the
versions of Python, Ray, torch, EnvPool, Gymnasium, numpy and scipy, and the environment
table's row of every environment the experiment uses.
:func:`table_changes` compares that row with today's table, so that a report rendered after
the table moved says its runs used other defaults than a rerun would (a setting every arm
fixes is no such default).
"""

from __future__ import annotations

import datetime
import os
import platform
from importlib import metadata
from typing import Any

PACKAGES = ("ray", "torch", "envpool", "gymnasium", "numpy", "scipy", "cma")


# torch's errors for a machine that has no GPU to offer (no driver, no device, a CPU
# build); any other error is a GPU that could not be queried
_NO_GPU = ("Found no NVIDIA driver", "No CUDA GPUs are available", "not compiled with CUDA")


def gpus() -> tuple[list[str], str | None]:
    """The GPUs torch sees, and None; or no names and why the GPU could not be queried
    (``Type: message``). A CUDA driver error does not raise from ``device_count()``: it
    returns 0 with a one-time warning, so a count of 0 is asked again of ``torch.cuda.init``,
    which raises the driver's error, or the one that means there is no GPU."""
    try:
        import torch

        n = torch.cuda.device_count()
        if n == 0 and torch.backends.cuda.is_built():
            try:
                torch.cuda.init()
            except Exception as e:
                msg = _one_line(e)
                return [], None if any(s in msg for s in _NO_GPU) else msg
        return [torch.cuda.get_device_name(i) for i in range(n)], None
    except Exception as e:  # torch will not load, a driver problem
        return [], _one_line(e)


def _one_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


def gpu_line(p: dict[str, Any]) -> str:
    """The report's GPU field of a recorded provenance: names, ``none``, or ``could not
    query the GPU: <error>``."""
    if p.get("gpus"):
        return ", ".join(p["gpus"])
    err = p.get("gpu_error")
    return "none" if not err else f"could not query the GPU: {err}"


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
    from ..output.segments import commit, cpu, memory_gb  # (gpus() loads without the package)

    names, gpu_error = gpus()
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit(), "host": platform.node(), "platform": platform.platform(),
        "cpus": os.cpu_count(), "cpu": cpu(), "memory_gb": memory_gb(), "gpus": names,
        "gpu_error": gpu_error,  # None: ``gpus`` is the answer (empty: no GPU)
        "versions": versions(), "env_table": env_table(env_ids(spec)),
    }


def set_by_every_arm(spec: dict[str, Any]) -> set[str]:
    """Settings the spec fixes in every run (its base, every arm, a grid axis): the table's
    value of these never reached a run, so a change of it is no drift."""
    arms = [set(a) for a in (spec.get("arms") or {}).values()]
    axes = set(spec.get("grid") or {}) - {"env", "arm"}
    return set(spec.get("base") or {}) | axes | (set.intersection(*arms) if arms else set())


def table_changes(meta: dict[str, Any]) -> list[str]:
    """One line per environment-table value that differs today from the row recorded in an
    experiment's ``meta`` (experiment.json), leaving out the settings its spec fixes in
    every run (:func:`set_by_every_arm`)."""
    recorded = (meta.get("provenance") or {}).get("env_table") or {}
    now = env_table(list(recorded))
    fixed = set_by_every_arm(meta.get("spec") or {})
    lines = []
    for env, row in recorded.items():
        for key in sorted((set(row) | set(now[env])) - fixed):
            if row.get(key) != now[env].get(key):
                lines.append(f"{env} {key}: {row.get(key)!r} then, {now[env].get(key)!r} now")
    return lines
