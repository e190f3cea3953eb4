"""h2load's per-request log (--log-file), read beside its summary and alone, its timed run with a
warm-up, and output appended to by two runs, over output recorded from the real h2load 1.52.0
(commands in fixtures/h2load/CASES.tsv)."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from helpers.tool_cells import parsed
from toolbench.cli.commands import results_of
from toolbench.contract import registry
from toolbench.contract.adapter import raw_from_files
from toolbench.contract.checked import parse_checked
from toolbench.contract.runs_found import runs
from toolbench.errors import Notice, ParseError
from toolbench.record import histogram
from toolbench.record.schema import Fidelity

TOOL = "h2load"


def log_alone(case: str):
    adapter = registry.get(TOOL)
    path = FIXTURES / TOOL / f"{case}.log"
    return parse_checked(adapter, raw_from_files(adapter, case, [path]))


def rows(case: str) -> list[tuple[int, int, int]]:
    text = (FIXTURES / TOOL / f"{case}.log").read_text()
    return [tuple(int(v) for v in line.split("\t")) for line in text.splitlines()]  # type: ignore[misc]


def test_beside_its_summary_the_counts_are_the_summarys_and_the_percentiles_the_logs():
    m = parsed(TOOL, "1.52.0-log-ok")
    took_ms = sorted(r[2] / 1000.0 for r in rows("1.52.0-log-ok"))
    assert m.counts.requests_total == m.counts.requests_ok == 2000 and m.transfer.received_bytes is not None
    assert (m.latency.min_ms, m.latency.max_ms) == (0.081, 6.5)  # the summary's, as printed
    assert m.latency.percentiles.p50_ms == pytest.approx(took_ms[999], rel=2 ** -10)
    assert histogram.decode(m.histogram).get_total_count() == 2000 and m.series[0].requests == 2000
    assert m.fidelity["latency.percentiles.p99_ms"] is Fidelity.DERIVED
    assert registry.get(TOOL).timings(raw_from_files(registry.get(TOOL), "x", sorted(
        (FIXTURES / TOOL).glob("1.52.0-log-ok.*")))).requests == 2000


def test_a_summary_that_failed_most_requests_keeps_its_counts():
    m = parsed(TOOL, "1.52.0-log-dropped")  # 20 asked, 4 answered, 16 without a response
    assert (m.counts.requests_total, m.counts.requests_ok, m.counts.failures.other) == (20, 4, 16)
    assert m.latency.percentiles.p50_ms is not None and m.series[0].requests == 4
    refused = parsed(TOOL, "1.52.0-log-refused")  # an empty log: nothing to add
    assert refused.counts.requests_failed == 20 and refused.histogram is None


def test_a_log_alone_gives_what_its_rows_can_and_says_what_they_cannot():
    m = log_alone("1.52.0-log-dropped")
    assert (m.counts.requests_total, m.counts.requests_ok) == (4, 4)  # the 16 without a stream have no row
    assert m.timing.duration_s == pytest.approx(247e-6) and m.fidelity["timing.duration_s"] is Fidelity.DERIVED
    assert m.latency.min_ms == 0.06 and m.latency.max_ms == 0.15 and m.counts.status_codes == {200: 4}
    assert any("not counted" in n and "in its summary (stdout) only" in n for n in m.notes)
    assert m.transfer.received_bytes is None and m.latency.connect_mean_ms is None
    errors = log_alone("1.52.0-log-404")
    assert errors.counts.failures.http_4xx == errors.counts.requests_failed == 200


def test_an_empty_log_alone_is_a_parse_error_that_says_why(tmp_path):
    adapter = registry.get(TOOL)
    with pytest.raises(ParseError, match="log holds no row, and there is no summary beside it"):
        parse_checked(adapter, raw_from_files(adapter, "x", [FIXTURES / TOOL / "1.52.0-log-refused.log"]))


def test_a_warm_up_is_not_counted_in_the_duration():
    m = parsed(TOOL, "1.52.0-log-timed")  # -D 2 --warm-up-time 1: "finished in 3.00s", 200 requests measured
    assert m.timing.duration_s == 2.0 and m.rates.rps == 100.0 and m.counts.requests_total == 200
    assert m.latency.connect_mean_ms is None  # printed as zeros: the connects were in the warm-up
    assert len(log_alone("1.52.0-log-timed").series) == 2


def test_two_runs_in_one_output_are_two_results():
    adapter = registry.get(TOOL)
    paths = sorted((FIXTURES / TOOL).glob("1.52.0-tworuns.*"))
    first, second = results_of(adapter, "tworuns", paths)
    assert (first.measurement.counts.requests_ok, second.measurement.counts.failures.http_4xx) == (100, 100)
    assert first.measurement.concurrency == second.measurement.concurrency == 2  # not 4: the clients of one run
    with pytest.raises(ParseError, match="cannot be merged"):
        results_of(adapter, "tworuns", paths, merge_runs=True)


def test_a_log_of_another_run_is_left_out(tmp_path):
    summary = (FIXTURES / TOOL / "1.52.0-log-404.txt").read_bytes()
    (tmp_path / "mixed.txt").write_bytes(summary)
    (tmp_path / "mixed.log").write_bytes((FIXTURES / TOOL / "1.52.0-log-ok.log").read_bytes())
    adapter = registry.get(TOOL)
    raw = raw_from_files(adapter, "mixed", [tmp_path / "mixed.txt", tmp_path / "mixed.log"])
    m = parse_checked(adapter, raw)
    assert m.histogram is None and m.latency.percentiles.p50_ms is None and adapter.timings(raw) is None
    assert any("holds 2000 rows, not the 200 requests done" in n for n in m.notes)


def test_the_log_is_told_as_h2loads_and_joins_its_summary():
    paths = sorted((FIXTURES / TOOL).glob("1.52.0-log-ok.*"))
    with pytest.warns(Notice, match="read as h2load output"):
        found = runs(paths, registry.adapters())
    assert [(run.adapter.name, len(run.paths)) for run in found] == [(TOOL, 3)]
