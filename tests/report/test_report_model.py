"""The data the report templates receive, from run folders built out of recorded tool output.

Snapshots: tests/report/snapshots/report_*.json hold the data each template gets (charts reduced
to a marker). After a deliberate change, refresh them with
    TOOLBENCH_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/report/test_report_model.py
and read the diff before committing it."""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from helpers import report_data
from toolbench.record import store
from toolbench.record.manifest import Manifest, ScenarioRecord
from toolbench.record.schema import Failures
from toolbench.report import compare, failed_requests, fmt, model, render, truth
from toolbench.report.context import Context

SNAPSHOTS = Path(__file__).parent / "snapshots"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    return {"full": report_data.full_run(root), "failed": report_data.failed_run(root),
            "absent": report_data.absent_run(root), "single": report_data.single_run(root),
            "empty": report_data.empty_run(root)}


_BUILT: dict[tuple[Path, ...], model.ReportData] = {}


def build(*paths: Path, base: Path | None = None) -> model.ReportData:
    """The report data of runs; built once per set of runs (the data are frozen)."""
    if paths not in _BUILT:
        run_dirs = [store.RunDir.open(p) for p in paths]
        _BUILT[paths] = model.build(render.load_views(run_dirs, base or paths[0]))
    return _BUILT[paths]


def section(data: model.ReportData, section_id: str):
    return next(s for s in data.sections if s.id == section_id)


def column(table, label: str) -> list[str]:
    index = [c.label for c in table.columns].index(label)
    return [row.values[index].text for row in table.rows]


def row_of(table, first: str, label: str) -> list[str]:
    """The column `label` for the rows whose first column reads `first`."""
    index = [c.label for c in table.columns].index(label)
    return [row.values[index].text for row in table.rows if row.values[0].text == first]


@pytest.mark.parametrize("name", ["full", "failed", "absent", "single", "empty"])
def test_snapshot_of_template_data(runs: dict[str, Path], name: str) -> None:
    check_snapshot(f"report_{name}", model.snapshot(build(runs[name])))


def test_snapshot_of_two_runs_compared(runs: dict[str, Path]) -> None:
    check_snapshot("report_compare", model.snapshot(build(runs["full"], runs["single"], base=runs["full"].parent)))


