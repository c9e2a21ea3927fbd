"""Where and when a run ran: one segment per start or ``--resume``, in ``segments.json``.

A run longer than a machine's day (Walker2d, Ant, Humanoid on 2 cores) is stopped, kept
(``islands.experiment keep``) and resumed on another machine, maybe days later. Each
segment records the machine (host name, the kernel's boot id, which tells apart machines
that share a host name as cloned VMs do, CPUs and their model, memory), the commit, when it
started and ended in UTC, why it stopped and the run's training episodes when it did. The
driver opens a segment once the run directory exists (stop reason ``running``), moves its
end forward at each metrics flush (``touch``), and closes it when its run returns or raises
(an interrupt, Ctrl-C or a Tune trial stopped, closes as ``stopped`` with its last flush; a
crash as ``raised <type>``); ``summary.json`` repeats the list; ``keep`` copies the file
with the checkpoints. So a segment whose process was killed before it could close it (a
machine lost, a Tune trial killed, a copy kept while the trial was still stopping) still
tells where it ran, until its last flush; the next start marks it ``lost``, or the
experiment's driver, once Tune has stopped the trial, ``stopped``.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

SEGMENTS_FILE = "segments.json"
RUNNING = "running"  # an open segment's stop reason: not closed yet
LOST = "lost (no end recorded: its last flush)"  # an open segment a later start found
# an open segment closed by a stop: the run's own close on an interrupt, or its experiment's
# once Tune had stopped the trial (Tune may end a trial's process before the run returns)
STOPPED = "stopped with its experiment (its end: its last flush)"


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


def memory_gb() -> float | None:
    """This machine's memory in GiB (None where it cannot be read)."""
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


# the widest vector extension first: NumPy, torch and MuJoCo pick their kernels by it, so two
# machines that differ here may round an episode's return differently (virtual-time.md,
# stage 13: the same code parted in the ninth digit on another machine)
SIMD = ("avx512f", "avx2", "avx", "sse4_2", "neon", "asimd")


def cpu(text: str | None = None) -> dict[str, str]:
    """This machine's processor as ``/proc/cpuinfo`` (or ``text``) names its first CPU:
    ``model`` (its name, family, model and stepping: a cloud VM may name only its vendor),
    ``simd`` (the widest of :data:`SIMD` it has) and ``flags`` (a digest of all its flags,
    which tells apart machines that share a model name). Empty strings where not readable."""
    if text is None:
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            text = ""
    first: dict[str, str] = {}
    for line in text.split("\n\n")[0].splitlines():
        key, _, value = line.partition(":")
        first.setdefault(key.strip(), value.strip())
    flags = set((first.get("flags") or first.get("Features") or "").split())
    name = first.get("model name") or platform.processor()
    ids = [f"{k} {first[k]}" for k in ("cpu family", "model", "stepping") if first.get(k)]
    return {"model": " ".join([name, f"({', '.join(ids)})" if ids else ""]).strip(),
            "simd": next((f for f in SIMD if f in flags), ""),
            "flags": hashlib.sha1(" ".join(sorted(flags)).encode()).hexdigest()[:8]
            if flags else ""}


def cpu_text(c: dict[str, str] | None) -> str:
    """`` (AMD EPYC (cpu family 25, model 17, stepping 1), avx512f, flags 30614b81)`` from a
    recorded :func:`cpu`; "" for a record made before CPUs were recorded."""
    if not c:
        return ""
    parts = [c.get("model"), c.get("simd"), c.get("flags") and f"flags {c['flags']}"]
    return " (" + ", ".join(x for x in parts if x) + ")"


def machine() -> dict[str, Any]:
    """This machine: host name, boot id (8 characters, "" where the kernel has none), CPUs,
    their model (:func:`cpu`), memory in GiB."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        boot = ""
    return {"host": platform.node(), "boot": boot, "cpus": os.cpu_count(),
            "cpu": cpu(), "memory_gb": memory_gb()}


def _utc(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat(
        timespec="seconds")


def segment(started_at: float, ended_at: float, stop_reason: str, episodes: int | None,
            commit: str) -> dict[str, Any]:
    """One segment of a run: this machine, from ``started_at`` to ``ended_at`` (epoch
    seconds), the stop reason and the run's training episodes at its end (None where the
    segment ended by an exception before the run loop returned its totals)."""
    return {**machine(), "commit": commit, "started": _utc(started_at),
            "ended": _utc(ended_at), "hours": round((ended_at - started_at) / 3600, 3),
            "stop_reason": stop_reason, "episodes": None if episodes is None else int(episodes)}


def read(run_dir: str | Path) -> list[dict[str, Any]]:
    """The segments recorded in ``run_dir`` ([] for none, or a file that does not parse)."""
    try:
        segs = json.loads((Path(run_dir) / SEGMENTS_FILE).read_text())
    except (OSError, ValueError):
        return []
    return segs if isinstance(segs, list) else []


def append(run_dir: str | Path, seg: dict[str, Any]) -> list[dict[str, Any]]:
    """Add ``seg`` to ``run_dir``'s segments (atomically); returns them all."""
    return _write(run_dir, [*read(run_dir), seg])


