"""Criteria: the expression parser, `criteria:` in a scenario (errors with file:line), and
evaluation on stored runs (failing, absent figures, tool against tool), JUnit against its XSD."""
import dataclasses
from pathlib import Path

import pytest
import xmlschema

from conftest import FIXTURES
from toolbench.errors import ScenarioError
from toolbench.export import junit
from toolbench.record import store
from toolbench.record.schema import Outcome, Percentiles, Status
from toolbench.scenario import read as scenario
from toolbench.scenario.criteria import Verdict, expr, spec
from toolbench.scenario.criteria.evaluate import evaluate

STORED = FIXTURES / "stored" / "v2-0.2.0"  # ab and engine, concurrency 4, keep-alive on and off
XSD = xmlschema.XMLSchema(str(FIXTURES / "junit" / "jenkins-junit.xsd"))
BASE = """name: s
target: {server: nginx-static}
matrix: {tool: [ab, engine, fast], concurrency: [1, 4]}
tools:
  fast: {use: engine}
criteria:
"""


def value(text: str, **figures: float) -> float:
    comparison = expr.parse(text)
    values = {ref: figures[ref.text] for ref in comparison.refs()}
    return expr.holds(comparison, values)


@pytest.mark.parametrize("text, figures, want", [
    ("p99_ms < 50", {"p99_ms": 49.9}, (True, 49.9, 50.0)),
    ("p99_ms < 50", {"p99_ms": 50}, (False, 50, 50.0)),
    ("error_rate < 1%", {"error_rate": 0.02}, (False, 0.02, 0.01)),
    ("rps >= 2 + 3 * 4", {"rps": 14}, (True, 14, 14.0)),
    ("rps >= (2 + 3) * 4", {"rps": 14}, (False, 14, 20.0)),
    ("-rps < -1e3", {"rps": 2000}, (True, -2000, -1000.0)),
    ("engine.rps >= 0.95 * ab.rps", {"engine.rps": 95, "ab.rps": 100}, (True, 95, 95.0)),
    ("locust-2p.rps - ab.rps != 0", {"locust-2p.rps": 5, "ab.rps": 5}, (False, 0, 0.0)),
    ("rps / 4 == .5", {"rps": 2}, (True, 0.5, 0.5)),
])
def test_expressions_read_as_written(text, figures, want):
    assert value(text, **figures) == pytest.approx(want)


@pytest.mark.parametrize("text, column, says", [
    ("p99_ms 50", 8, "expected a comparison"),
    ("p99_ms < < 5", 10, "expected a number or a figure's name, got '<'"),
    ("p99_ms <", 9, "got the end"),
    ("(rps > 5", 6, "expected ')', got '>'"),
    ("rps > 5 < 6", 9, "expected the end of the criterion"),
    ("__import__('os') > 1", 12, "unexpected character \"'\""),
    ("rps > 5; rm", 8, "unexpected character ';'"),
    ("rps ** 2 > 1", 6, "expected a number or a figure's name, got '*'"),
])
def test_bad_syntax_names_the_column(text, column, says):
    with pytest.raises(expr.ExpressionError) as caught:
        expr.parse(text)
    assert caught.value.column == column and says in str(caught.value)


