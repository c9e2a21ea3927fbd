"""``python -m islands.status``: the live island table of a running archipelago.

For a run started elsewhere (``ray job submit ... python -m islands.launch``): connects to
the cluster (``--address``, else ``RAY_ADDRESS``, else the running local cluster), finds the
named actor ``coordinator`` in the run's namespace and prints the latest report of each
island, the hall of fame and the migration counters. ``--watch S`` reprints every S seconds;
``--stop`` ends the run as a budget would (final checkpoints and test, summary written).
Exit 2 with one line when there is no cluster or no run in it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any

PROG = "islands.status"


def _num(v: Any, fmt: str = ".1f") -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "-"
    return format(f, fmt) if math.isfinite(f) else "-"


COLUMNS = ("island", "strategy", "gen", "evals", "env steps", "best", "last max", "last mean",
           "evals/s", "immigr.", "restarts")


def format_status(st: dict[str, Any]) -> str:
    """The table printed by the CLI, from ``coordinator.status()``: values in the run's
    scale (a user's function's cost, not minus the cost)."""
    sign = float((st.get("scale") or {}).get("sign", 1.0))

    def val(v: Any) -> str:
        return _num(None if v is None else sign * float(v))

    rows = []
    for r in st.get("islands", []):
        rows.append((f"{int(r['island']):02d}", str(r.get("strategy", "")),
                     str(r.get("generation", "-")), str(r.get("evals", "-")),
                     str(r.get("env_steps", "-")), val(r.get("best_so_far")),
                     val(r.get("fitness_max")), val(r.get("fitness_mean")),
                     _num(r.get("evals_per_s"), ".0f"), str(r.get("immigrants", "-")),
                     str(r.get("restarts", "-"))))
    widths = [max([len(c)] + [len(row[j]) for row in rows]) for j, c in enumerate(COLUMNS)]
    lines = []
    env = st.get("env") or "?"
    live = (st.get("stats") or {}).get("live")
    # an elastic run's retired islands keep their last rows: say how many are still in it
    now = f", {live} live (--elastic)" if live is not None and live != len(rows) else ""
    word = (st.get("scale") or {}).get("word", "fitness")
    lines.append(f"env {env}: {len(rows)} island(s) reporting{now}"
                 + ("" if word == "fitness" else f"; values are the {word}"))
    lines.append("  ".join(c.rjust(w) for c, w in zip(COLUMNS, widths, strict=True)))
    for row in rows:
        lines.append("  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)))
    hof = st.get("hof") or {}
    if hof.get("island") is not None:
        lines.append(f"hall of fame: {_num(sign * float(hof.get('fitness')), '.2f')} from island "
                     f"{int(hof['island']):02d} at generation {hof.get('generation')}")
    else:
        lines.append("hall of fame: empty")
    line = _progress_line(st)
    if line:
        lines.append(line)
    stats = st.get("stats") or {}
    if stats:
        lines.append(f"migration: {stats.get('reports', 0)} reports, {stats.get('rounds', 0)} "
                     f"emigration rounds, {sum(stats.get('sent', []))} genomes sent")
    return "\n".join(lines)


def _progress_line(st: dict[str, Any]) -> str:
    """``progress: 49,520 training episodes; ETA 23 min (max episodes)`` from the
    coordinator's totals and clock (islands/output/progress.py); "" from an older one."""
    if "totals" not in st:
        return ""
    from .messages import RunStatus
    from .output.progress import eta_text, progress

    p = progress(RunStatus(rows=[st["totals"]], elapsed=float(st.get("elapsed", 0.0)),
                           start_totals=dict(st.get("start_totals") or {})),
                 dict(st.get("budgets") or {}))
    eta = eta_text(p)
    return f"progress: {p.episodes:,} training episodes" + (f"; {eta}" if eta else "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    p.add_argument("--address", default=None,
                   help="Ray cluster (default: RAY_ADDRESS, else the running local one)")
    p.add_argument("--namespace", default="islands", help="the run's Ray namespace")
    p.add_argument("--watch", type=float, default=None, metavar="S",
                   help="reprint every S seconds until interrupted")
    p.add_argument("--json", action="store_true", help="print the raw status as JSON")
    p.add_argument("--stop", action="store_true",
                   help="end the run as a budget would (its islands finish their generation, "
                   "final checkpoints, the last test; stop reason 'stopped'), then print "
                   "the table")
    args = p.parse_args(argv)
    from .runtime.cluster import StatusError, fetch_status

    try:
        while True:
            st = fetch_status(args.address, args.namespace,
                              stop="stopped" if args.stop else None)
            args.stop = False  # asked once; --watch goes on showing the run end
            print(json.dumps(st, default=float) if args.json else format_status(st),
                  flush=True)
            if args.watch is None:
                return 0
            time.sleep(args.watch)
    except StatusError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