def _write(run_dir: str | Path, segs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    path = Path(run_dir) / SEGMENTS_FILE
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(segs, indent=2) + "\n")
    tmp.replace(path)
    return segs


def open_segment(run_dir: str | Path, started_at: float, code: str) -> list[dict[str, Any]]:
    """Record the segment starting now (``running``, ended where it started); an earlier
    one still open never closed: ``lost``."""
    segs = [s | {"stop_reason": LOST} if s.get("stop_reason") == RUNNING else s
            for s in read(run_dir)]
    return _write(run_dir, [*segs, segment(started_at, started_at, RUNNING, None, code)])


def touch(run_dir: str | Path, episodes: int | None) -> None:
    """The open segment's end moved to now, with the run's training episodes so far (each
    metrics flush); nothing where no segment is open."""
    import time

    segs = read(run_dir)
    if not segs or segs[-1].get("stop_reason") != RUNNING:
        return
    start = datetime.datetime.fromisoformat(segs[-1]["started"]).timestamp()
    segs[-1] = segs[-1] | {"ended": _utc(time.time()),
                           "hours": round((time.time() - start) / 3600, 3),
                           "episodes": None if episodes is None else int(episodes)}
    _write(run_dir, segs)


def close_open(run_dir: str | Path, reason: str = STOPPED) -> bool:
    """Close the run's open segment, if any, as ``reason`` (its end stays its last flush);
    True if one was open. For a driver that knows the run's process is gone."""
    segs = read(run_dir)
    if not segs or segs[-1].get("stop_reason") != RUNNING:
        return False
    _write(run_dir, [*segs[:-1], segs[-1] | {"stop_reason": reason}])
    return True


# how a stop reaches a run: Ctrl-C, or Tune ending a stopped trial (SystemExit in its thread)
INTERRUPTS = (KeyboardInterrupt, SystemExit)


def close_raised(run_dir: str | Path, started_at: float, error: BaseException,
                 code: str) -> list[dict[str, Any]]:
    """Close the segment of a run that raised ``error``; returns every segment. An
    interrupt is a stop, not a failure: the open segment closes as ``stopped``, its end and
    episodes those of its last metrics flush (what its checkpoints hold; an interrupted
    Ant run once logged ``raised SystemExit`` with no episodes), and one its experiment
    closed already stays as it is. Anything else closes as ``raised <type>``."""
    if isinstance(error, INTERRUPTS):
        close_open(run_dir)
        return read(run_dir)
    return log_segment(run_dir, started_at, f"raised {type(error).__name__}", None, code)


def where_ran(segments: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A run's segments in brief: how many, on how many machines (host and boot id), over
    how many UTC calendar days, the hours run, and the first start and last end."""
    segs = segments or []
    if not segs:
        return {"segments": 0, "machines": 0, "days": 0, "hours": 0.0, "first": None,
                "last": None}
    days = {s[key][:10] for s in segs for key in ("started", "ended")}
    return {"segments": len(segs),
            "machines": len({(s.get("host"), s.get("boot")) for s in segs}),
            "days": len(days), "hours": round(sum(s.get("hours", 0.0) for s in segs), 2),
            "first": segs[0]["started"], "last": segs[-1]["ended"]}


def log_segment(run_dir: str | Path, started_at: float, stop_reason: str,
                episodes: int | None, code: str) -> list[dict[str, Any]]:
    """Close this run segment (this machine, the commit ``code``, from ``started_at`` to
    now) in ``run_dir``'s record, or append it where it was never opened; returns every
    segment. The caller reads ``code`` (:func:`commit`) when the segment starts: at its end
    a Ctrl-C reaches the ``git`` child too (one process group), which then fails and left
    ``unknown`` in resumed runs' records."""
    import time

    seg = segment(started_at, time.time(), stop_reason, episodes, code)
    segs = read(run_dir)
    # this segment, opened at its start (or closed for it by its experiment's driver, which
    # found it open while this process was still ending)
    if segs and segs[-1].get("stop_reason") in (RUNNING, STOPPED) and \
            segs[-1].get("started") == seg["started"]:
        return _write(run_dir, [*segs[:-1], seg])
    return append(run_dir, seg)