def write(tmp_path: Path, entries: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(BASE + entries)
    return path


def test_a_scenario_reads_criteria_with_selectors(tmp_path):
    path = write(tmp_path, "  - p99_ms < 50\n  - expect: error_rate < 1%\n    tool: [ab, fast]\n"
                           "    concurrency: 4\n    keepalive: true\n  - engine.rps >= 0.95 * fast.rps\n")
    found = scenario.load(path).criteria
    assert [c.text for c in found] == ["p99_ms < 50", "error_rate < 1%", "engine.rps >= 0.95 * fast.rps"]
    assert found[0].where == f"{path}:7: criteria[0]" and found[0].selector == spec.Selector()
    assert found[1].selector == spec.Selector(tool=("ab", "fast"), concurrency=(4,), keepalive=(True,))
    assert found[1].selector.text() == "tool ab/fast, concurrency 4, keepalive on"
    assert found[2].tool_vs_tool and not found[0].tool_vs_tool


@pytest.mark.parametrize("entries, message", [
    ("  - p99 < 50\n", r"s.yaml:7: criteria\[0\]: column 1: unknown figure 'p99' in 'p99 < 50' \(did you mean p99_ms\?"),
    ("  - rps > 5\n  - p99_ms <\n", r"s.yaml:8: criteria\[1\]: column 9: expected a number or a figure's name, "
                                     r"got the end in 'p99_ms <'"),
    ("  - expect: rps > 5\n    when: always\n", r"s.yaml:8: criteria\[0\].when: unknown key \(expected one of expect, "),
    ("  - tool: ab\n", r"s.yaml:7: criteria\[0\]: missing required key 'expect'"),
    ("  - wrk.rps > 5\n", r"s.yaml:7: criteria\[0\]: column 1: no tool 'wrk' in this run \(known: ab, engine, fast\)"),
    ("  - ab.rps-engine.rps > 0\n", r"no tool 'ab.rps-engine' .*write a subtraction with spaces around '-'"),
    ("  - expect: rps > 5\n    tool: wrk\n", r"s.yaml:8: criteria\[0\].tool: no tool 'wrk' in this scenario"),
    ("  - expect: rps > 5\n    concurrency: many\n", r"s.yaml:8: criteria\[0\].concurrency: expected a positive integer"),
    ("  - expect: engine.rps > ab.rps\n    tool: ab\n", r"s.yaml:8: criteria\[0\].tool: every figure of this "),
    ("  - [rps > 5]\n", r"s.yaml:7: criteria\[0\]: expected a value, got a list"),
    ("  p99_ms: 50\n", r"s.yaml:7: criteria: expected a list, got a mapping"),
])
def test_bad_criteria_are_one_line_with_file_line_and_key(tmp_path, entries, message):
    with pytest.raises(ScenarioError, match=message) as caught:
        scenario.load(write(tmp_path, entries))
    assert "\n" not in str(caught.value)


def stored_results():
    return store.RunDir.open(STORED).results()


def criteria(*texts: str):
    return spec.from_arguments(texts, {"ab", "engine"})


def test_each_result_is_judged_and_a_failing_criterion_fails():
    found = evaluate(criteria("p99_ms < 10", "requests_failed == 0"), stored_results())
    by_cell = {(e.criterion, e.subject): e for e in found}
    assert len(found) == 8  # two criteria, four cells, each repetition on its own
    assert by_cell["p99_ms < 10", "ab-c4-ka-rep1"].verdict is Verdict.PASSED
    failed = by_cell["p99_ms < 10", "ab-c4-close-rep1"]  # ab's close-connection p99 is 13.1 ms
    assert failed.verdict is Verdict.FAILED and failed.detail == "13.1 < 10 (p99_ms = 13.1)"
    assert failed.cells == ("ab-c4-close-rep1",)


def test_an_absent_figure_makes_the_criterion_unknown_never_passed():
    results = stored_results()
    no_p99 = dataclasses.replace(results[0].measurement, latency=dataclasses.replace(
        results[0].measurement.latency, percentiles=Percentiles()))
    results[0] = dataclasses.replace(results[0], measurement=no_p99)
    found = evaluate(criteria("p99_ms < 1000", "server_cpu_us_per_request < 1e9"), results)
    unknown = [e for e in found if e.verdict is Verdict.UNKNOWN]
    assert [e.subject for e in unknown if e.criterion == "p99_ms < 1000"] == [results[0].identity.cell_id]
    assert unknown[0].detail == "p99_ms is absent (ab did not report it)"
    # the stored run predates the server monitor: every cell lacks the figure
    assert len([e for e in unknown if e.criterion.startswith("server")]) == 4


def test_tools_are_compared_at_the_same_cell_coordinates():
    found = evaluate(criteria("engine.rps >= 0.7 * ab.rps", "engine.rps > 100 * ab.rps"), stored_results())
    assert [(e.subject, e.verdict) for e in found] == [
        ("target nginx-static c4 keep-alive rep1", Verdict.PASSED),  # 6,925/s against ab's 7,735/s
        ("target nginx-static c4 close rep1", Verdict.PASSED),  # 1,034/s against ab's 1,415/s
        ("target nginx-static c4 keep-alive rep1", Verdict.FAILED),
        ("target nginx-static c4 close rep1", Verdict.FAILED)]
    assert found[0].cells == ("engine-c4-ka-rep1", "ab-c4-ka-rep1")
    assert found[0].detail.endswith("(engine.rps = 6,925, ab.rps = 7,735)")


def test_a_tool_without_a_result_there_leaves_the_comparison_unknown():
    results = [r for r in stored_results() if r.identity.cell_id != "ab-c4-close-rep1"]
    found = evaluate(criteria("engine.rps >= ab.rps"), results)
    assert [(e.subject, e.verdict, e.detail) for e in found if e.verdict is Verdict.UNKNOWN] == [
        ("target nginx-static c4 close rep1", Verdict.UNKNOWN, "ab has no result here")]


def test_selectors_choose_cells_and_cells_not_run_are_not_judged(tmp_path):
    results = stored_results()
    results[1] = dataclasses.replace(results[1], outcome=Outcome(Status.UNSUPPORTED, error="no"))
    select = spec.Criterion("rps > 0", "here", expr.parse("rps > 0"), spec.Selector(keepalive=(True,)))
    found = evaluate([select], results)
    assert [e.subject for e in found] == ["ab-c4-ka-rep1"]  # engine-c4-ka-rep1 did not run
    nothing = spec.Criterion("rps > 0", "here", expr.parse("rps > 0"), spec.Selector(concurrency=(99,)))
    assert [(e.verdict, e.detail) for e in evaluate([nothing], results)] == [
        (Verdict.UNKNOWN, "no cell that ran matches it")]


def test_a_division_by_zero_is_unknown():
    found = evaluate(criteria("rps / requests_failed > 1"), stored_results())
    assert {(e.verdict, e.detail) for e in found} == {(Verdict.UNKNOWN, "a division by zero")}


def test_junit_of_a_stored_run_fits_the_jenkins_schema(tmp_path):
    results = stored_results()
    results[2] = dataclasses.replace(results[2], outcome=Outcome(Status.FAILED, error="bad \x1b[31m<&>\x00"))
    results[3] = dataclasses.replace(results[3], outcome=Outcome(Status.UNSUPPORTED, error="no rate mode"))
    found = evaluate(criteria("p99_ms < 10", "server_cpu_us_per_request < 5"), results)
    out = tmp_path / "junit.xml"
    junit.write(out, "stored-v2", junit.Cells(results, ["engine-c8-ka-rep1"]), found)
    XSD.validate(str(out))
    tree = XSD.to_dict(str(out))
    cells, judged = tree["testsuite"]
    assert (cells["@tests"], cells["@failures"], cells["@skipped"]) == ("5", "2", "1")
    cases = {c["@name"]: c for c in cells["testcase"]}
    assert cases["ab-c4-close-rep1"]["failure"][0]["@message"] == "failed: bad \ufffd[31m<&>\ufffd"
    assert cases["engine-c4-close-rep1"]["skipped"] == "no rate mode"
    assert cases["engine-c8-ka-rep1"]["failure"][0]["@type"] == "not_run"
    assert judged["@tests"] == "6" and judged["@failures"] == "4"  # one p99 over 10 ms, three unknown
    kinds = sorted(f["@type"] for c in judged["testcase"] for f in c.get("failure", []))
    assert kinds == ["failed", "unknown", "unknown", "unknown"]


def test_junit_refuses_a_folder(tmp_path):
    with pytest.raises(Exception, match="is a folder"):
        junit.write(tmp_path, "x", junit.Cells([], []), [])
