"""``python -m islands.launch``: run an archipelago from flags / a YAML config.

A thin layer over :mod:`islands.api` (what ``islands.run`` does from Python):

1. parse the flags and resolve the config (:func:`islands.api.prepare`): unknown names,
   malformed YAML, unknown keys, non-positive sizes, unknown env, cnn on vector
   observations -> exit 2, one line, before anything is created;
2. run it on Ray (:func:`islands.api.execute`): join ``--address`` / ``RAY_ADDRESS`` or start
   an embedded local Ray, plan and check resources (exit 2 when the cluster cannot place
   the islands), start the actors, drive the run, write the run directory;
3. print one JSON line: the run directory and its outcome.
"""

from __future__ import annotations

import json
import sys

from .api import execute, prepare
from .config import ConfigError, build_parser
from .planning import ResourceError
from .signals import SIGNALS

PROG = "islands.launch"
SUMMARY_KEYS = ("env", "solved", "best_fitness", "test_mean", "confirmation_mean", "test_std",
                "test_episodes", "wall_s", "wall_to_solve", "episodes_to_solve", "total_evals",
                "total_env_steps", "stop_reason")
OBJECTIVE_KEYS = ("function", "minimize", "target", "best", "test", "confirmation")


def main(argv: list[str] | None = None) -> int:
    try:
        # its directory is checked once, by the driver, before Ray starts
        cfg = prepare(**vars(build_parser().parse_args(argv)))
        out = cfg.out
    except (ConfigError, ValueError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    from .runtime.archipelago import StartError

    try:
        with SIGNALS:
            summary = execute(cfg)
    except (ConfigError, ResourceError, StartError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 128 + (SIGNALS.received or 2)
    if SIGNALS.received is not None:  # stopped by SIGINT/SIGTERM: 130 / 143
        print(json.dumps({"run_dir": out, "stop_reason": "interrupted",
                          "best_fitness": summary["best_fitness"]}))
        return 128 + SIGNALS.received
    line = {"run_dir": out, **{k: summary[k] for k in SUMMARY_KEYS}}
    if summary.get("objective"):  # a user's function: the figures in its own scale too
        line["objective"] = {k: summary["objective"][k] for k in OBJECTIVE_KEYS}
    print(json.dumps(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
