"""The adapter contract: one small module per load tool implements it.

Building and parsing are pure functions over data; running the command is the
host's job. Core code finds adapters only through the `toolbench.adapters`
entry-point group (see toolbench.contract.registry), never by name."""
from __future__ import annotations

import abc
import enum
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping

from toolbench.contract import toolsdir
from toolbench.contract.recipe import Install
from toolbench.contract.workload import FeatureSupport
from toolbench.errors import AdapterError, HostError
from toolbench.record.schema import Measurement
from toolbench.scenario import names

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.distributed import DistributedTool
    from toolbench.contract.host import Captured, Host
    from toolbench.record.timings import SecondTally


# What the runner itself writes in a cell's folder, beside the tool's files.
RUNNER_FILES = ("stdout.txt", "stderr.txt", "command.txt")


@dataclass(frozen=True)
class Step:
    """A command run after the tool has exited, on the same host and in the same folder,
    before its output is parsed: a converter of a binary results file to text the parser
    reads (`vegeta encode`). argv only, no shell; its stdout is kept as the file `stdout`
    of the cell's folder and handed to parse() as the output of `role`; it is killed after
    `timeout_s`."""

    role: str
    argv: list[str]
    stdout: str
    timeout_s: float = 120.0

    @property
    def stderr(self) -> str:
        return f"{self.role}.stderr.txt"


@dataclass(frozen=True)
class Invocation:
    """What to run for one cell: argv, the input files to write first (name ->
    contents, inside the cell's folder), the output files the tool will write
    (role -> name inside the cell's folder) and the steps run after it, in order."""

    argv: list[str]
    files: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    steps: tuple[Step, ...] = ()

    def __post_init__(self) -> None:
        # Each file is written or fetched as <cell folder>/<name>: a plain name can
        # neither leave that folder nor land in a subfolder.
        step_files = [name for step in self.steps for name in (step.role, step.stdout, step.stderr)]
        for name in [*self.files, *self.outputs.values(), *step_files]:
            if why := names.problem(name):
                raise AdapterError(f"{self.argv[0] if self.argv else 'adapter'}: input or output file {why}")
        taken = set(RUNNER_FILES) & {step.stdout for step in self.steps}
        if taken:
            raise AdapterError(f"{self.argv[0] if self.argv else 'adapter'}: a step may not write {sorted(taken)[0]}, "
                               "the runner's own file")


@dataclass(frozen=True)
class RawOutput:
    """Everything a tool left behind: its streams, its exit code and its output files."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    files: dict[str, Path] = field(default_factory=dict)  # role -> path
    # The steps after the tool (Invocation.steps) that failed: role -> why, in one line.
    # What such a step wrote is in `files` all the same.
    step_errors: dict[str, str] = field(default_factory=dict)
    source: str | None = None  # a label for error messages, e.g. the file parsed
    part: str | None = None  # one of several runs the files hold (Adapter.parts), or all of them
    # How `toolbench parse` was asked to read the files; "jmeter_subsamples": count a JMeter
    # sample's sub-samples instead of it.
    read_options: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Support:
    ok: bool
    reason: str = ""


SUPPORTED = Support(True)

# How a reason names each protocol (toolbench.scenario.read.PROTOCOLS).
PROTOCOL_NAMES = {"http1": "HTTP/1.1 in clear", "https": "HTTP/1.1 over TLS", "h2": "HTTP/2 over TLS",
                  "h2c": "HTTP/2 in clear (prior knowledge)"}


@dataclass(frozen=True)
class Found:
    """A tool as found on the host that will run it: the program to start there (a path
    on that host) and the version it reports. build() puts `path` into the command."""

    path: str
    version: str


@dataclass(frozen=True)
class Missing:
    """Why a tool cannot run on a host, in one line: the tool_missing cell's error."""

    reason: str


Detection = Found | Missing


class Threads(str, enum.Enum):
    """How a tool can use the generator's CPU (toolbench.contract.cores)."""

    ONE = "one thread"  # an event loop on one thread: one core at most
    PER_PROCESS = "one core per process"  # Python's GIL: one core per process, however many greenlets
    ALL = "threads on every core"


