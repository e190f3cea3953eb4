"""ab's parser over output recorded from the real ab 2.3 (commands in fixtures/ab/README.md)."""
import dataclasses
from pathlib import Path

import pytest

from conftest import recorded
from toolbench.adapters import ab
from toolbench.contract.adapter import Found, RawOutput
from toolbench.contract.cell import Cell
from toolbench.contract.checked import parse_checked
from toolbench.errors import ParseError
from toolbench.record import invariants
from toolbench.record.derive import cell_status, complete
from toolbench.record.schema import Fidelity, Status, TimesRow
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec


def parse(case: str, **files: str):
    return complete(ab.parse(recorded("ab", f"2.3-{case}", **files)))


def test_keepalive_stdout_with_percentile_csv():
    m = parse("keepalive", csv="csv")
    assert m.tool_version == "2.3"
    assert m.url == "http://127.0.0.1:18080/" and m.concurrency == 10
    assert m.counts.requests_total == 20000 and m.counts.requests_ok == 20000 and m.counts.requests_failed == 0
    assert m.rates.rps == 68280.13
    assert m.rates.rps_derived == pytest.approx(20000 / 0.293)
    assert m.timing.duration_s == 0.293
    assert m.transfer.received_bytes == 4960000
    # The mean of the requests' own times, from the -e curve (the table says 0 ms), not "Time
    # per request" (0.146 ms: 10 connections / 68280.13 requests/s, the rate turned over).
    assert m.latency.mean_ms == pytest.approx(0.15535) and m.fidelity["latency.mean_ms"] is Fidelity.DERIVED
    # The -e CSV has microsecond resolution where stdout's table says 0 ms.
    assert m.latency.percentiles.p50_ms == 0.128 and m.latency.percentiles.p99_ms == 0.322
    assert m.latency.max_ms == 2.829
    assert m.latency.resolution_ms == 0.001
    assert m.latency.percentiles.p999_ms is None  # ab has no 99.9th percentile
    assert m.histogram is None and m.series == []
    assert m.counts.status_codes == {}  # ab does not tell status codes apart


def test_stdout_alone_keeps_whole_millisecond_resolution():
    m = parse("keepalive")
    assert m.latency.percentiles.p50_ms == 0.0
    assert m.latency.resolution_ms == 1.0  # "0" here means under one millisecond
    assert m.latency.max_ms == 3.0


def test_gnuplot_tsv_gives_histogram_and_series():
    m = parse("nokeepalive", csv="csv", tsv="tsv")
    assert m.counts.requests_total == 5000
    assert m.histogram is not None
    from toolbench.record import histogram
    assert histogram.decode(m.histogram).get_total_count() == 5000
    assert sum(s.requests for s in m.series) == 5000
    assert m.fidelity["histogram"] is Fidelity.DERIVED
    assert m.latency.percentiles.p50_ms == 0.374  # the CSV's figure, not the histogram's


def test_non_2xx_responses_are_failures_not_successes():
    m = parse("404")
    assert m.counts.requests_total == 1000
    assert m.counts.requests_ok == 0
    assert m.counts.failures.http == 1000
    status, error = cell_status(m, 0, timed_out=False, interrupted=False, timeout_s=10, stderr="")
    assert status is Status.FAILED and "no successful request: 1000 http" in error


def test_length_failures_of_dynamic_pages_are_noted_not_counted():
    m = parse("failed-length")
    assert m.counts.requests_total == 500 and m.counts.requests_ok == 500
    assert any("454 responses as failed" in note for note in m.notes)


def test_refused_connection_leaves_a_partial_header_and_no_counts():
    raw = recorded("ab", "2.3-refused")
    m = complete(ab.parse(raw))
    assert m.counts.requests_total is None and m.rates.rps is None  # absent, not 0
    assert "Connection refused (111)" in m.notes[-1]
    status, error = cell_status(m, 111, timed_out=False, interrupted=False, timeout_s=10, stderr=raw.stderr)
    assert status is Status.FAILED and error == "exit code 111: apr_socket_recv: Connection refused (111)"


def test_a_row_ab_read_past_its_table_is_its_longest_request():
    """50 requests: ab's -e file says 99% = 0.257 ms beside 98% = 4.966 ms (it read one past
    its table); that row is the longest request, and the figures are in order."""
    raw = recorded("ab", "2.3-small-n", csv="csv", tsv="tsv")
    assert "\n99,0.257\n" in raw.files["csv"].read_text()
    m = parse_checked(ab.ADAPTER, raw)
    assert m.latency.percentiles.p98_ms == m.latency.percentiles.p99_ms == m.latency.max_ms == 4.966
    assert any("reads past its table for the 99% row of 50 requests" in note for note in m.notes)


