"""`hosts.generators`: several machines share a cell's load (toolbench.scenario.hosts)."""
from __future__ import annotations

from pathlib import Path

import pytest

from toolbench.errors import ScenarioError, ScenarioErrors
from toolbench.run import plan
from toolbench.scenario import read as scenario

BASE = """\
name: demo
target: {url: "http://198.18.0.3:80/"}
matrix: {tool: [ab], concurrency: [10]}
hosts:
"""


def load(tmp_path: Path, hosts: str) -> scenario.Scenario:
    path = tmp_path / "s.yaml"
    path.write_text(BASE + hosts)
    return scenario.load(path)


def test_generators_are_read_in_order_with_names_and_weights(tmp_path):
    s = load(tmp_path, """\
  generators:
    - {address: 198.18.0.4, user: root, key: /k, weight: 3}
    - {address: 198.18.0.5, port: 2222, name: second}
    - local
""")
    assert [g.name for g in s.generators] == ["198.18.0.4", "second", "local"]
    assert [g.weight for g in s.generators] == [3.0, 1.0, 1.0]
    assert s.generators[1].host.port == 2222 and s.generators[2].host.is_local
    assert s.scaled_out and s.generator.address == "198.18.0.4"
    assert s.generators_key == "hosts.generators"


def test_one_generator_stays_valid_and_is_not_scaled_out(tmp_path):
    s = load(tmp_path, "  generator: {address: 10.0.0.7}\n")
    assert [g.name for g in s.generators] == ["10.0.0.7"] and not s.scaled_out
    assert load(tmp_path, "  target: local\n").generators[0].host.is_local


@pytest.mark.parametrize("hosts, line, message", [
    ("  generators:\n    - {address: a, colour: red}\n", 6, "hosts.generators[0].colour: unknown key"),
    ("  generators:\n    - {address: a, weight: 0}\n", 6, "hosts.generators[0].weight: expected a positive number"),
    ("  generators:\n    - {address: a, weight: .nan}\n", 6, "weight: expected a positive number"),
    ("  generators:\n    - {address: a}\n    - {address: a}\n", 7, "a second generator named 'a'"),
    ("  generators:\n    - {port: 22}\n", 6, "missing required key 'address'"),
    ("  generators: []\n", 5, "expected at least one generator"),
    ("  generators: [{address: a, name: ../x}]\n", 5, "not a valid name"),
    ("  generator: local\n  generators: [local]\n", 6, "not both"),
    ("  generators: [remote]\n", 5, "expected `local` or a mapping"),
])
def test_bad_generators_name_their_line_and_key(tmp_path, hosts, line, message):
    with pytest.raises(ScenarioErrors) as caught:
        load(tmp_path, hosts)
    said = str(caught.value)
    assert f"s.yaml:{line}:" in said and message in said, said


def test_a_tool_path_on_any_generator_is_for_a_program_an_adapter_runs(tmp_path):
    s = load(tmp_path, """\
  generators:
    - {address: a, tools: {ab: /opt/ab}}
    - {address: b, tools: {abb: /opt/abb}}
""")
    with pytest.raises(ScenarioError, match=r"s.yaml:7: hosts.generators\[1\].tools.abb: no tool runs a program"):
        plan.expand(s)
