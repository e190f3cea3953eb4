"""The `toolbench` command. The one place where errors are printed and exit codes chosen."""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from pathlib import Path
from typing import Callable, Sequence, TextIO

import toolbench
from toolbench.cli import extras, signals
from toolbench.cli.outputs import json_quiet
from toolbench.cli.scenarios_cmd import scenario_arg
from toolbench.cli.terminal import safe
from toolbench.errors import Interrupted, Notice, ScenarioError, ToolbenchError, UsageError

# Exit codes (README, "Exit codes"): 0 done; 1 an error, said in one line (and a criterion
# not met, toolbench.cli.check_cmd); 2 a usage error (argparse) or a scenario error; 3 cells
# failed; 128 + the signal's number when a run was stopped: 130 Ctrl-C (SIGINT), 143 SIGTERM,
# 129 SIGHUP.
EXIT_ERROR = 1
EXIT_USAGE = 2
MAX_RETRIES = 10  # of a disturbed cell: more would hide a machine that is never quiet


def build_parser() -> argparse.ArgumentParser:
    from toolbench.cli import check_cmd, claims_cmd, commands, examples

    parser = argparse.ArgumentParser(prog="toolbench", description="Load-tool meta-benchmark and result normalizer.",
                                     epilog=examples.TOP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"toolbench {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, epilog=examples.EXAMPLES[name],
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    p = command("run", "run a scenario and render its report")
    p.add_argument("scenario", type=scenario_arg, help="a scenario file, or a bundled scenario's name (toolbench scenarios)")
    p.add_argument("--reports-dir", type=Path, default=Path("reports"), metavar="DIR",
                   help="where run folders land (default: reports/)")
    # Before -o meant "an output file" everywhere, it meant this folder here: still taken, with a note.
    p.add_argument("-o", "--reports", dest="reports_dir_old", type=Path, help=argparse.SUPPRESS)
    json_quiet(p, "a JSON summary of the run on stdout (the run folder, the report, every cell)",
                "no progress and no table: only the report's path, and errors")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue a run, skipping the cells it has")
    p.add_argument("--profile", metavar="NAME", help="apply one of the scenario's `profiles:` (e.g. quick)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (the default when not on a terminal)")
    p.add_argument("--go-on", "--ignore-prerequisites", dest="go_on", action="store_true",
                   help="run even when a required prerequisite is unmet (the manifest says so)")
    p.add_argument("--allow-commands", action="store_true",
                   help="start the programs the scenario gives (a target's command, tool paths, a locustfile: "
                        "`toolbench validate` lists them); without it such a scenario is refused")
    p.add_argument("--known-hosts", type=Path, metavar="FILE",
                   help="SSH known_hosts to check a remote generator's key against, besides ~/.ssh/known_hosts")
    p.add_argument("--trust-new-host-key", action="store_true",
                   help="accept a remote generator's key never seen before, and record it")
    p.add_argument("--no-system-check", action="store_true",
                   help="skip `toolbench system check` before the run (the manifest then has no system findings)")
    p.add_argument("--retry-disturbed", type=retries, default=0, metavar="N",
                   help="run each cell disturbed by other work on the machine again, up to N times, once the "
                        "machine is quiet again (default 0)")
    check_cmd.add_run_arguments(p)
    p.set_defaults(func=commands.run)

    p = command("validate", "check a scenario and show its plan")
    p.add_argument("scenario", type=scenario_arg, help="a scenario file, or a bundled scenario's name (toolbench scenarios)")
    p.add_argument("--profile", metavar="NAME", help="apply one of the scenario's `profiles:`")
    json_quiet(p, "the plan, or every error, as JSON on stdout", "say nothing when the scenario is valid")
    p.set_defaults(func=commands.validate)

    p = command("parse", "normalize existing tool output, running nothing")
    p.add_argument("--tool", help="the tool that wrote the files (default: told from their content)")
    p.add_argument("files", nargs="+", type=Path, metavar="FILE")
    p.add_argument("--format", choices=("json", "csv", "table"), default="json")
    p.add_argument("--merge-runs", action="store_true",
                   help="a file holding several runs (a JTL appended to) gives one merged result, not one per run")
    p.add_argument("--jmeter-subsamples", action="store_true",
                   help="count a JMeter sample's sub-samples (redirect hops, embedded resources) instead of it")
    p.set_defaults(func=commands.parse)

    p = command("tools", "list the load tools found on this machine")
    json_quiet(p, "the tools as JSON on stdout", "only the names of the tools found, one a line")
    p.set_defaults(func=commands.tools)

    p = command("report", "render the report of stored runs")
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR")
    p.add_argument("-o", "--output", type=Path, metavar="FILE", help="the HTML file (default: RUN_DIR/report.html)")
    claims_cmd.add_claims_from(p)
    p.set_defaults(func=commands.report)

    p = command("publish", "render every run in a folder, plus an index page, as a static site")
    p.add_argument("runs_dir", type=Path, metavar="RUNS_DIR")
    p.add_argument("--site", type=Path, metavar="DIR", help="the site's folder (needed unless --with-raw --no-redact, which publish in place)")
    p.add_argument("-o", "--output", dest="site_old", type=Path, help=argparse.SUPPRESS)  # said to be --site now
    p.add_argument("--with-raw", action="store_true", help="copy each run's raw/ folder too (the tools' own output)")
    p.add_argument("--no-redact", dest="redact", action="store_false",
                   help="keep absolute paths and host names in what is copied and rendered")
    p.add_argument("--redact-private-addresses", dest="private_addresses", action="store_true",
                   help="also take out private addresses (RFC 1918, link-local, unique local; loopback stays)")
    p.add_argument("--compare", nargs=2, action="append", default=[], metavar=("RUN_A", "RUN_B"),
                   help="also publish a page comparing two of the runs (folder names); repeat for more")
    p.set_defaults(func=commands.publish)

    for extra in _extra_commands():
        extra(sub)
    return parser


def retries(text: str) -> int:
    """`--retry-disturbed N`: 0 to MAX_RETRIES."""
    if not text.isdigit() or int(text) > MAX_RETRIES:
        raise argparse.ArgumentTypeError(f"expected a count from 0 to {MAX_RETRIES}, got {text!r}")
    return int(text)


def _version() -> str:
    return toolbench.__version__


def _extra_commands() -> list[Callable[[argparse._SubParsersAction], None]]:
    """Subcommands that live with their subsystem (the engine owns its flags)."""
    from toolbench.cli import (check_cmd, claims_cmd, completion, export_cmd, install_cmd, prereq_cmd, scenarios_cmd,
                               setup_cmd, system_cmd)
    from toolbench.engine import command as engine_cmd

    return [prereq_cmd.add_parser, setup_cmd.add_parser, check_cmd.add_parser, claims_cmd.add_parser,
            export_cmd.add_parser, install_cmd.add_parser, scenarios_cmd.add_parser, completion.add_parser,
            engine_cmd.add_parser, system_cmd.add_parser]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("default", Notice)
        warnings.showwarning = _show_notice
        return _call(args)


def _call(args: argparse.Namespace) -> int:
    try:
        try:
            return int(args.func(args) or 0)
        except ModuleNotFoundError as exc:
            extra = extras.missing_extra(exc, args.command)
            if extra is None:
                raise
            raise extra from None
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
    except UsageError as exc:
        _say(f"toolbench: error: {exc}")
        return EXIT_USAGE
    except ScenarioError as exc:
        for problem in getattr(exc, "problems", None) or [str(exc)]:  # a scenario's every error, a line each
            _say(f"toolbench: error: {problem}")
        return EXIT_USAGE
    except ToolbenchError as exc:
        for problem in getattr(exc, "problems", None) or [str(exc)]:  # a scenario's every error, a line each
            _say(f"toolbench: error: {problem}")
        return EXIT_ERROR


def _say(line: str) -> None:
    with contextlib.suppress(OSError):  # a terminal gone with SIGHUP takes no last word
        print(safe(line), file=sys.stderr, flush=True)  # an error may quote a tool's output


def _show_notice(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: TextIO | None = None, line: str | None = None) -> None:
    if issubclass(category, Notice):
        _say(f"toolbench: note: {message}")
    else:
        _say(warnings.formatwarning(message, category, filename, lineno, line).rstrip())


if __name__ == "__main__":
    sys.exit(main())
