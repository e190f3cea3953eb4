"""A disturbed cell in the report (toolbench.report.disturbed): shown and marked wherever cells are
listed, left out of the verdict, the ranking and the charts' lines, and said where it is left out;
left out of criteria, and skipped (not failed) in JUnit. The run: tests/helpers/disturbed_run.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import disturbed_run
from toolbench.export import junit
from toolbench.record import store
from toolbench.report import fmt, model, render
from toolbench.report.context import RunView
from toolbench.scenario.criteria import evaluate, spec


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> store.RunDir:
    return disturbed_run.make(tmp_path_factory.mktemp("runs") / "tie")


@pytest.fixture(scope="module")
def data(run: store.RunDir) -> model.ReportData:
    return model.build(views(run))


def views(run: store.RunDir) -> list[RunView]:
    return render.load_views([run], run.path.parent)


def section(data: model.ReportData, section_id: str):
    return next(s for s in data.sections if s.id == section_id)


def test_the_verdict_leaves_it_out_and_says_so(data: model.ReportData) -> None:
    (verdict,) = data.verdicts
    assert verdict.headline.endswith(
        "1 cell disturbed by other work on the machine was left out: ab-c10-ka-rep2 (each one's figures and why "
        "are in the results; `toolbench run --retry-disturbed N` runs such cells again once the machine is quiet).")
    # ab is ranked on its one undisturbed repetition: its noise between runs is not measured any more
    assert "ab" in verdict.headline and "engine" in verdict.headline


def test_the_results_table_shows_it_marked_with_its_figures(data: model.ReportData) -> None:
    table = section(data, "results").tables[0]
    cells = [c.label for c in table.columns]
    rows = {row.values[cells.index("cell")].text: row for row in table.rows}
    row = rows["ab-c10-ka-rep2"]
    status = row.values[cells.index("status")]
    assert row.disturbed and not row.bad and row.error == disturbed_run.WHY
    assert status.text == "disturbed" and status.flag == fmt.DISTURBED
    assert row.values[cells.index("requests")].sort  # its figures are kept
    assert not any(r.disturbed for name, r in rows.items() if name != "ab-c10-ka-rep2")


def test_the_ranking_and_the_charts_say_what_they_left_out(data: model.ReportData) -> None:
    ranking = section(data, "ranking").tables[0]
    tools = [c.label for c in ranking.columns].index("tool")
    rate = [c.label for c in ranking.columns].index("ok req/s")
    flags = {row.values[tools].text: row.values[rate].flag for row in ranking.rows}
    assert flags == {"ab": fmt.DISTURBED_LEFT_OUT, "engine": ""}
    throughput = section(data, "throughput").figures[0]
    assert "Crosses: the 1 cells disturbed by other work on the machine" in throughput.caption
    others = [f for s in data.sections if s.id != "throughput" for f in s.figures]
    assert others and all("disturbed by other work on the machine is left out of this chart: ab-c10-ka-rep2"
                          in f.caption for f in others)


def test_the_page_marks_it(run: store.RunDir, tmp_path: Path) -> None:
    out = render.render_runs([run.path], tmp_path / "report.html")
    html = out.read_text()
    assert 'class="disturbed"' in html and 'class="note disturbed"' in html
    assert f'title="{fmt.DISTURBED}">↯</abbr>' in html


def test_criteria_and_junit_leave_it_out_without_failing_it(run: store.RunDir) -> None:
    results = run.results()
    given = spec.from_arguments(["rps > 0"], {"ab", "engine"})
    found = {e.subject: e.verdict for e in evaluate.evaluate(given, results)}
    assert "ab-c10-ka-rep2" not in found and found["ab-c10-ka-rep1"] is evaluate.Verdict.PASSED
    xml = junit.document("tie", junit.Cells(results, []), [])
    case = next(c for c in xml.iter("testcase") if c.get("name") == "ab-c10-ka-rep2")
    assert case.find("failure") is None and (case.findtext("skipped") or "").startswith("disturbed: foreign work")