def test_t_without_n_stops_at_50000_and_says_so():
    m = parse("timelimit")
    assert m.counts.requests_total == 50000
    assert any("50,000" in note for note in m.notes)
    assert not any("50,000" in note for note in parse("timelimit-n").notes)


def test_the_published_study_output_parses():
    m = parse("seed-threading-c500")
    assert m.counts.requests_total == 10000 and m.concurrency == 500
    assert m.latency.percentiles.p98_ms == 1534 and m.latency.max_ms == 2132
    assert m.latency.connect_mean_ms == 33 and m.latency.ttfb_mean_ms == 508
    assert m.latency.stdev_ms == 201.8 and m.latency.min_ms == 500


@pytest.mark.parametrize("case, total, time_per_request", [
    ("seed-threading-c500", (500, 541, 201.8, 501, 2132), 556.166),
    ("seed-gevent-c500", (500, 557, 204.1, 512, 1525), 565.584),
    ("seed-gevent-c1000", (500, 695, 492.5, 517, 3521), 740.623),
    ("seed-gevent-c1500", (500, 736, 406.7, 520, 1712), 793.536),
])
def test_the_study_connection_times_table_is_kept_and_its_total_mean_is_the_mean(case, total, time_per_request):
    m = invariants.check(parse(case))
    t = m.latency.connection_times
    assert (t.total.min_ms, t.total.mean_ms, t.total.sd_ms, t.total.median_ms, t.total.max_ms) == total
    assert m.latency.mean_ms == total[1] != time_per_request
    assert "latency.mean_ms" not in m.fidelity  # as ab reported it


def test_the_whole_table_of_the_threading_study():
    t = parse("seed-threading-c500").latency.connection_times
    rows = [(r.min_ms, r.mean_ms, r.sd_ms, r.median_ms, r.max_ms) for r in (t.connect, t.processing, t.waiting)]
    assert rows == [(0, 33, 177.0, 0, 1000), (500, 508, 33.9, 501, 1132), (500, 508, 33.9, 501, 1132)]


def test_a_table_row_out_of_order_is_a_parse_error():
    m = parse("seed-threading-c500")
    times = dataclasses.replace(m.latency.connection_times, connect=TimesRow(10.0, 33.0, 1.0, 0.0, 5.0))  # mean above max
    with pytest.raises(ParseError, match="connection_times.connect.max_ms: 5 is below mean_ms"):
        invariants.check(dataclasses.replace(m, latency=dataclasses.replace(m.latency, connection_times=times)))


def test_a_reset_without_r_ends_ab_and_is_a_reset():
    m = parse("reset")
    assert m.counts.failures.reset == 1 and m.counts.requests_total is None
    assert any("connection reset" in note for note in m.notes)


def test_garbage_is_a_parse_error():
    from toolbench.contract.adapter import RawOutput
    with pytest.raises(ParseError, match="ab: cannot parse output .*no ApacheBench banner"):
        ab.parse(RawOutput(stdout="hello\n", source="x"))


def test_a_damaged_csv_is_a_parse_error(tmp_path: Path):
    from toolbench.contract.adapter import RawOutput
    bad = tmp_path / "p.csv"
    bad.write_text("Percentage served,Time in ms\n0,0.1\n1;0.2\n")
    with pytest.raises(ParseError, match="line 3"):
        ab.parse(RawOutput(stdout="", files={"csv": bad}))


def cell(**changes) -> Cell:
    base = dict(scenario="s", tool="ab", concurrency=8, keepalive=True, repetition=1, request=RequestSpec(),
                stop=StopSpec(duration_s=5), timeout_s=40, url="http://127.0.0.1:8080/")
    base.update(changes)
    return Cell(**base)


FOUND = Found("/opt/ab/bin/ab", "2.3")


