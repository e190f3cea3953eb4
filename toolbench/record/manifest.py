"""The manifest of a run: what ran, where, with which tools and targets, and how the run
ended. A typed, versioned record written by the runner as manifest.json and read by the
report only through `Manifest.from_dict`, which migrates older versions (toolbench.record.migrate)."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping

from toolbench.record import codec
from toolbench.record.machine import MachineRecord
from toolbench.record.schema import ClockOffset

MANIFEST_VERSION = 4  # 1: untyped, under "toolbench_manifest"; 2: this record; 3: with its generators;
#                       4: with the machine (toolbench.record.machine)


class RunStatus(str, enum.Enum):
    STARTING = "starting"
    RUNNING = "running"
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


@dataclass(frozen=True)
class ScenarioRecord:
    name: str
    description: str = ""
    source: str | None = None  # the file it was read from
    text: str | None = None  # the scenario as it was given
    profile: str | None = None  # the profile applied (`--profile`), if any
    compare: str = "tools"  # what the scenario compares: tools or targets


@dataclass(frozen=True)
class Environment:
    """The generator host's facts, and how toolbench was started."""

    host: str | None = None  # toolbench's label for it ("local", an SSH host)
    hostname: str | None = None
    cpu_count: int | None = None
    cpu_model: str | None = None
    memory_bytes: int | None = None
    kernel: str | None = None
    os: str | None = None
    python: str | None = None
    argv: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FeatureRecord:
    """One feature of a workload as a tool's adapter declared it (toolbench.contract.workload)."""

    level: str  # honoured | approximated | unsupported
    how: str = ""  # approximated: how; unsupported: why


@dataclass(frozen=True)
class ToolRecord:
    tool: str
    version: str | None = None  # None: not found on the host
    # What its adapter said, when the run was planned, it can express of a workload: each feature
    # (toolbench.scenario.workload.FEATURES) the scenario's workload asks for, or every feature for a
    # scenario that asks which tool fits which purpose. Empty: neither, or a run from before.
    workload: dict[str, FeatureRecord] = field(default_factory=dict)


@dataclass(frozen=True)
class GeneratorRecord:
    """One generator of a run on several (`hosts.generators`): where it is, the tools found
    there, and its clock against toolbench's as measured at the start."""

    name: str
    host: str  # toolbench's label for it: "local", user@address:port
    weight: float = 1.0
    tools: list[ToolRecord] = field(default_factory=list)  # empty when it was not reached
    clock: ClockOffset | None = None  # None: this machine's own clock, or not reached
    error: str | None = None  # why it was not reached at the start


@dataclass(frozen=True)
class Finding:
    """One prerequisite as found against what the scenario wanted (toolbench.hosts.prereq)."""

    kind: str
    key: str
    wanted: str | None
    found: str | None
    ok: bool | None
    required: bool
    host: str
    note: str = ""


@dataclass(frozen=True)
class Prerequisites:
    checked_at: str | None = None
    host: str | None = None
    went_on: bool = False  # the run went on with a required prerequisite unmet
    findings: list[Finding] = field(default_factory=list)


@dataclass(frozen=True)
class Component:
    """One program or library a target is made of, and its version: ("nginx", "1.22.1")."""

    name: str
    version: str


@dataclass(frozen=True)
class TargetRecord:
    label: str
    url: str | None = None
    version: str | None = None
    kind: str | None = None  # nginx-static, command, url, ...; None in manifests of version 1
    name: str | None = None  # the scenario's name for it (cells carry it); None in manifests of version 1
    restart: str | None = None  # once | per-cell
    error: str | None = None  # why it did not start; its cells failed with it
    # What it serves over TLS, by one handshake of toolbench's when it was ready: "TLSv1.3" and the
    # cipher as OpenSSL names it; None: it serves no TLS, the handshake failed, or an older manifest.
    tls_version: str | None = None
    tls_cipher: str | None = None
    # Every component of a target toolbench started, with its version (nginx, uWSGI, gunicorn, gevent,
    # Flask, Werkzeug, Python, as its stack uses them); empty: not known (a command, a URL, a target
    # on another machine, an older manifest).
    components: list[Component] = field(default_factory=list)


@dataclass(frozen=True)
class MonitorSettings:
    enabled: bool = True
    interval_s: float | None = None


@dataclass(frozen=True)
class ProbeSettings:
    enabled: bool = True
    interval_s: float | None = None
    baseline_requests: int | None = None
    timeout_s: float | None = None
    slowdown_factor: float | None = None
    slowdown_floor_ms: float | None = None
    tolerance: float | None = None
    tolerance_ms: float | None = None


@dataclass(frozen=True)
class Observation:
    monitor: MonitorSettings = field(default_factory=MonitorSettings)
    probe: ProbeSettings = field(default_factory=ProbeSettings)


@dataclass(frozen=True)
class Resumed:
    at: str
    stopped_leftovers: list[str] = field(default_factory=list)
    repaired: str | None = None


@dataclass(frozen=True)
class Manifest:
    scenario: ScenarioRecord
    started_at: str | None = None
    ended_at: str | None = None
    status: RunStatus = RunStatus.STARTING
    error: str | None = None
    environment: Environment = field(default_factory=Environment)
    tools: list[ToolRecord] = field(default_factory=list)  # of several generators: as every one has them
    generators: list[GeneratorRecord] = field(default_factory=list)  # empty: one generator, `environment`'s
    prerequisites: Prerequisites | None = None
    targets: list[TargetRecord] = field(default_factory=list)
    observation: Observation = field(default_factory=Observation)
    resumed: list[Resumed] = field(default_factory=list)
    machine: MachineRecord | None = None  # None: recorded before toolbench recorded the machine
    manifest_version: int = MANIFEST_VERSION

    def to_dict(self) -> dict[str, Any]:
        return codec.encode(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Manifest":
        """A manifest of any version toolbench has written, migrated to this one."""
        from toolbench.record import migrate

        return codec.decode(cls, migrate.manifest(data), "manifest")

    def tool_version(self, tool: str) -> str | None:
        return next((t.version for t in self.tools if t.tool == tool), None)
