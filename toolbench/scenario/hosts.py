"""The `hosts` part of a scenario: where the target runs, and the generators (one,
`hosts.generator`, or several, `hosts.generators`), parsed into typed objects."""
from __future__ import annotations

from dataclasses import dataclass, field

from toolbench.scenario import names, yamlread
from toolbench.scenario.yamlread import Node

# The programs the bundled stacks run on a target host, whose paths `hosts.target.tools` may give.
TARGET_PROGRAMS = ("python", "nginx", "uwsgi")
_HOST_KEYS = ("address", "port", "user", "key", "tools")


@dataclass(frozen=True)
class HostSpec:
    """`local`, or a machine reached over SSH; `tools` sets where a program is on that
    machine (program -> absolute path there), for a host laid out unlike this one."""

    address: str = "local"
    port: int = 22
    user: str | None = None
    key: str | None = None
    tools: dict[str, str] = field(default_factory=dict)

    @property
    def is_local(self) -> bool:
        return self.address == "local"


@dataclass(frozen=True)
class GeneratorSpec:
    """One machine a cell's load comes from. `name` names its part of a cell's result (and
    its folder, raw/<cell>/gen-<name>); `weight` its share of the cell's concurrency or rate."""

    name: str
    host: HostSpec
    weight: float = 1.0


@dataclass(frozen=True)
class Hosts:
    generators: tuple[GeneratorSpec, ...] = (GeneratorSpec("local", HostSpec()),)
    target: HostSpec = field(default_factory=HostSpec)
    key: str = "hosts.generator"  # the key the generators were given under, for messages


def parse(node: Node, locations: dict[str, str]) -> Hosts:
    keys = node.items(("generator", "generators", "target"))
    if "generator" in keys and "generators" in keys:
        raise keys["generators"].error("give either `generator` (one) or `generators` (a list), not both")
    target = _host(keys["target"], locations, TARGET_PROGRAMS) if "target" in keys else HostSpec()
    if "generators" in keys:
        return Hosts(_generators(keys["generators"], locations), target, "hosts.generators")
    if "generator" in keys:
        host = _host(keys["generator"], locations, None)
        return Hosts((GeneratorSpec(_default_name(host), host),), target)
    return Hosts(target=target)


def _generators(node: Node, locations: dict[str, str]) -> tuple[GeneratorSpec, ...]:
    found: list[GeneratorSpec] = []
    for child in node.elements():
        spec = yamlread.attempt(lambda: _generator(child, locations), None)
        if spec is None:
            continue
        if any(spec.name == other.name for other in found):
            yamlread.soft(child.error(f"a second generator named {spec.name!r}: give each a `name` of its own"))
            continue
        found.append(spec)
    if not found:
        raise node.error("expected at least one generator")
    return tuple(found)


MAX_WEIGHT = 1e6  # a generator's share relative to the others': NaN compares false and is refused


def _generator(node: Node, locations: dict[str, str]) -> GeneratorSpec:
    """`local`, or a host's mapping with an optional `name` and `weight`."""
    if not node.is_mapping():
        host = _host(node, locations, None)
        return GeneratorSpec(_default_name(host), host)
    keys = node.items((*_HOST_KEYS, "name", "weight"))
    weight = keys["weight"].scalar() if "weight" in keys else 1.0
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight <= MAX_WEIGHT:
        raise keys["weight"].error(f"expected a positive number of at most {MAX_WEIGHT:g}, got {weight!r}")
    weight = float(weight)
    host = _host_from(node, {k: v for k, v in keys.items() if k in _HOST_KEYS}, locations, None)
    name = keys["name"].name() if "name" in keys else _default_name(host)
    if names.problem(name):
        raise node.error(f"the address {host.address!r} cannot name this generator's results: give it a `name`")
    return GeneratorSpec(name, host, weight)


def _default_name(host: HostSpec) -> str:
    return host.address if host.port == 22 else f"{host.address}-{host.port}"


def _host(node: Node, locations: dict[str, str], allowed: tuple[str, ...] | None) -> HostSpec:
    if not node.is_mapping():
        if node.string() != "local":
            raise node.error("expected `local` or a mapping with address, port, user, key")
        return HostSpec()
    return _host_from(node, node.items(_HOST_KEYS), locations, allowed)


def _host_from(node: Node, keys: dict[str, Node], locations: dict[str, str],
               allowed: tuple[str, ...] | None) -> HostSpec:
    if "address" not in keys:
        raise node.error("missing required key 'address'")
    return HostSpec(
        address=keys["address"].string(),
        port=keys["port"].positive_int(65535) if "port" in keys else 22,
        user=keys["user"].string() if "user" in keys else None,
        key=keys["key"].string() if "key" in keys else None,
        tools=_tool_paths(keys["tools"], locations, allowed) if "tools" in keys else {},
    )


def _tool_paths(node: Node, locations: dict[str, str], allowed: tuple[str, ...] | None = None) -> dict[str, str]:
    """`{jmeter: /opt/jmeter/bin/jmeter, python: /usr/bin/python3}`: paths on that host,
    passed to it as one argument each, never through a shell. On the generator, whether a
    program name is one an adapter runs is checked with the adapters (toolbench.run.plan); on the
    target host, the programs are those the bundled stacks run (`allowed`)."""
    paths = {}
    for program, child in node.items(allowed).items():
        if why := names.problem(program):
            raise child.error(why)
        path = child.string()
        if not path.startswith("/") or not path.isprintable() or len(path) > 4096:
            raise child.error(f"expected an absolute path on that host (starting with /, printable, "
                              f"at most 4096 characters), got {path!r}")
        paths[program] = path
        locations[child.path] = f"{child.file}:{child.line}"
    return paths
