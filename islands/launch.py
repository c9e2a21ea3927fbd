"""``python -m islands.launch``: run an archipelago from flags / a YAML config.

1. parse and resolve the config (:mod:`islands.config`): unknown names, malformed YAML,
   unknown keys, non-positive sizes, unknown env, cnn on vector observations -> exit 2,
   one line, before anything is created;
2. run it on Ray (:func:`islands.runtime.driver.run`): join ``--address`` /
   ``RAY_ADDRESS`` or start an embedded local Ray, plan and check resources (exit 2 when
   the cluster cannot place the islands), start the actors, drive the run, write the run
   directory;
3. print one JSON line: the run directory and its outcome.

For Python callers and tests, ``islands.runtime.driver.run(cfg)`` is the same without
argument parsing (it uses an already-initialized Ray as is).
"""

from __future__ import annotations

import dataclasses
import json
import sys

from .config import ConfigError, default_out_dir, parse_args, resolve
from .planning import ResourceError
from .signals import SIGNALS

PROG = "islands.launch"
SUMMARY_KEYS = ("env", "solved", "best_fitness", "test_mean", "confirmation_mean", "test_std",
                "test_episodes", "wall_s", "total_evals", "total_env_steps", "stop_reason")


def main(argv: list[str] | None = None) -> int:
    try:
        raw = parse_args(argv)
        if raw.out is None:  # decided before resolving: the checkpoint location follows it
            raw = dataclasses.replace(raw, out=default_out_dir(raw.env))
        cfg = resolve(raw)  # its directory is checked once, by the driver, before Ray starts
        out = cfg.out
    except (ConfigError, ValueError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    from .runtime.archipelago import StartError
    from .runtime.driver import run

    try:
        with SIGNALS:
            summary = run(cfg)
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
    print(json.dumps({"run_dir": out, **{k: summary[k] for k in SUMMARY_KEYS}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
