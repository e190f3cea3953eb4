"""The programs a scenario would start that the user gave rather than toolbench: a target's
`command`, a program path per host (`hosts.*.tools`), and a file of code a tool runs (an option
of type Path, a locustfile). A scenario is untrusted input, and these are code: `validate` lists
them, and `run` starts none of them unless told to (`--allow-commands`). The bundled stacks and
the tools toolbench installs itself are not listed: toolbench chose what those run."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from toolbench.contract import registry
from toolbench.errors import ScenarioError
from toolbench.scenario.read import Scenario


class CommandsNotAllowed(ScenarioError):
    """A scenario starts a program of its own and the user did not allow it."""


@dataclass(frozen=True)
class Program:
    where: str  # file:line
    key: str  # the scenario key that gives it, e.g. `targets.app.command`
    what: str  # the command line, path or file as given

    def line(self) -> str:
        return f"{self.where}: {self.key}: {self.what}"


def started(scenario: Scenario) -> tuple[Program, ...]:
    """Every user-given program `scenario` would start, in the order of the file's lines."""
    found = []
    for name, spec in scenario.targets.items():
        if spec.command is not None:
            where, _, key = spec.command_at.rpartition(": ")  # a key path has no ": ", a file name may
            found.append(Program(where or spec.where or scenario.source, key or f"targets.{name}.command",
                                 spec.command))
    hosts = [("hosts.generator" if scenario.generators_key == "hosts.generator" else f"hosts.generators[{i}]",
              generator.host) for i, generator in enumerate(scenario.generators)]
    for at, host in (*hosts, ("hosts.target", scenario.target_host)):
        for program, path in host.tools.items():
            key = f"{at}.tools.{program}"
            found.append(Program(scenario.locations.get(key, scenario.source), key, path))
    found.extend(_code_files(scenario))
    return tuple(sorted(found, key=_order))


def refuse_unless_allowed(scenario: Scenario, allow_commands: bool) -> None:
    """Raises CommandsNotAllowed, naming the first such key, unless `allow_commands`."""
    programs = started(scenario)
    if programs and not allow_commands:
        first = programs[0]
        more = f" (and {len(programs) - 1} more: `toolbench validate` lists them)" if len(programs) > 1 else ""
        raise CommandsNotAllowed(f"{first.where}: {first.key}: this scenario starts a program of its own "
                                 f"({first.what!r}){more}; read it, then run with --allow-commands")


def _code_files(scenario: Scenario) -> list[Program]:
    """Options whose value is a file of code the tool runs (type Path: Locust's `locustfile`)."""
    known = registry.adapters()
    found = []
    for name, given in scenario.tools.items():
        adapter = known.get(given.use or name)
        if adapter is None:
            continue  # an unknown tool is plan's error to report
        for key, value in given.values.items():
            if adapter.option_types.get(key) is Path:
                found.append(Program(given.locations.get(key, scenario.source), f"tools.{name}.{key}", str(value)))
    return found


def _order(program: Program) -> tuple[str, int, str]:
    file, _, line = program.where.rpartition(":")
    return (file, int(line), program.key) if line.isdigit() else (program.where, 0, program.key)
