"""scenarios/choose-a-tool.yaml: it validates, its tools not installed are skipped with the
reason (not failed), and its report's "Which tool for which purpose" paragraph is made from
the measured figures of a stored run (tests/fixtures/runs/choose-a-tool), ties said as ties."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from toolbench.cli.main import main
from toolbench.contract import registry
from toolbench.errors import ScenarioError
from toolbench.install import recipes as installs
from toolbench.record import store
from toolbench.scenario.workload import FEATURES
from toolbench.record.schema import Status
from toolbench.report import choice, render
from toolbench.report.context import Context
from toolbench.run import plan
from toolbench.scenario import read as scenario

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "choose-a-tool.yaml"
STORED = Path(__file__).parents[1] / "fixtures" / "runs" / "choose-a-tool"


def test_the_scenario_validates_with_every_tool_toolbench_can_run_and_its_quick_profile(capsys):
    s = scenario.load(SCENARIO)
    assert s.missing_tools == "skip"
    runnable = {r.name for r in installs.installable() if r.load_tool} | {"http_load"}
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
    assert main(["run", str(path), "--reports-dir", str(tmp_path / "out"), "--quiet", "--allow-commands"]) == 0
    (run_dir,) = (tmp_path / "out").iterdir()
    results = {r.identity.tool: r for r in store.RunDir.open(run_dir).results()}
    assert results["ab"].outcome.status is Status.OK
    assert results["siege"].outcome.status is Status.UNSUPPORTED
    assert results["siege"].outcome.error.startswith("skipped, not installed: ")
    assert "/nonexistent/bin/siege" in results["siege"].outcome.error


def _paragraph(path: Path) -> tuple[str, list[choice.Ranking]]:
    views = render.load_views([store.RunDir.open(path)], path)
    ctx = Context.of(views)
    section = choice.choice_section(ctx)
    assert section is not None
    return section.intro, choice.rankings(ctx)


def _cpu_by_tool(path: Path, concurrency: int) -> dict[str, float]:
    """Each tool's median CPU µs per request in the closed, keep-alive-on cells at `concurrency`,
    read straight from results.jsonl (not through the report)."""
    found: dict[str, list[float]] = {}
    for line in (path / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        i = r["identity"]
        if (r["outcome"]["status"] == "ok" and i["keepalive"] and not i.get("rate_rps")
                and i["concurrency"] == concurrency and r.get("cost")):
            found.setdefault(i["tool"], []).append(r["cost"]["cpu_us_per_request"])
    return {tool: sorted(v)[len(v) // 2] if len(v) % 2 else sum(sorted(v)[len(v) // 2 - 1:len(v) // 2 + 1]) / 2
            for tool, v in found.items()}


def _scaled(tmp_path: Path, factor: dict[str, float]) -> Path:
    """A copy of the stored run with some tools' generator CPU multiplied."""
    copy = tmp_path / "run"
    shutil.copytree(STORED, copy)
    lines = []
    for line in (STORED / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("cost") and r["identity"]["tool"] in factor:
            for key in ("cpu_user_s", "cpu_system_s", "cpu_us_per_request"):
                if r["cost"].get(key) is not None:
                    r["cost"][key] *= factor[r["identity"]["tool"]]
        lines.append(json.dumps(r))
    (copy / "results.jsonl").write_text("\n".join(lines) + "\n")
    return copy


def test_the_stored_run_names_the_cheapest_tools_from_their_figures_with_ties_said():
    said, ranked = _paragraph(STORED)
    assert "\n" not in said and said.count("So: use ") == 1
    cost = ranked[0]
    assert cost.basis == "per request, closed model at concurrency 50, keep-alive on"
    cpu = _cpu_by_tool(STORED, 50)
    cheapest = min(cpu, key=cpu.get)
    lead = [e.tool for e in cost.tiers[0]]
    assert cheapest == lead[0] and f"{cheapest} ({cpu[cheapest]:.2f} µs)" in said
    # The lead's tools are named in the first sentence, as a tie when there are several; the
    # next tier is dearer than each of them.
    first = said.split(". ")[0]
    assert all(f"{t} ({cpu[t]:.2f} µs)" in first for t in lead)
    assert (", a tie within the noise" in first) == (len(lead) > 1)
    assert all(cpu[t] < min(cpu[e.tool] for e in cost.tiers[1]) for t in lead)
    assert "Not measured here: http_load (not installed)." in said


def test_the_stored_run_ranks_rate_accuracy_from_the_rates_sent():
    said, ranked = _paragraph(STORED)
    errors: dict[str, list[float]] = {}
    for line in (STORED / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["outcome"]["status"] == "ok" and r["identity"].get("rate_rps"):
            m = r["measurement"]
            sent = m["counts"]["requests_total"] / m["timing"]["duration_s"]
            errors.setdefault(r["identity"]["tool"], []).append(abs(sent / r["identity"]["rate_rps"] - 1) * 100)
    accuracy = ranked[3]
    assert {e.tool for tier in accuracy.tiers for e in tier} == set(errors)
    best = min(errors, key=lambda t: sorted(errors[t])[len(errors[t]) // 2])
    assert best in [e.tool for e in accuracy.tiers[0]]
    assert "Closest to the rate asked (the open-model cells at 1,000/s" in said


def test_the_paragraph_follows_the_figures_a_tool_made_dearer_leaves_the_lead(tmp_path):
    _, ranked = _paragraph(STORED)
    leaders = [e.tool for e in ranked[0].tiers[0]]
    dearer = _scaled(tmp_path, {leaders[0]: 10.0})
    said, again = _paragraph(dearer)
    now = [e.tool for e in again[0].tiers[0]]
    assert leaders[0] not in now
    uses = said.split("So: use ")[1].split(";")[0]
    assert leaders[0] not in uses and all(t in uses for t in now)


def test_one_tool_far_ahead_is_said_alone_and_ahead_not_as_a_tie(tmp_path):
    _, ranked = _paragraph(STORED)
    tools = [e.tool for tier in ranked[0].tiers for e in tier]
    alone = ranked[0].tiers[1][0].tool  # the first behind the lead, made the cheapest by far
    scaled = _scaled(tmp_path, {t: 20.0 for t in tools if t != alone})
    said, again = _paragraph(scaled)
    assert [e.tool for e in again[0].tiers[0]] == [alone]
    first = said.split(". ")[0]
    assert f"): {alone} (" in first and ", ahead of " in first and "a tie" not in first


def test_a_purposes_run_records_and_shows_what_each_tool_can_express_of_a_workload(tmp_path, nginx):
    """choose-a-tool's question includes "can it express your workload": the run records, for every
    tool, each feature a workload may ask for as its adapter declared it, and the report shows it."""
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
name: purposes
compare: purposes
target: {{url: "{nginx.base_url}"}}
matrix: {{tool: [ab, engine], concurrency: [2]}}
stop: {{requests: 50}}
probe: {{enabled: false}}
""")
    assert main(["run", str(path), "--reports-dir", str(tmp_path / "out"), "--quiet", "--allow-commands",
                 "--fail-on", "none"]) == 0
    (run_dir,) = (tmp_path / "out").iterdir()
    recorded = {t.tool: t.workload for t in store.RunDir.open(run_dir).manifest().tools}
    assert set(recorded["ab"]) == set(recorded["engine"]) == set(FEATURES)
    assert recorded["ab"]["mix"].level == "unsupported" and "one URL" in recorded["ab"]["mix"].how
    assert {r.level for r in recorded["engine"].values()} == {"honoured"}
    html = (run_dir / "report.html").read_text()
    assert "Can it express your workload" in html and "sends one URL" in html
