"""The ``islands`` command: ``islands launch ...``, ``islands status``, ``islands evaluate
DIR``, ``islands experiment run FILE`` and ``islands --version``.

Each subcommand is the ``python -m islands.<name>`` module of the same name with the same
flags, exit codes and output; ``islands <name> --help`` is that module's help. Installed by
``pip install`` as a console script (pyproject.toml ``[project.scripts]``).
"""

from __future__ import annotations

import importlib
import sys

# subcommand -> (module with ``main(argv)``, one line of help)
COMMANDS = {
    "launch": ("islands.launch", "run an archipelago (python -m islands.launch)"),
    "status": ("islands.status", "the live table of a running archipelago"),
    "evaluate": ("islands.evaluate", "re-test a run's best solution, render a GIF"),
    "experiment": ("islands.experiment.cli", "run, resume and report an experiment (Tune)"),
}


def usage() -> str:
    lines = ["usage: islands {" + ",".join(COMMANDS) + "} ... | islands --version", "",
             "Island-model neuroevolution on Ray. Commands:"]
    lines += [f"  {name:<11} {text}" for name, (_, text) in COMMANDS.items()]
    lines += ["", "islands COMMAND --help shows a command's flags."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0 if args else 2
    if args[0] == "--version":
        from . import __version__

        print(f"islands {__version__}")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"islands: error: unknown command {name!r} (choose from "
              f"{', '.join(COMMANDS)})", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
