"""A workload in the plan: each cell asks its tool's adapter what it can express of it; an
unsupported feature plans the cell unsupported with the reason, an approximated one runs with a
note that reaches the cell's result; `toolbench validate` shows the table tool x feature."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import need
from helpers.cli import cli
from toolbench.contract import registry
from toolbench.contract.workload import approximated, honoured, unsupported
from toolbench.record import store
from toolbench.record.schema import Status
from toolbench.run import plan, runner, workload_plan
from toolbench.scenario import read as scenario

MIX = """\
name: w
target: {server: nginx-static}
matrix: {tool: [ab, ab-slow, siege], concurrency: [2]}
tools:
  ab-slow: {use: ab}
workload:
  order: mix
  think: 10ms
  requests:
    - {name: home, path: /}
    - {name: other, path: /index.html, weight: 3}
stop: {duration: 1s}
"""
EVERYTHING = {"sequence": honoured(), "mix": honoured(), "data": honoured(), "extract": honoured(),
              "think": honoured(), "checks": honoured(), "stages": honoured(), "per_request": honoured()}


def load(tmp_path: Path, text: str = MIX) -> scenario.Scenario:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return scenario.load(path)


def declare(monkeypatch: pytest.MonkeyPatch, tool: str, features: dict) -> None:
    """What the real adapter of `tool` declares, for this test only (the adapters' own declarations
    are other work, and change)."""
    monkeypatch.setattr(registry.get(tool), "workload_features", features)


def cells(tmp_path: Path) -> dict[str, plan.PlannedCell]:
    return {p.cell.id: p for p in plan.expand(load(tmp_path))}


def test_a_tool_that_declares_nothing_is_planned_unsupported_naming_each_feature(tmp_path, monkeypatch) -> None:
    declare(monkeypatch, "ab", {})
    refused = cells(tmp_path)["ab-c2-ka-rep1"].support
    assert not refused.ok
    # Figures per request name are what a tool reports, not what it sends: never a refusal.
    assert refused.reason == "toolbench does not translate a weighted mix of requests or think time between requests for ab"


def test_a_tool_without_figures_per_request_name_runs_with_a_note_saying_why(tmp_path, monkeypatch) -> None:
    declare(monkeypatch, "ab", EVERYTHING | {"per_request": unsupported("ab reports one total for all its requests")})
    planned = cells(tmp_path)["ab-c2-ka-rep1"]
    assert planned.support.ok, planned.support.reason
    assert planned.notes == ("no figures per request name: ab reports one total for all its requests",)


def test_a_declared_unsupported_feature_is_the_reason_in_the_tools_words(tmp_path, monkeypatch) -> None:
    declare(monkeypatch, "ab", EVERYTHING | {"mix": unsupported("it sends one URL")})
    planned = cells(tmp_path)
    for cell_id in ("ab-c2-ka-rep1", "ab-slow-c2-ka-rep1"):  # a variant is its tool
        assert planned[cell_id].support.reason == "ab cannot express a weighted mix of requests: it sends one URL"


def test_an_approximated_feature_runs_with_a_note_per_feature(tmp_path, monkeypatch) -> None:
    declare(monkeypatch, "ab", EVERYTHING | {"think": approximated("one pause per connection, not per request"),
                                             "mix": approximated("the weights rounded to whole URLs")})
    planned = cells(tmp_path)["ab-c2-ka-rep1"]
    assert planned.support.ok, planned.support.reason
    assert planned.notes == ("a weighted mix of requests: approximated: the weights rounded to whole URLs",
                             "think time between requests: approximated: one pause per connection, not per request")
    assert planned.cell.workload is not None and planned.cell.workload.order == "mix"


def test_a_scenario_without_a_workload_plans_as_before(tmp_path, monkeypatch) -> None:
    declare(monkeypatch, "ab", {})
    text = MIX.split("workload:")[0] + "request: {path: /}\nstop: {duration: 1s}\n"
    planned = {p.cell.id: p for p in plan.expand(load(tmp_path, text))}["ab-c2-ka-rep1"]
    assert planned.support.ok and planned.notes == () and planned.cell.workload is None
    assert workload_plan.table(load(tmp_path, text)) == []


def test_the_table_says_each_tools_level_per_feature_and_the_how_and_why_below(tmp_path, monkeypatch) -> None:
    declare(monkeypatch, "ab", EVERYTHING | {"mix": unsupported("it sends one URL")})
    declare(monkeypatch, "siege", EVERYTHING | {"think": approximated("siege's delay: up to that long, at random")})
    lines = workload_plan.table_lines(workload_plan.table(load(tmp_path)))
    assert lines[1].split() == ["tool", "mix", "think", "per_request"]
    assert lines[2].split() == ["ab", "unsupported", "honoured", "honoured"]
    assert lines[3].split() == ["ab-slow", "unsupported", "honoured", "honoured"]
    assert lines[4].split() == ["siege", "honoured", "approximated", "honoured"]
    assert "  ab: a weighted mix of requests: unsupported: it sends one URL" in lines
    assert "  siege: think time between requests: approximated: siege's delay: up to that long, at random" in lines


def test_validate_prints_the_table_and_gives_it_in_json(tmp_path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(MIX)
    shown = cli("validate", str(path))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    start = lines.index("workload features (honoured / approximated / unsupported):")
    assert lines[start + 1].split() == ["tool", "mix", "think", "per_request"]
    for row, tool in zip(lines[start + 2:start + 5], ("ab", "ab-slow", "siege")):
        assert row.split()[0] == tool
        assert set(row.split()[1:]) <= {"honoured", "approximated", "unsupported"} and len(row.split()) == 4
    given = json.loads(cli("validate", "--json", str(path)).stdout)["workload"]
    assert set(given) == {"ab", "ab-slow", "siege"} and set(given["siege"]) == {"mix", "think", "per_request"}
    assert {v["level"] for tool in given.values() for v in tool.values()} <= {"honoured", "approximated", "unsupported"}


@pytest.mark.integration
def test_the_note_of_an_approximated_feature_reaches_the_cells_result(tmp_path, monkeypatch) -> None:
    need("ab")
    # One request, so that ab's own single URL is the whole workload: only `sequence` is asked.
    text = ("name: w\ntarget: {server: nginx-static}\nmatrix: {tool: [ab], concurrency: [2]}\n"
            "workload:\n  requests:\n    - {name: home, path: /}\nstop: {duration: 1s}\n")
    declare(monkeypatch, "ab", {"sequence": approximated("ab repeats its one URL")})
    summary = runner.run(load(tmp_path, text), tmp_path / "reports")
    (result,) = store.RunDir.open(summary.run_dir).results()
    assert result.outcome.status is Status.OK, result.outcome.error
    assert "requests in order per user: approximated: ab repeats its one URL" in result.notes
