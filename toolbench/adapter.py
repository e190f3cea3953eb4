"""The adapter contract: one small module per load tool implements it.

Building and parsing are pure functions over data; running the command is the
host's job. Core code finds adapters only through the `toolbench.adapters`
entry-point group (see toolbench.registry), never by name."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Protocol

from toolbench import names
from toolbench.errors import AdapterError
from toolbench.schema import Measurement

if TYPE_CHECKING:
    from toolbench.hosts import Host
    from toolbench.plan import Cell


@dataclass(frozen=True)
class Invocation:
    """What to run for one cell: argv, the input files to write first (name ->
    contents, inside the cell's folder) and the output files the tool will write
    (role -> name inside the cell's folder)."""

    argv: list[str]
    files: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Each file is written or fetched as <cell folder>/<name>: a plain name can
        # neither leave that folder nor land in a subfolder.
        for name in [*self.files, *self.outputs.values()]:
            if why := names.problem(name):
                raise AdapterError(f"{self.argv[0] if self.argv else 'adapter'}: input or output file {why}")


@dataclass(frozen=True)
class RawOutput:
    """Everything a tool left behind: its streams, its exit code and its output files."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    files: dict[str, Path] = field(default_factory=dict)  # role -> path
    source: str | None = None  # a label for error messages, e.g. the file parsed


@dataclass(frozen=True)
class Support:
    ok: bool
    reason: str = ""


SUPPORTED = Support(True)


class Adapter(Protocol):
    name: str
    # Keys the scenario may set under `tools: {<name>: {...}}`, with their types.
    option_types: Mapping[str, type]

    def detect(self, host: "Host") -> str | None:
        """The tool's version on this host, or None when it is not installed."""

    def supports(self, cell: "Cell") -> Support:
        """Whether this tool can run the cell as planned, and why not."""

    def build(self, cell: "Cell", workdir: Path) -> Invocation:
        """The command for the cell. Pure: writes nothing."""

    def parse(self, raw: RawOutput) -> Measurement:
        """Reads the tool's output. Pure; raises only toolbench.errors.ParseError."""

    def classify(self, path: Path, text: str) -> str:
        """The role of an existing output file (`stdout`, `csv`, ...), for `toolbench parse`;
        `text` is the head of the file (its first 64 KiB), as a result file may be huge."""


def option(cell: "Cell", key: str, default: Any) -> Any:
    """A tool option from the scenario, or its default."""
    return cell.options.get(key, default)


def group_by_suffix(path: Path, suffixes: tuple[str, ...] = (".stderr.txt",)) -> str:
    """The run a file belongs to, for `toolbench parse`: files that share a name once a
    known ending is taken off (out.txt, out.stderr.txt, out.csv) are one run's output."""
    for suffix in suffixes:
        if path.name.endswith(suffix):
            return str(path.parent / path.name[: -len(suffix)])
    return str(path.parent / path.stem)


def group_of(adapter: Adapter, path: Path) -> str:
    """An adapter whose tool names its files otherwise (Locust's X_stats.csv) says so
    with an optional `group_name(path)`; every other adapter gets group_by_suffix."""
    custom = getattr(adapter, "group_name", None)
    return custom(path) if custom is not None else group_by_suffix(path)


# The head of a file that tells what it is; a result file may be gigabytes.
CLASSIFY_CHARS = 64 * 1024


def raw_from_files(adapter: Adapter, name: str, paths: list[Path]) -> RawOutput:
    """One run's existing output files as the adapter's input: each file's role comes
    from its head (`classify`), the tool's streams are read whole and every other file
    is handed over by path, for the adapter to stream."""
    streams = {"stdout": "", "stderr": ""}
    files: dict[str, Path] = {}
    for path in paths:
        with open(path, errors="replace") as fh:
            head = fh.read(CLASSIFY_CHARS)
        role = "stderr" if path.name.endswith(".stderr.txt") else adapter.classify(path, head)
        if role in streams:
            streams[role] += path.read_text(errors="replace")
        else:
            files[role] = path
    return RawOutput(stdout=streams["stdout"], stderr=streams["stderr"], files=files, source=name)


def version_from_output(host: "Host", argv: list[str], pattern: re.Pattern[str]) -> str | None:
    """The version a tool prints about itself (on either stream), or None when the
    program is not on the host's PATH or says nothing that matches."""
    if host.which(argv[0]) is None:
        return None
    captured = host.capture(argv)
    match = pattern.search(captured.stdout + captured.stderr)
    return match.group(1) if match else None
