"""What each remote host of a scenario needs before it can run its part: system packages,
a Python virtual environment with Locust or toolbench's engine, JMeter, the prerequisites.
Pure: read from the scenario, the plan and each tool's install as its adapter declares it
(toolbench.contract.recipe, the same that `toolbench install` carries out here); nothing is
asked of any host here."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from toolbench.contract import registry
from toolbench.contract.recipe import Apt, GoModule, Script, Venv, how
from toolbench.run import plan
from toolbench.scenario.read import HostSpec, Prerequisites, Scenario
from toolbench.scenario.targets import NGINX_KINDS


@dataclass(frozen=True)
class Package:
    """A Debian package, present when `program` is on the host's PATH or `probe` exits 0."""

    apt: str
    program: str | None = None
    probe: tuple[str, ...] = ()


# A venv needs `venv` and `ensurepip`, which Debian splits off into python3-venv.
VENV_PACKAGE = Package("python3-venv", probe=("python3", "-c", "import venv, ensurepip"))
NGINX_PACKAGE = Package("nginx", probe=("sh", "-c", "command -v nginx || test -x /usr/sbin/nginx"))
# The engine's imports (and the server sampler's), without the report's and servers' packages.
ENGINE_REQUIREMENTS = ("numpy", "hdrhistogram", "httptools", "uvloop", "psutil", "pyyaml")
# Tools that setup copies from this machine's install (setup_steps.jmeter), not installs there.
COPIED = ("jmeter",)


def tool_packages() -> dict[str, tuple[Package, ...]]:
    """The Debian packages a host needs to run each tool, by the program they put on its PATH:
    the adapter's apt steps, but not those that only install the tool here (maven)."""
    found: dict[str, tuple[Package, ...]] = {}
    for name, adapter in registry.adapters().items():
        packages = tuple(Package(apt, step.program) for step in adapter.install.steps
                         if isinstance(step, Apt) and not step.build_only for apt in step.packages)
        if packages:
            found[name] = packages
    return found


def python_tools() -> tuple[str, ...]:
    """The tools run as `python -m ...` from the venv setup makes (installed with toolbench's
    packages): Locust, the engine."""
    return tuple(name for name, adapter in registry.adapters().items()
                 if any(isinstance(step, Venv) for step in adapter.install.steps))


def why_not() -> dict[str, str]:
    """The tools setup cannot install on a host, each with what to do there instead: those
    toolbench does not install at all, and those built here by `go install` or a script."""
    said: dict[str, str] = {}
    for name, adapter in registry.adapters().items():
        install = adapter.install
        built = next((s for s in install.steps if isinstance(s, (GoModule, Script))), None)
        if install.impossible is not None:
            said[name] = install.impossible
        elif isinstance(built, GoModule):
            said[name] = f"{name} is a Go program: `{how(built)}` there"
        elif isinstance(built, Script) and name not in COPIED:
            said[name] = f"{name} is built by a script ({built.path}): `toolbench install {name}` there"
    return said


@dataclass(frozen=True)
class HostNeeds:
    """Everything one host needs; `roles` says what it is in the scenario (generator, target)."""

    spec: HostSpec
    roles: tuple[str, ...]
    packages: tuple[Package, ...] = ()
    python_tools: tuple[str, ...] = ()  # of python_tools(), installed into one venv
    jmeter: bool = False
    prerequisites: Prerequisites = field(default_factory=Prerequisites)
    cannot: tuple[str, ...] = ()  # tools setup cannot install, each with what to do instead

    @property
    def label(self) -> str:
        return f"{self.spec.user + '@' if self.spec.user else ''}{self.spec.address}:{self.spec.port}"


def generator_specs(scenario: Scenario) -> tuple[HostSpec, ...]:
    """The machines of the scenario's generators (`hosts.generators`, or the one `hosts.generator`)."""
    return tuple(generator.host for generator in scenario.generators)


def of_scenario(scenario: Scenario) -> list[HostNeeds]:
    """The needs of every remote host, one entry per machine (a machine that is both a
    generator and the target needs both); local hosts are scripts/install.sh's job."""
    tools = sorted({planned.cell.tool for planned in plan.expand(scenario)})
    needs: dict[tuple[str, int, str | None], HostNeeds] = {}
    for spec in generator_specs(scenario):
        _add(needs, spec, for_generator(spec, tools, scenario.prerequisites))
    _add(needs, scenario.target_host, for_target(scenario.target_host, scenario))
    return list(needs.values())


def for_generator(spec: HostSpec, tools: Sequence[str], prereqs: Prerequisites) -> HostNeeds:
    by_tool, runs_in_venv, why = tool_packages(), python_tools(), why_not()
    packages = [p for tool in tools if tool not in spec.tools for p in by_tool.get(tool, ())]
    python = tuple(t for t in tools if t in runs_in_venv and "python" not in spec.tools)
    if python:
        packages.append(VENV_PACKAGE)
    cannot = tuple(f"{tool}: {why[tool]}" for tool in tools if tool in why and tool not in spec.tools)
    return HostNeeds(spec, ("generator",), _unique(tuple(packages)), python,
                     jmeter="jmeter" in tools and "jmeter" not in spec.tools, prerequisites=prereqs, cannot=cannot)


def for_target(spec: HostSpec, scenario: Scenario) -> HostNeeds:
    """nginx for the bundled nginx stack; toolbench's sampler (in the venv) for the server's cost."""
    kinds = {target.kind for target in scenario.targets.values() if target.bundled}
    packages = (NGINX_PACKAGE,) if kinds & set(NGINX_KINDS) and "nginx" not in spec.tools else ()
    others = sorted(kinds - set(NGINX_KINDS))
    cannot = tuple(f"the bundled {kind} stack: needs toolbench with its server packages there "
                   f"(scripts/install.sh in a checkout there)" for kind in others)
    python = ("engine",) if kinds and "python" not in spec.tools else ()
    return HostNeeds(spec, ("target",), packages + ((VENV_PACKAGE,) if python else ()), python,
                     prerequisites=scenario.prerequisites, cannot=cannot)


def _add(needs: dict[tuple[str, int, str | None], HostNeeds], spec: HostSpec, more: HostNeeds) -> None:
    if spec.is_local:
        return
    key = (spec.address, spec.port, spec.user)
    have = needs.get(key)
    if have is None:
        needs[key] = more
        return
    needs[key] = HostNeeds(
        have.spec, have.roles + more.roles, _unique(have.packages + more.packages),
        _unique(have.python_tools + more.python_tools), have.jmeter or more.jmeter,
        have.prerequisites, _unique(have.cannot + more.cannot))


def _unique(items: tuple) -> tuple:  # type: ignore[type-arg]
    return tuple(dict.fromkeys(items))
