"""`python -m toolbench.engine URL ...`: the engine without the rest of the CLI."""
from __future__ import annotations

import argparse
import signal
import sys
from types import ModuleType
from typing import NoReturn

from toolbench.errors import ToolbenchError


class _Parser(argparse.ArgumentParser):
    """Bad flags end in one line and exit code 2, like every other toolbench error."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"toolbench: error: {message}\n")
        sys.exit(2)


def _import_command() -> ModuleType | None:
    """The engine's command module, or None when a Ctrl-C came while it was imported. A
    KeyboardInterrupt raised inside the import machinery's own callbacks is printed and lost
    ("Exception ignored in _get_module_lock"), and the engine then ran its whole duration (CI):
    during the import a Ctrl-C only sets a flag."""
    said: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: said.append(signum))
    try:
        from toolbench.engine import command
    finally:
        signal.signal(signal.SIGINT, previous)
    return None if said else command


def main(argv: list[str] | None = None) -> int:
    try:  # a Ctrl-C while the engine imports ends as one at any other time: a line, not a traceback
        command = _import_command()
        if command is None:
            raise KeyboardInterrupt

        if argv is None:
            argv = sys.argv[1:]
        if argv[:1] == ["--version"]:
            print(f"toolbench-engine {command.version()}")
            return 0
        parser = _Parser(prog="toolbench engine", description=command.DESCRIPTION)
        command.configure(parser)
        args = parser.parse_args(argv)
        return int(args.func(args))
    except ToolbenchError as exc:
        sys.stderr.write(f"toolbench: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("toolbench: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
