"""Scenario files, parsed once at the boundary into typed, frozen objects."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from toolbench.errors import ScenarioError, ScenarioErrors
from toolbench.scenario import claims as scenario_claims
from toolbench.scenario import hosts as scenario_hosts
from toolbench.scenario import names, profiles, sysctls, yamlread
from toolbench.scenario.claims import Claim
from toolbench.scenario.criteria.spec import Criterion
from toolbench.scenario.criteria.spec import from_node as criteria_from_node
from toolbench.scenario.hosts import TARGET_PROGRAMS, GeneratorSpec, Hosts, HostSpec
from toolbench.scenario.method import METHOD_KEYS, MethodSpec, PlacementSpec, parse_method, parse_placement
from toolbench.scenario.observation import MonitorSpec, ProbeSpec, parse_monitor, parse_probe
from toolbench.scenario.request import RequestSpec, parse_request
from toolbench.scenario.targets import TargetSpec, parse_target
from toolbench.scenario.workload import Workload
from toolbench.scenario.yamlread import Node, attempt

__all__ = ["TARGET_PROGRAMS", "GeneratorSpec", "HostSpec", "Scenario", "load"]

TOP_KEYS = ("name", "description", "hosts", "prerequisites", "target", "targets", "request", "matrix",
            "stop", "timeout", "repeat", "cooldown", "warmup", "probe", "monitor", "tools", "compare", "profiles",
            "criteria", "claims", "missing_tools", "placement", "workload", *METHOD_KEYS)
# The question a scenario asks: which tool, which target, or which tool for which purpose.
COMPARES = ("tools", "targets", "purposes")
# A tool not installed: its cells fail the run (`fail`), or are skipped with the reason (`skip`,
# for a scenario that runs whichever of many tools a machine has).
MISSING_TOOLS = ("fail", "skip")


@dataclass(frozen=True)
class Prerequisites:
    ulimit: dict[str, int] = field(default_factory=dict)
    sysctl: dict[str, str] = field(default_factory=dict)
    required: bool = True  # when unmet, `toolbench run` refuses to start unless told to go on


@dataclass(frozen=True)
class StopSpec:
    """Exactly one of: a duration, a total request count, or a count per connection
    (siege's `-r`: each of the `concurrency` connections sends that many)."""

    duration_s: float | None = None
    requests: int | None = None
    requests_per_connection: int | None = None

    def total_requests(self, concurrency: int) -> int | None:
        """The request count for a tool that counts in total: `requests`, or
        `requests_per_connection` for each of `concurrency` connections."""
        if self.requests_per_connection is not None:
            return self.requests_per_connection * concurrency
        return self.requests


# HTTP/1.1 in clear, HTTP/1.1 over TLS, HTTP/2 over TLS (ALPN), HTTP/2 in clear with prior knowledge.
PROTOCOLS = ("http1", "https", "h2", "h2c")


@dataclass(frozen=True)
class Matrix:
    tool: tuple[str, ...]
    target: tuple[str, ...] = ()  # names in `Scenario.targets`, all of them when not given ((): all too)
    concurrency: tuple[int, ...] = (10,)
    keepalive: tuple[bool, ...] = (True,)
    rate: tuple[float | None, ...] = (None,)  # requests/s for an open model; None: closed
    protocol: tuple[str, ...] = ("http1",)  # toolbench.contract.cell.PROTOCOLS


@dataclass(frozen=True)
class ToolOptions:
    values: dict[str, Any]
    locations: dict[str, str]  # option key -> "file:line", for errors found later
    use: str | None = None  # set for a variant: the tool it configures (`locust-2p: {use: locust, ...}`)
    warmup_s: float | None = None  # this tool's or variant's own `warmup`, over the scenario's


@dataclass(frozen=True)
class Scenario:
    name: str
    source: str
    targets: dict[str, TargetSpec]  # by name, in the file's order; a single `target:` is a one-entry map
    matrix: Matrix
    description: str = ""
    generators: tuple[GeneratorSpec, ...] = Hosts().generators  # one, or several that share each cell's load
    target_host: HostSpec = field(default_factory=HostSpec)
    generators_key: str = "hosts.generator"  # where the file gave them, for messages
    prerequisites: Prerequisites = field(default_factory=Prerequisites)
    request: RequestSpec = field(default_factory=RequestSpec)
    stop: StopSpec = field(default_factory=lambda: StopSpec(duration_s=10.0))
    timeout_s: float | None = None  # hard limit per cell; derived from `stop` when absent
    repeat: int = 1
    cooldown_s: float = 0.0
    warmup_s: float = 0.0  # an unmeasured run of the cell's tool before each cell; 0: none
    probe: ProbeSpec = field(default_factory=ProbeSpec)
    monitor: MonitorSpec = field(default_factory=MonitorSpec)
    tools: dict[str, ToolOptions] = field(default_factory=dict)
    locations: dict[str, str] = field(default_factory=dict)  # key path -> "file:line"
    raw_text: str = ""
    compare: str = "tools"
    profile: str | None = None  # the profile applied, if any
    profiles: tuple[str, ...] = ()  # every profile the file declares
    criteria: tuple[Criterion, ...] = ()  # pass/fail criteria (toolbench.scenario.criteria)
    claims: tuple[Claim, ...] = ()  # a study's claims, checked in the report (toolbench.scenario.claims)
    missing_tools: str = "fail"  # one of MISSING_TOOLS
    placement: PlacementSpec = field(default_factory=PlacementSpec)
    method: MethodSpec = field(default_factory=MethodSpec)
    # Several named requests, data, think time, checks, stages (toolbench.scenario.workload_read);
    # with one, `request` is its first request, and its stages set the matrix's load and `stop`.
    workload: Workload | None = None

    @property
    def generator(self) -> HostSpec:
        """The generator of a scenario with one; the first of several."""
        return self.generators[0].host

    @property
    def scaled_out(self) -> bool:
        return len(self.generators) > 1

    def cell_timeout_s(self) -> float:
        """A hard limit that a healthy run never reaches."""
        if self.timeout_s is not None:
            return self.timeout_s
        if self.stop.duration_s is not None:
            return self.stop.duration_s * 2 + 30
        return 300.0


def load(path: str | Path, profile: str | None = None) -> Scenario:
    """The scenario in `path`, with `profile`'s overrides when given. Every declared profile
    is checked, not only the one asked for, so a broken profile fails validation."""
    path = Path(path)
    with yamlread.collecting() as errors:
        try:
            root = yamlread.load(path)
            top = root.items(TOP_KEYS)
            declared = profiles.declared(top, TOP_KEYS)
            loaded = _parse(path, root, top, None, tuple(declared))
            # A profile that runs fewer tools leaves the claims on the others not measured: its
            # claims and criteria may name every tool of the scenario's own matrix.
            named = loaded.matrix.tool if loaded.matrix is not None else ()
            parsed = {name: _parse(path, root, profiles.merged(top, declared, name, str(path)), name,
                                   tuple(declared), named) for name in declared}
            if profile is not None:  # one not declared: merged() says so
                loaded = parsed.get(profile) or _parse(path, root, profiles.merged(top, declared, profile, str(path)),
                                                       profile, tuple(declared), named)
        except ScenarioError as exc:  # one that reading cannot step over ends it, after those found before
            errors.append(exc)
    if errors:
        raise ScenarioErrors(yamlread.in_file_order(errors))
    return loaded


def _parse(path: Path, root: Node, top: dict[str, Node], profile: str | None,
           declared: tuple[str, ...], named: tuple[str, ...] = ()) -> Scenario:
    for required in ("name", "matrix"):
        if required not in top:
            yamlread.soft(root.error(f"missing required key {required!r}"))
    locations: dict[str, str] = {}
    # Each key is read on its own: while collecting, a bad one is noted and the others still read.
    targets = attempt(lambda: _targets(root, top), None)
    hosts = attempt(lambda: scenario_hosts.parse(top["hosts"], locations), Hosts()) if "hosts" in top else Hosts()

    def key(name: str, read: Callable[[Node], Any], default: Any) -> Any:
        return attempt(lambda: read(top[name]), default) if name in top else default

    matrix = key("matrix", lambda node: _matrix(node, locations, targets), None)
    workload, matrix, stop = _workload(path, top, matrix, targets)
    labels = {name: spec.display for name, spec in (targets or {}).items()}
    tools = tuple(dict.fromkeys((*matrix.tool, *named))) if matrix is not None else ()
    return Scenario(
        name=key("name", Node.name, ""),
        source=str(path),
        description=key("description", Node.string, ""),
        generators=hosts.generators,
        target_host=hosts.target,
        generators_key=hosts.key,
        prerequisites=key("prerequisites", _prerequisites, Prerequisites()),
        targets=targets or {},
        request=_first_request(workload) if workload else key("request", parse_request, RequestSpec()),
        matrix=matrix,
        stop=stop,
        timeout_s=key("timeout", Node.duration_s, None),
        repeat=key("repeat", lambda node: node.positive_int(yamlread.MAX_REPEAT), 1),
        cooldown_s=key("cooldown", Node.duration_s, 0.0),
        warmup_s=key("warmup", _warmup, 0.0),
        probe=key("probe", parse_probe, ProbeSpec()),
        monitor=key("monitor", parse_monitor, MonitorSpec()),
        tools=key("tools", _tools, {}),
        locations=locations,
        raw_text=path.read_text(encoding="utf-8"),
        compare=key("compare", lambda node: node.choice(COMPARES), "tools"),
        missing_tools=key("missing_tools", lambda node: node.choice(MISSING_TOOLS), "fail"),
        placement=key("placement", lambda node: parse_placement(node, locations), PlacementSpec()),
        method=attempt(lambda: parse_method({k: top[k] for k in METHOD_KEYS if k in top}), MethodSpec()),
        profile=profile,
        profiles=declared,
        # Both name a target as the scenario does and select it as its results carry it: its label.
        criteria=key("criteria", lambda node: criteria_from_node(node, tools, labels), ())
        if matrix is not None else (),
        claims=key("claims", lambda node: scenario_claims.from_node(node, tools, labels), ())
        if matrix is not None else (),
        workload=workload,
    )


def _workload(path: Path, top: dict[str, Node], matrix: Matrix | None,
              targets: dict[str, TargetSpec] | None) -> tuple[Workload | None, Matrix | None, StopSpec]:
    """`workload:` (exclusive with `request:`), and the matrix and stop once its stages set them."""
    from toolbench.scenario import workload_read  # it reads Matrix and StopSpec from here

    default = StopSpec(duration_s=10.0)
    stop = attempt(lambda: _stop(top["stop"]), default) if "stop" in top else default
    if "workload" not in top:
        return None, matrix, stop
    if "request" in top:
        yamlread.soft(top["workload"].error("give either `request` or `workload`, not both"))
    workload = attempt(lambda: workload_read.parse(top["workload"], path.parent), None)
    workload_read.no_target_paths(top, targets or {})
    if workload is not None and workload.stages:
        matrix, stop = workload_read.staged(workload, top, matrix)
    return workload, matrix, stop


def _first_request(workload: Workload) -> RequestSpec:
    from toolbench.scenario import workload_read

    return workload_read.first_request(workload)


def _prerequisites(node: Node) -> Prerequisites:
    keys = node.items(("ulimit", "sysctl", "required"))
    ulimit = {}
    if "ulimit" in keys:
        ulimit = {k: v.positive_int() for k, v in keys["ulimit"].items(("nofile", "nproc")).items()}
    sysctl = _sysctl(keys["sysctl"]) if "sysctl" in keys else {}
    required = keys["required"].boolean() if "required" in keys else True
    return Prerequisites(ulimit=ulimit, sysctl=sysctl, required=required)


def _sysctl(node: Node) -> dict[str, str]:
    """Only what a load test needs (toolbench.scenario.sysctls): `prereq apply` and `setup` set
    these as root. Each refused key is its own error, and the others still read."""
    found = {}
    for key, child in node.items().items():
        value = str(child.scalar())
        if why := sysctls.key_problem(key) or sysctls.value_problem(value):
            yamlread.soft(child.error(why))
            continue
        found[key] = value
    return found


def _targets(root: Node, top: dict[str, Node]) -> dict[str, TargetSpec]:
    """`targets:` maps names to targets; a single `target:` becomes a one-entry map named by
    its label when that is a valid name, else by its kind (`nginx-static`, `command`, `url`)."""
    if "target" in top and "targets" in top:
        raise top["targets"].error("give either `target` or `targets`, not both")
    if "target" in top:
        spec = parse_target(top["target"])
        name = spec.label if spec.label is not None and names.problem(spec.label) is None else spec.kind
        return {name: dataclasses.replace(spec, name=name)}
    if "targets" not in top:
        raise root.error("missing required key 'target' (or 'targets', a map of named targets)")
    entries = top["targets"].items()
    if not entries:
        raise top["targets"].error("expected at least one named target")
    return {name: parse_target(child, name) for name, child in entries.items()}


def _axis(node: Node, read: Any, locations: dict[str, str]) -> tuple[Any, ...]:
    children = list(node.elements()) if node.is_sequence() else [node]
    if not children:
        raise node.error("expected at least one value")
    for child in children:
        locations[child.path] = f"{child.file}:{child.line}"
    return tuple(attempt(lambda c=child: read(c), None) for child in children)


def _matrix(node: Node, locations: dict[str, str], targets: dict[str, TargetSpec] | None) -> Matrix:
    """`targets` is None when they did not read: target names are then not checked against them."""
    keys = node.items(("tool", "target", "concurrency", "keepalive", "rate", "protocol"))
    if "tool" not in keys:
        raise node.error("missing required key 'tool'")

    def known_target(child: Node) -> str:
        name = child.name()
        if targets is not None and name not in targets:
            raise child.error(f"unknown target {name!r} (known: {', '.join(targets)})")
        return name

    return Matrix(
        tool=_axis(keys["tool"], Node.name, locations),
        target=_axis(keys["target"], known_target, locations) if "target" in keys else tuple(targets or ()),
        concurrency=_axis(keys["concurrency"], lambda child: child.positive_int(yamlread.MAX_CONCURRENCY), locations)
        if "concurrency" in keys else (10,),
        keepalive=_axis(keys["keepalive"], Node.boolean, locations) if "keepalive" in keys else (True,),
        rate=_axis(keys["rate"], _rate, locations) if "rate" in keys else (None,),
        protocol=_axis(keys["protocol"], lambda child: child.choice(PROTOCOLS), locations)
        if "protocol" in keys else ("http1",),
    )


def _rate(node: Node) -> float | None:
    if node.is_null():
        return None
    value = node.number(yamlread.MAX_RATE)
    if value <= 0:
        raise node.error("expected a positive rate in requests/s")
    return value


def _stop(node: Node) -> StopSpec:
    keys = node.items(("duration", "requests", "requests_per_connection"))
    if len(keys) != 1:
        raise node.error("give exactly one of `duration`, `requests` or `requests_per_connection`")
    if "duration" in keys:
        duration = keys["duration"].duration_s()
        if duration <= 0:
            raise keys["duration"].error("expected a positive duration")
        return StopSpec(duration_s=duration)
    if "requests" in keys:
        return StopSpec(requests=keys["requests"].positive_int())
    return StopSpec(requests_per_connection=keys["requests_per_connection"].positive_int())


# A warm-up longer than this is a typo (`warmup: 2m` meant as 2 s): it would hold every cell.
MAX_WARMUP_S = 600.0


def _warmup(node: Node) -> float:
    """`warmup: 2s`: the cell's tool runs that long, unmeasured, before the cell; 0 or `none`
    runs no warm-up (a profile or a variant turning the scenario's off)."""
    if node.is_null() or node.scalar() == "none":
        return 0.0
    value = node.duration_s()
    if value > MAX_WARMUP_S:
        raise node.error(f"expected a warm-up of at most {MAX_WARMUP_S:g}s, got {value:g}s")
    return value


def _tools(node: Node) -> dict[str, ToolOptions]:
    tools = {}
    for tool, child in node.items().items():
        if why := names.problem(tool):  # a variant's name becomes a folder and a cell id
            yamlread.soft(child.error(why))
            continue
        options = attempt(child.items, None)
        if options is None:
            continue
        use = options.pop("use").name() if "use" in options else None
        warmup = attempt(lambda node=options.pop("warmup"): _warmup(node), None) if "warmup" in options else None
        tools[tool] = ToolOptions(
            values={k: v.scalar() for k, v in options.items()},
            locations={k: f"{v.file}:{v.line}" for k, v in options.items()}
            | {"": f"{child.file}:{child.line}"},
            use=use,
            warmup_s=warmup,
        )
    return tools