class Adapter(abc.ABC):
    """The contract every adapter implements. Core code reads nothing from an adapter
    that is not declared here; the class attributes and the non-abstract methods are the
    optional capabilities, with their defaults.

    Building and parsing are pure: build() writes nothing, parse() reads only what it is
    given and raises nothing but toolbench.errors.ParseError."""

    name: ClassVar[str] = ""  # every adapter sets it; the registry refuses an adapter without one
    # Keys the scenario may set under `tools: {<name>: {...}}`, with their types.
    option_types: ClassVar[Mapping[str, type]] = {}
    # Options whose value must be one of a few, checked with the scenario (file:line).
    option_choices: ClassVar[Mapping[str, tuple[Any, ...]]] = {}
    # Exit codes of a run that can be judged on its counts.
    ok_exit_codes: ClassVar[tuple[int, ...]] = (0,)
    # A tool known to hang now and then at the end of a run is killed at the hard limit
    # and run again, at most this many more times.
    retries_on_hang: ClassVar[int] = 0
    # A tool toolbench only reads (`toolbench parse`) and never runs: supports() turns every
    # cell away with the reason, and build() is never called.
    read_only: ClassVar[bool] = False
    # How the tool uses cores: a tool that used all of what this allows is generator-bound.
    threads: ClassVar[Threads] = Threads.ALL
    # How `toolbench install` installs the tool here, and from it what `toolbench setup` gives a
    # remote host (toolbench.contract.recipe); a tool toolbench does not install says why.
    install: ClassVar[Install] = Install(impossible="toolbench has no install recipe for it: "
                                                    "install it yourself and put it on the PATH")

    # What the tool speaks to a target (toolbench.scenario.read.PROTOCOLS); a cell in any
    # other is planned unsupported, with `protocol_refusals[protocol]` as its reason when given.
    protocols: ClassVar[frozenset[str]] = frozenset({"http1"})
    protocol_refusals: ClassVar[Mapping[str, str]] = {}
    # How the tool treats the target's certificate over TLS, in one sentence ("wrk never checks
    # the server's certificate: …"); a TLS cell of a tool that does not check it carries it as a note.
    TLS_TRUST: ClassVar[str] = ""
    # What of a workload (toolbench.scenario.workload.FEATURES) the tool can express: honoured,
    # approximated (how) or unsupported (why); a feature left out is unsupported
    # (toolbench.contract.workload.support_for).
    workload_features: ClassVar[Mapping[str, FeatureSupport]] = {}

    def protocol_support(self, protocol: str) -> Support:
        """Whether the tool speaks `protocol`, and if not, why: the plan asks this before supports()."""
        if protocol in self.protocols:
            return SUPPORTED
        why = self.protocol_refusals.get(protocol) or f"{self.name} does not speak {PROTOCOL_NAMES[protocol]}"
        return Support(False, why)

    def distributed(self) -> "DistributedTool | None":
        """A tool with a distributed mode of its own (a master and workers) returns how it
        runs a cell on several generators (toolbench.contract.distributed); None: one
        instance of it per generator, started together, their figures merged."""
        return None

    @property
    def program(self) -> str:
        """The executable's name under a scenario's `hosts.<role>.tools`, where its path on
        that host may be set; tools run as `python -m ...` say `python`."""
        return self.name

    @abc.abstractmethod
    def detect(self, host: "Host", path: str | None = None) -> Detection:
        """The tool on this host, looked for where it is usually installed, or at `path`
        (the scenario's path for it on that host) alone. A tool that is absent, or there but
        unable to run, is Missing with the reason; only a failing host raises (HostError)."""

    def supports(self, cell: "Cell") -> Support:
        """Whether this tool can run the cell as planned, and why not."""
        return SUPPORTED

    @abc.abstractmethod
    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        """The command for the cell, starting `found.path`. Pure: writes nothing."""

    @abc.abstractmethod
    def parse(self, raw: RawOutput) -> Measurement:
        """Reads the tool's output. Pure; raises only toolbench.errors.ParseError."""

    def ramp_s(self, cell: "Cell") -> float:
        """How long, from its first request, the tool takes to reach its steady rate in this
        cell (a JVM's JIT, users spawned over time): a cell measured over a few times this
        or less understates the tool's rate (toolbench.contract.ramp). 0: none worth saying."""
        return 0.0

    def timings(self, raw: RawOutput) -> "SecondTally | None":
        """Per-request times by the second each request started in, for percentiles over
        time. None when the tool gives no per-request timings with their second, or this
        output lacks the file that holds them. Reads only what it is given; raises only
        toolbench.errors.ParseError."""
        return None

    def classify(self, path: Path, text: str) -> str:
        """The role of an existing output file (`stdout`, `csv`, ...), for `toolbench parse`;
        `text` is the head of the file (its first 64 KiB), as a result file may be huge."""
        return "stdout"

    def parts(self, raw: RawOutput) -> list[str]:
        """The runs one output holds, when it holds several (a log appended to run after run),
        for `toolbench parse`: each is read alone as `raw` with `part` set to its name. Names
        are plain words (run1, run2...). Empty: the output is one run. Raises only ParseError."""
        return []

    def recognizes(self, path: Path, text: str) -> bool:
        """Whether a file is this tool's output, from its head (as for classify), for
        `toolbench parse` without --tool. Only a file that no other tool writes is to be
        claimed: a companion (a stderr, a test plan) joins the run of a claimed file."""
        return False

    def unread_form(self, path: Path, text: str) -> str | None:
        """What a file is, when it is this tool's output in a form toolbench does not read
        (from its head, as for recognizes): one line naming the form and what to give
        instead, such as "a k6 end-of-test summary (text), which toolbench cannot read:
        give k6's --summary-export JSON". None: not a form of this tool's it knows."""
        return None

    def group_name(self, path: Path) -> str:
        """The run a file belongs to, for `toolbench parse` (see group_by_suffix)."""
        return group_by_suffix(path)


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


