"""The one exception tree. Library code raises these; only the CLI prints them."""
from __future__ import annotations


class ToolbenchError(Exception):
    """Base of every error toolbench reports to its user."""


class ScenarioError(ToolbenchError):
    """A scenario file is malformed; the message names file:line and the key path."""


class UsageError(ToolbenchError):
    """The command line asks for something that cannot be (a folder where a file is expected)."""


class ScenarioErrors(ScenarioError):
    """Every error found in one scenario file, each `file:line: key: what` (the first is the message)."""

    def __init__(self, problems: list[str]) -> None:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(problems[0] + more)
        self.problems = problems


class ParseError(ToolbenchError):
    """A tool's output could not be understood."""

    def __init__(self, tool: str, message: str, source: str | None = None) -> None:
        where = f" ({source})" if source else ""
        super().__init__(f"{tool}: cannot parse output{where}: {message}")
        self.tool = tool
        self.source = source
        self.detail = message  # what is wrong, without the tool and the source


class AdapterError(ToolbenchError):
    """An adapter built something toolbench refuses to run (e.g. a file name outside its folder)."""

class ParserCrash(ParseError):
    """An adapter's parser failed with something other than a ParseError: a defect of
    the parser, reported on one line as `<tool>: parser crashed: <Type>: <message>`."""

    def __init__(self, tool: str, exc: BaseException) -> None:
        lines = str(exc).strip().splitlines()
        message = lines[0][:300] if lines else ""
        Exception.__init__(self, f"{tool}: parser crashed: {type(exc).__name__}: {message}".rstrip(": "))
        self.tool = tool
        self.source = None
        self.detail = f"parser crashed: {type(exc).__name__}: {message}"


class TargetError(ToolbenchError):
    """The target could not be started or never became ready."""


class HostError(ToolbenchError):
    """A command could not be run on a host."""


class StoreError(ToolbenchError):
    """A run directory is missing or damaged."""


class SchemaError(ToolbenchError):
    """A stored record does not fit the result schema."""


class MissingExtra(ToolbenchError):
    """What a command needs is an optional part of the package that is not installed."""

    def __init__(self, extra: str, module: str, what: str = "this") -> None:
        super().__init__(f"{what} needs toolbench's [{extra}] extra ({module} is not installed): "
                         f"pip install 'toolbench-meta[{extra}]'")
        self.extra = extra


class Interrupted(ToolbenchError):
    """Ctrl-C (or SIGTERM, SIGHUP) during a run: what was measured is on disk."""

    def __init__(self, run_dir: object, by: str | None = None) -> None:
        super().__init__(f"interrupted{f' by {by}' if by else ''}; the cells measured so far are kept in {run_dir}")
        self.run_dir = run_dir
        self.by = by


class Notice(UserWarning):
    """Something the user should know that does not stop the command (a torn last record
    stepped over, leftovers of a killed run stopped); issued with warnings.warn, printed by
    the CLI as one line."""
