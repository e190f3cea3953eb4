"""`python -m toolbench.engine URL ...`: the engine without the rest of the CLI."""
from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from toolbench.engine.interrupt import deferred
from toolbench.errors import ToolbenchError


class _Parser(argparse.ArgumentParser):
    """Bad flags end in one line and exit code 2, like every other toolbench error."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"toolbench: error: {message}\n")
        sys.exit(2)


def main(argv: list[str] | None = None) -> int:
    try:  # a Ctrl-C while the engine imports ends as one at any other time: a line, not a traceback
        with deferred():
            from toolbench.engine import command
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
