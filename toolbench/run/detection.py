"""Each tool of a run looked for on the machine that runs it: on the generator, or on every
generator of a scenario with several (toolbench.run.scaleout.fleet)."""
from __future__ import annotations

from toolbench.contract import registry
from toolbench.contract.adapter import Detection, Missing
from toolbench.contract.host import Host
from toolbench.errors import HostError
from toolbench.run.scaleout import fleet as scaleout
from toolbench.scenario.read import Scenario


def detect_tools(scenario: Scenario, host: Host, tools: set[str],
                 fleet: scaleout.Fleet | None = None) -> dict[str, Detection]:
    """At the path the scenario gives for a tool's program on that host (`hosts.generator.tools`),
    else where it is usually installed. With several generators, on each one reached; a tool
    missing on one is missing for the run, said with that generator's name."""
    if fleet is not None:
        for i, generator in enumerate(fleet.generators):
            if generator.host is not None:
                fleet.found[generator.name] = _detect_on(scenario, generator.host, tools, generator.spec.host.tools,
                                                         f"{scenario.generators_key}[{i}].tools")
        return {tool: fleet.detection(tool) for tool in tools}
    return _detect_on(scenario, host, tools, scenario.generator.tools, "hosts.generator.tools")


def _detect_on(scenario: Scenario, host: Host, tools: set[str], paths: dict[str, str],
               where: str) -> dict[str, Detection]:
    found: dict[str, Detection] = {}
    for tool in sorted(tools):
        adapter = registry.get(tool)
        path = paths.get(adapter.program)
        try:
            detection = adapter.detect(host, path)
        except HostError as exc:  # the host failed (a lost connection), not the tool
            detection = Missing(str(exc))
        if isinstance(detection, Missing) and path is not None:
            key = f"{where}.{adapter.program}"
            detection = Missing(f"{scenario.locations.get(key, scenario.source)}: {key}: {detection.reason}")
        found[tool] = detection
    return found
