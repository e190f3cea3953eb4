"""scenarios/choose-a-tool.yaml: it validates, its tools not installed are skipped with the
reason (not failed), and its report's "Which tool for which purpose" paragraph is made from
the measured figures of a stored run (tests/fixtures/runs/choose-a-tool), ties said as ties."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from toolbench import installs, plan, registry, scenario, store
from toolbench.cli.main import main
from toolbench.errors import ScenarioError
from toolbench.report import choice, model, render
from toolbench.report.context import Context
from toolbench.schema import Status

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "choose-a-tool.yaml"
STORED = Path(__file__).parent / "fixtures" / "runs" / "choose-a-tool"


def test_the_scenario_validates_with_every_tool_toolbench_can_run_and_its_quick_profile(capsys):
    s = scenario.load(SCENARIO)
    assert s.missing_tools == "skip"
    runnable = {r.name for r in installs.RECIPES if r.load_tool} | {"http_load"}
    assert set(s.matrix.tool) == runnable & set(registry.adapters())
    assert None in s.matrix.rate and len([r for r in s.matrix.rate if r]) == 1
    assert set(s.matrix.keepalive) == {True, False} and len(s.matrix.concurrency) >= 2 and s.repeat >= 2
    cells = plan.expand(s)
    assert {c.cell.tool for c in cells if c.support.ok} >= {"ab", "engine", "wrk", "bombardier"}
    assert main(["validate", str(SCENARIO), "--profile", "quick", "--quiet"]) == 0
    assert capsys.readouterr().out == ""


def test_missing_tools_takes_skip_or_fail_and_names_the_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("name: x\ntarget: {url: 'http://127.0.0.1:9'}\nmatrix: {tool: [ab]}\nmissing_tools: maybe\n")
    with pytest.raises(ScenarioError, match=r"s.yaml:4: missing_tools: expected one of fail, skip, got 'maybe'"):
        scenario.load(path)


@pytest.mark.integration
def test_a_tool_not_installed_is_skipped_with_its_reason_and_the_run_exits_0(tmp_path, nginx, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
name: skip
hosts: {{generator: {{address: local, tools: {{siege: /nonexistent/bin/siege}}}}}}
target: {{url: "{nginx.base_url}"}}
missing_tools: skip
matrix: {{tool: [ab, siege], concurrency: [2]}}
stop: {{requests: 50}}
probe: {{enabled: false}}
""")
    assert main(["run", str(path), "--reports-dir", str(tmp_path / "out"), "--quiet"]) == 0
    (run_dir,) = (tmp_path / "out").iterdir()
    results = {r.identity.tool: r for r in store.RunDir.open(run_dir).results()}
    assert results["ab"].outcome.status is Status.OK
    assert results["siege"].outcome.status is Status.UNSUPPORTED
    assert results["siege"].outcome.error.startswith("skipped, not installed: ")
    assert "/nonexistent/bin/siege" in results["siege"].outcome.error