def found_by_version(host: "Host", program: str, args: list[str], pattern: re.Pattern[str]) -> Detection:
    """A tool that prints its version when asked (on either stream): `program` is a name
    looked up on the host's PATH or a path on that host."""
    path = host.which(program)
    if path is None:
        return missing_program(host, program)
    try:
        captured = host.capture([path, *args])
    except HostError as exc:
        return Missing(str(exc))
    match = pattern.search(captured.stdout + captured.stderr)
    if match is None:
        said = (captured.stdout.strip() or captured.stderr.strip()).splitlines()[-1:] or ["nothing"]
        return Missing(f"{host.label}: {shlex.join([path, *args])} names no version (exit "
                       f"{captured.exit_code}): {said[0][:200]}")
    return Found(path, match.group(1))


def found_go_tool(host: "Host", path: str | None, name: str, args: list[str], pattern: re.Pattern[str]) -> Detection:
    """A tool `toolbench install` builds with `go install` into <tools>/go/<name>-<version>/
    (toolsdir.newest), else `name` on the PATH, or the scenario's `path` alone. Its version is
    what it prints when asked (`pattern`'s first group); `go install` leaves that unset
    ("unspecified", empty), and then the folder's name says it."""
    candidates = [path] if path else toolsdir.newest("go", name, name) + [name]
    where = next(filter(None, map(host.which, candidates)), None)
    if where is None:
        return missing_program(host, path or name)
    found = found_by_version(host, where, args, pattern)
    if isinstance(found, Missing):
        return found
    version = found.version.lstrip("v")
    folder = re.search(rf"{re.escape(name)}-(\d+\.\d+[\w.]*)$", str(Path(where).parent))
    if not version[:1].isdigit() and folder:
        version = folder.group(1)
    return Found(found.path, version or "unknown")


def missing_program(host: "Host", program: str) -> Missing:
    if program.startswith("/"):
        return Missing(f"{host.label}: {program}: no such executable")
    return Missing(f"{program} is not installed on {host.label} (not on its PATH)")


def found_python(host: "Host", path: str | None, module: str,
                 version_of: Callable[["Captured"], str | None]) -> Detection:
    """A tool run as `python -m <module>`: the first Python on the host whose module answers
    `--version`. Without a path from the scenario, the interpreter running toolbench is tried
    first (a host set up like this one has it at the same place), then python3 on the PATH."""
    reasons = []
    for candidate in [path] if path else [sys.executable, "python3"]:
        exe = host.which(candidate)
        if exe is None:
            reasons.append(missing_program(host, candidate).reason)
            continue
        try:
            captured = host.capture([exe, "-m", module, "--version"], timeout_s=30.0)
        except HostError as exc:
            reasons.append(str(exc))
            continue
        version = version_of(captured)
        if version is not None:
            return Found(exe, version)
        said = (captured.stderr.strip() or captured.stdout.strip()).splitlines()[-1:] or ["no output"]
        reasons.append(f"{exe} -m {module} --version: {said[0][:200]}")
    return Missing(f"no Python with {module} on {host.label}: {'; '.join(reasons)}")