def dump(value: object, indent: str = "") -> str:
    """JSON with a list of plain values (a table row) on one line, so that a diff shows rows."""
    inner = indent + " "
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k)}: {dump(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return "[\n" + ",\n".join(inner + dump(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value, ensure_ascii=False)


def check_snapshot(name: str, data: dict) -> None:
    path = SNAPSHOTS / f"{name}.json"
    text = dump(data) + "\n"
    if os.environ.get("TOOLBENCH_UPDATE_SNAPSHOTS") or not path.exists():
        if not os.environ.get("TOOLBENCH_UPDATE_SNAPSHOTS") and os.environ.get("CI"):
            pytest.fail(f"{path} is missing: record it with TOOLBENCH_UPDATE_SNAPSHOTS=1")
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(text), \
        f"{name} changed; if on purpose, refresh with TOOLBENCH_UPDATE_SNAPSHOTS=1 and review the diff"


def test_sections_come_in_the_issue_order(runs: dict[str, Path]) -> None:
    ids = [s.id for s in build(runs["full"]).sections]
    assert ids == ["environment", "choice", "ranking", "peaks", "throughput", "latency", "latency-distribution", "truth", "cost",
                   "errors", "series", "latency-time", "results"]
    both = [s.id for s in build(runs["full"], runs["single"], base=runs["full"].parent).sections]
    assert both == ["compare"] + [i for i in ids if i != "choice"]  # a tool is chosen from one run


def test_absent_metrics_read_as_absent_and_rounded_zeros_as_below_resolution(runs: dict[str, Path]) -> None:
    data = build(runs["absent"])
    table = section(data, "results").tables[0]
    # siege gives no percentiles: absent; its mean is 0.00 s at a 10 ms step: "<10", never "0".
    assert set(column(table, "p50 ms")) == {fmt.ABSENT}
    assert set(column(table, "mean ms")) == {"<10"}
    assert "siege reports no latency percentiles." in section(data, "latency").points
    assert "not measured" in section(data, "cost").absent
    assert section(data, "series").absent
    truth_table = section(data, "truth").tables[0]
    assert set(column(truth_table, "vs rate")) == {"below resolution"}


def test_a_real_zero_stays_zero_and_absent_is_a_dash() -> None:
    assert fmt.number(None) == fmt.ABSENT
    assert fmt.number(0) == "0"
    assert fmt.number(0.0, 10.0) == "<10"
    assert fmt.number(0.4, 1.0) == "<1"
    assert fmt.number(1.0, 1.0) == "1"
    assert fmt.number(1234.5) == "1,234"
    assert fmt.number(0.1234) == "0.123"
    assert fmt.change(110.0, 100.0) == "+10.0 %"
    assert fmt.change(1.0, None) == fmt.ABSENT
    assert fmt.change(1.0, 0.0) == fmt.ABSENT


def test_verdict_names_the_leader_its_cost_and_who_measured_truthfully(runs: dict[str, Path]) -> None:
    (verdict,) = build(runs["full"]).verdicts
    # Like with like: siege's best (12,500/s) was with keep-alive off; the ratio is against its keep-alive-on cell.
    assert verdict.headline == ("ab generated the most successful requests/s in both like-for-like comparisons, "
                                "beyond the noise (at concurrency 10, keep-alive on: 63,386/s ±7.7 %, 7.7× siege's "
                                "8,191/s ±24 %).")
    topics = {t.name: t.text for t in verdict.topics}
    assert "ab spent 82.50 µs ±82 % of CPU per request" in topics["Cost"]
    assert "Reported lower latency than the probe saw, so under-reports: siege." in topics["Truthfulness"]
    assert "shown as <N rather than 0: ab (<1 ms, 2 of 4 cells), siege (<10 ms, 2 of 2 cells)." \
        in topics["Truthfulness"]
    assert "1 cell timed out: siege-c50-ka-rep1." in topics["Failures"]
    assert "http_load cannot keep connections alive" in topics["Failures"]


def test_verdict_is_honest_when_the_data_cannot_answer(runs: dict[str, Path]) -> None:
    (absent,) = build(runs["absent"]).verdicts
    topics = {t.name: t.text for t in absent.topics}
    assert "was not measured" in topics["Cost"]
    assert "No probe ran" in topics["Truthfulness"]
    (failed,) = build(runs["failed"]).verdicts
    assert failed.headline.startswith("No cell finished ok")
    (empty,) = build(runs["empty"]).verdicts
    assert empty.headline == "This run has no results yet."
    (single,) = build(runs["single"]).verdicts
    assert single.headline.startswith("ab, the only tool here, peaked at 68,280 successful requests/s (noise not "
                                      "measured)")


def test_peaks_per_tool_and_keepalive_with_the_concurrency_where_errors_begin(runs: dict[str, Path]) -> None:
    table = section(build(runs["full"]), "peaks").tables[0]
    rows = {(r.values[0].text, r.values[1].text): r for r in table.rows}
    assert set(rows) == {("ab", "on"), ("ab", "off"), ("siege", "on"), ("siege", "off")}  # not-run tools left out
    ab_off = [v.text for v in rows[("ab", "off")].values]
    # One repetition, too short for a whole second: no interval, no noise; the 404 cell at c50.
    assert ab_off[2:8] == ["22,275", "—", "not measured", "10", "1.30", "50"]
    assert rows[("ab", "on")].values[3].text == "1,199–125,573"  # two repetitions: a wide, honest interval
    assert rows[("ab", "off")].bad and not rows[("ab", "on")].bad
    assert rows[("ab", "on")].values[2].text == "63,386"  # median of the two repetitions
    assert any("http_load" in p and "not run" in p for p in section(build(runs["full"]), "peaks").points)


def test_probe_and_rate_checks() -> None:
    verdict = truth.Verdict
    assert truth.compare(0.5, 0.6, 0.001, 0.3, 2.0).verdict is verdict.AGREES
    assert truth.compare(0.1, 25.0, 0.001, 0.3, 2.0).verdict is verdict.LOWER
    assert truth.compare(80.0, 20.0, 0.001, 0.3, 2.0).verdict is verdict.HIGHER
    assert truth.compare(0.0, 3.0, 10.0, 0.3, 2.0).verdict is verdict.SUB_RESOLUTION
    assert truth.compare(0.0, 27.0, 10.0, 0.3, 2.0).verdict is verdict.LOWER  # "<10" cannot hide 27 ms
    assert truth.compare(0.0, 3.0, None, 0.0, 1.25).verdict is verdict.LOWER  # a bare 0 is no measurement
    assert truth.compare(None, 3.0, 1.0, 0.0, 2.0).verdict is verdict.NO_LATENCY
    assert truth.compare(1.0, None, 1.0, 0.0, 2.0).verdict is verdict.UNCHECKED


def test_the_probe_judgement_is_used_when_the_probe_recorded_one(runs: dict[str, Path]) -> None:
    ctx = Context.of(render.load_views([store.RunDir.open(runs["single"])], runs["single"]))
    (point,) = ctx.points
    (result,) = point.results
    probe = dataclasses.replace(report_data.PROBE_SLOW)
    if not hasattr(probe, "tool_disagrees"):
        pytest.skip("this schema's ProbeSummary records no judgement")
    for disagrees, expected in ((False, truth.Verdict.AGREES), (True, truth.Verdict.LOWER)):
        judged = dataclasses.replace(probe, tool_disagrees=disagrees)
        cell = truth.cell_truth(dataclasses.replace(point, results=(dataclasses.replace(result, probe=judged),)))
        assert cell.by_probe.verdict is expected


def test_errors_table_shows_every_failure_class_and_leaves_out_cells_not_run(runs: dict[str, Path]) -> None:
    assert {f.name for f in dataclasses.fields(Failures)} == {name for name, _ in failed_requests.CLASSES}
    tables = section(build(runs["full"]), "errors").tables
    cells = tables[-1]
    assert column(cells, "cell") == ["ab-c50-close-rep1", "siege-c50-ka-rep1"]
    assert row_of(cells, "ab-c50-close-rep1", "http") == ["1,000"]
    assert row_of(cells, "ab-c50-close-rep1", "timeout") == [fmt.ABSENT]  # ab does not tell timeouts
    assert cells.rows[1].error.startswith("no result within the hard limit")


def test_prerequisites_found_wanted_ok_and_not_checked(runs: dict[str, Path]) -> None:
    env = section(build(runs["full"]), "environment")
    prereq = env.tables[1]
    assert [c.label for c in prereq.columns] == ["setting", "found", "wanted", "ok", "note"]
    assert [r.values[3].text for r in prereq.rows] == ["NOT MET", "ok", "not checked"]
    assert prereq.rows[0].bad
    assert section(build(runs["single"]), "environment").points == (
        "single-20260113T090000Z: prerequisites not checked.",)


def test_runs_are_labelled_by_what_tells_them_apart() -> None:
    one = Manifest(ScenarioRecord("quick"), started_at="2026-01-10T09:00:00Z")
    other_day = Manifest(ScenarioRecord("quick"), started_at="2026-01-11T09:00:00Z")
    other_scenario = Manifest(ScenarioRecord("ref"), started_at="2026-01-10T09:00:00Z")
    assert compare.labels([("a", one), ("b", other_day)]) == ["2026-01-10 09:00", "2026-01-11 09:00"]
    assert compare.labels([("a", one), ("b", other_scenario)]) == ["quick", "ref"]
    assert compare.labels([("a", one), ("b", one)]) == ["a", "b"]


def test_comparison_shows_the_differences_against_the_first_run(runs: dict[str, Path]) -> None:
    data = build(runs["full"], runs["single"], base=runs["full"].parent)
    cmp = section(data, "compare")
    peaks = cmp.tables[1]
    assert [c.label for c in peaks.columns] == ["tool", "keep-alive", "peak ok req/s: study",
                                                "peak ok req/s: single", "Δ single"]
    ab_on = next(r for r in peaks.rows if r.values[0].text == "ab" and r.values[1].text == "on")
    assert ab_on.values[4].text == "+7.7 %"  # 68,280 against the median 63,386
    assert ab_on.values[4].flag == ""  # inside the noise of both: ±7.7 % over two repetitions, 10 % where not measured
    assert cmp.points == ("From “study” to “single”: the one cell in both runs is within the noise of both; no "
                          "like-for-like comparison ranks two tools in opposite orders.",)
    env = section(data, "environment").tables[0]
    scenario_row = next(r for r in env.rows if r.values[0].text == "scenario")
    assert [v.flag for v in scenario_row.values[1:]] == ["differs", "differs"]
