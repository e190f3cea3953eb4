"""The `toolbench` command. The one place where errors are printed and exit codes chosen."""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from pathlib import Path
from typing import Callable, Sequence, TextIO

from toolbench.cli import signals
from toolbench.errors import Interrupted, Notice, ToolbenchError

# Exit codes (README, "Run a scenario"): 0 done; 1 an error, said in one line; 2 a usage
# error (argparse); 128 + the signal's number when a run was stopped: 130 Ctrl-C (SIGINT),
# 143 SIGTERM, 129 SIGHUP.
EXIT_ERROR = 1


def build_parser() -> argparse.ArgumentParser:
    from toolbench.cli import commands

    parser = argparse.ArgumentParser(prog="toolbench", description="Load-tool meta-benchmark and result normalizer.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("run", help="run a scenario and render its report")
    p.add_argument("scenario", type=Path)
    p.add_argument("-o", "--reports", type=Path, default=Path("reports"), help="where run folders land (default: reports/)")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue a run, skipping the cells it has")
    p.add_argument("--profile", metavar="NAME", help="apply one of the scenario's `profiles:` (e.g. quick)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (the default when not on a terminal)")
    p.add_argument("--go-on", "--ignore-prerequisites", dest="go_on", action="store_true",
                   help="run even when a required prerequisite is unmet (the manifest says so)")
    p.add_argument("--known-hosts", type=Path, metavar="FILE",
                   help="SSH known_hosts to check a remote generator's key against, besides ~/.ssh/known_hosts")
    p.add_argument("--trust-new-host-key", action="store_true",
                   help="accept a remote generator's key never seen before, and record it")
    p.set_defaults(func=commands.run)

    p = sub.add_parser("validate", help="check a scenario and show its plan")
    p.add_argument("scenario", type=Path)
    p.add_argument("--profile", metavar="NAME", help="apply one of the scenario's `profiles:`")
    p.set_defaults(func=commands.validate)

    p = sub.add_parser("parse", help="normalize existing tool output, running nothing")
    p.add_argument("--tool", help="the tool that wrote the files (default: told from their content)")
    p.add_argument("files", nargs="+", type=Path, metavar="FILE")
    p.add_argument("--format", choices=("json", "csv", "table"), default="json")
    p.set_defaults(func=commands.parse)

    p = sub.add_parser("tools", help="list the load tools found on this machine")
    p.set_defaults(func=commands.tools)

    p = sub.add_parser("report", help="render the report of stored runs")
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR")
    p.add_argument("-o", "--output", type=Path, help="the HTML file (default: RUN_DIR/report.html)")
    p.set_defaults(func=commands.report)

    p = sub.add_parser("publish", help="render every run in a folder, plus an index page, as a static site")
    p.add_argument("runs_dir", type=Path, metavar="RUNS_DIR")
    p.add_argument("-o", "--output", type=Path, metavar="SITE", help="the site's folder (default: RUNS_DIR itself)")
    p.set_defaults(func=commands.publish)

    for extra in _extra_commands():
        extra(sub)
    return parser


def _extra_commands() -> list[Callable[[argparse._SubParsersAction], None]]:
    """Subcommands that live with their subsystem (the engine owns its flags)."""
    from toolbench.cli import prereq_cmd

    found = [prereq_cmd.add_parser]
    try:
        from toolbench.engine.command import add_parser
    except ImportError:
        pass
    else:
        found.append(add_parser)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("default", Notice)
        warnings.showwarning = _show_notice
        return _call(args)


def _call(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # The reader went away (`toolbench parse ... | head`): nothing is left to say, and
        # Python's own flush at exit must not fail on the closed pipe either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt as exc:
        _say("toolbench: interrupted")
        return signals.exit_code(str(exc.args[0]) if exc.args else None)
    except Interrupted as exc:
        _say(f"toolbench: {exc}")
        return signals.exit_code(exc.by)
    except ToolbenchError as exc:
        _say(f"toolbench: error: {exc}")
        return EXIT_ERROR


def _say(line: str) -> None:
    with contextlib.suppress(OSError):  # a terminal gone with SIGHUP takes no last word
        print(line, file=sys.stderr, flush=True)


def _show_notice(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: TextIO | None = None, line: str | None = None) -> None:
    if issubclass(category, Notice):
        _say(f"toolbench: note: {message}")
    else:
        _say(warnings.formatwarning(message, category, filename, lineno, line).rstrip())


if __name__ == "__main__":
    sys.exit(main())
