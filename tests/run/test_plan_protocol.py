"""The protocol as a matrix dimension: read with the scenario, carried by each cell and its id,
and planned unsupported, with the reason, where the target or the tool does not speak it."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers.scenarios import write
from toolbench.scenario import read as scenario
from toolbench.errors import ScenarioError
from toolbench.run import plan

MATRIX = """\
name: p
target: {target}
matrix: {{tool: [ab, h2load], protocol: [http1, https, h2, h2c]}}
stop: {{duration: 1s}}
"""


def planned(tmp_path: Path, target: str = "{server: nginx-static}") -> dict[str, plan.PlannedCell]:
    cells = plan.expand(scenario.load(write(tmp_path, MATRIX.format(target=target))))
    return {p.cell.id: p for p in cells}


def test_each_protocol_is_a_cell_of_its_own_and_plain_http_keeps_the_old_id(tmp_path: Path) -> None:
    cells = planned(tmp_path)
    assert {p.cell.protocol for p in cells.values()} == {"http1", "https", "h2", "h2c"}
    assert "ab-c10-ka-rep1" in cells  # as every run before the dimension named it: they still resume
    assert {"h2load-c10-ka-h2-rep1", "h2load-c10-ka-h2c-rep1", "ab-c10-ka-https-rep1"} <= set(cells)


def test_a_tool_that_does_not_speak_a_protocol_is_planned_unsupported_with_its_reason(tmp_path: Path) -> None:
    refused = planned(tmp_path)["ab-c10-ka-h2-rep1"].support
    assert not refused.ok and "ab" in refused.reason and "HTTP/2" in refused.reason


def test_a_target_that_does_not_serve_a_protocol_refuses_it_before_the_tool_is_asked(tmp_path: Path) -> None:
    cells = planned(tmp_path, '{url: "http://127.0.0.1:9/"}')
    assert cells["h2load-c10-ka-h2-rep1"].support.reason.endswith("does not serve HTTP/2 over TLS")
    assert cells["h2load-c10-ka-h2c-rep1"].support.reason != cells["h2load-c10-ka-h2-rep1"].support.reason


def test_an_unknown_protocol_is_refused_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, MATRIX.format(target="{server: nginx-static}").replace("h2c]", "h3]"))
    with pytest.raises(ScenarioError, match=r"s\.yaml:3: .*expected one of http1, https, h2, h2c, got 'h3'"):
        scenario.load(path)