def test_build_is_pure_and_complete(tmp_path: Path):
    inv = ab.ADAPTER.build(cell(), tmp_path, FOUND)
    assert inv.argv[:3] == ["/opt/ab/bin/ab", "-c", "8"]  # the path detection found
    assert "-k" in inv.argv and "-r" in inv.argv
    # -t alone would cap the run at 50,000 requests: an explicit -n lifts the cap.
    assert inv.argv[inv.argv.index("-t") + 1] == "5" and int(inv.argv[inv.argv.index("-n") + 1]) >= 1_000_000
    assert inv.outputs == {"csv": "percentiles.csv", "tsv": "requests.tsv"}
    assert inv.argv[-1] == "http://127.0.0.1:8080/"
    assert list(tmp_path.iterdir()) == []


def test_continue_on_error_false_drops_r(tmp_path: Path):
    assert "-r" not in ab.ADAPTER.build(cell(options={"continue_on_error": False}), tmp_path, FOUND).argv
    assert "-r" in ab.ADAPTER.build(cell(options={"continue_on_error": True}), tmp_path, FOUND).argv


def test_build_post_with_body_and_headers(tmp_path: Path):
    req = RequestSpec(method="POST", body='{"a":1}', content_type="application/json", headers={"X-T": "1"})
    inv = ab.ADAPTER.build(cell(request=req, keepalive=False, stop=StopSpec(requests=100)), tmp_path, FOUND)
    assert "-k" not in inv.argv
    assert inv.files == {"body": '{"a":1}'}
    assert inv.argv[inv.argv.index("-p") + 1] == "body"
    assert inv.argv[inv.argv.index("-T") + 1] == "application/json"
    assert inv.argv[inv.argv.index("-H") + 1] == "X-T: 1"
    assert inv.argv[inv.argv.index("-n") + 1] == "100"


def test_unsupported_combinations_say_why():
    assert not ab.ADAPTER.supports(cell(rate_rps=100.0)).ok
    assert "DELETE" in ab.ADAPTER.supports(cell(request=RequestSpec(method="DELETE", body="x"))).reason
    assert ab.ADAPTER.supports(cell()).ok


def test_build_requests_per_connection_is_concurrency_times_n(tmp_path: Path):
    inv = ab.ADAPTER.build(cell(concurrency=8, stop=StopSpec(requests_per_connection=10)), tmp_path, FOUND)
    assert inv.argv[inv.argv.index("-n") + 1] == "80" and "-t" not in inv.argv


def _g_times(case: str) -> list[int]:
    lines = (Path(__file__).parents[1] / "fixtures/ab" / f"2.3-{case}.tsv").read_text().splitlines()[1:]
    return [int(line.split("\t")[4]) for line in lines]


@pytest.mark.parametrize("case", ["seconds-gnuplot", "slow", "keepalive-gnuplot"])
def test_the_g_file_alone_counts_its_rows_and_says_failures_are_unknown(case):
    path = Path(__file__).parents[1] / "fixtures/ab" / f"2.3-{case}.tsv"
    m = complete(ab.parse(RawOutput(files={"tsv": path}, source=case)))
    times = _g_times(case)
    assert m.counts.requests_total == len(times)
    assert m.counts.requests_ok is None and m.counts.requests_failed is None  # unknown, not 0
    assert m.fidelity["counts.requests_total"] is Fidelity.DERIVED
    assert any(f"its {len(times)} rows are the completed requests" in n and "failures unknown" in n for n in m.notes)
    assert (m.latency.min_ms, m.latency.max_ms) == (min(times), max(times))
    assert m.latency.mean_ms == pytest.approx(sum(times) / len(times))
    assert cell_status(m, 0, timed_out=False, interrupted=False, timeout_s=10, stderr="") == (Status.OK, None)


def test_without_e_the_mean_comes_from_the_g_rows_not_the_whole_ms_table():
    m = parse("seconds-gnuplot", tsv="tsv")
    times = _g_times("seconds-gnuplot")
    assert m.latency.connection_times.total.mean_ms == 5  # ab's table: the mean rounded to the whole ms
    assert m.latency.mean_ms == pytest.approx(sum(times) / len(times)) == pytest.approx(5.468, abs=5e-4)
    assert m.fidelity["latency.mean_ms"] is Fidelity.DERIVED
    assert any(note.startswith("mean from ab -g's 2169 per-request times: 5.468 ms") and note.endswith(": 5 ms")
               for note in m.notes)
    # With -e the curve's mean, to the microsecond, stays.
    both = parse("nokeepalive", csv="csv", tsv="tsv")
    assert both.latency.mean_ms == parse("nokeepalive", csv="csv").latency.mean_ms
    assert not any(note.startswith("mean from ab -g") for note in both.notes)
