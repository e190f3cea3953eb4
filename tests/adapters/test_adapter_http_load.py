"""http_load's adapter over output recorded from the real http_load 27jun2014
(commands in fixtures/http_load/README.md and CASES.tsv)."""
import dataclasses
import json
import subprocess

import pytest

from conftest import FIXTURES, REPO, recorded
from toolbench.adapters import http_load
from toolbench.contract.adapter import Found, Missing, RawOutput
from toolbench.contract.cell import Cell
from toolbench.contract.host import Captured
from toolbench.errors import ParseError
from toolbench.record.derive import cell_status, complete
from toolbench.record.schema import Fidelity, Status
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec

CASES = ("404", "p10_checksum", "p10_fetches", "p10_seconds5", "p1_fetches", "p50_fetches",
         "rate100_seconds5", "refused", "slow_p10")


def parse(case: str):
    return complete(http_load.parse(recorded("http_load", f"27jun2014-{case}")))


def verdict(case: str) -> Status:
    raw = recorded("http_load", f"27jun2014-{case}")
    status, _ = cell_status(complete(http_load.parse(raw)), 0, timed_out=False, interrupted=False,
                      timeout_s=10, stderr=raw.stderr)
    return status


def test_fixed_fetch_count_run():
    m = parse("p10_fetches")
    assert m.counts.requests_total == 20000 and m.counts.requests_ok == 20000 and m.counts.requests_failed == 0
    assert m.counts.status_codes == {200: 20000}
    assert m.concurrency == 10
    assert m.timing.duration_s == 0.969328
    assert m.rates.rps == 20632.9
    assert m.rates.rps_derived == pytest.approx(20000 / 0.969328)
    assert m.transfer.received_bytes == 260000 and m.transfer.received_bytes_per_s == 268227
    assert m.latency.connect_mean_ms == 0.0971849 and m.latency.ttfb_mean_ms == 0.245927
    assert "msecs/connect: 0.0971849 mean, 4.424 max, 0.018 min" in m.notes
    assert "msecs/first-response: 0.245927 mean, 4.424 max, 0.071 min" in m.notes
    assert m.fidelity["rates.rps_derived"] is Fidelity.DERIVED


def test_whole_request_latency_is_absent_not_zero():
    m = parse("p1_fetches")
    lat = m.latency
    assert (lat.min_ms, lat.mean_ms, lat.max_ms, lat.stdev_ms) == (None, None, None, None)
    assert lat.percentiles.p50_ms is None and lat.percentiles.p99_ms is None
    assert m.histogram is None and m.series == []
    assert m.transfer.sent_bytes is None
    assert m.latency.connect_mean_ms == 0.0527144 and m.concurrency == 1


def test_g_formatted_byte_count():
    m = parse("p10_seconds5")
    assert m.counts.requests_total == 108568
    assert m.transfer.received_bytes == 1411380  # "1.41138e+06": six significant digits
    assert any("1.41138e+06" in note for note in m.notes)
    assert m.timing.duration_s == 5.00008 and m.rates.rps == 21713.3


def test_rate_run_reports_its_own_max_parallel():
    m = parse("rate100_seconds5")
    assert m.counts.requests_total == 499 and m.counts.requests_ok == 499
    assert m.rates.rps == 99.7979 and m.concurrency == 1
    assert m.transfer.received_bytes_per_s == 1297.37


def test_every_connection_refused_is_a_failed_cell_despite_exit_code_0():
    m = parse("refused")
    assert m.counts.requests_total == 10 and m.counts.requests_ok == 0 and m.counts.requests_failed == 10
    assert m.counts.failures.connect == 10
    assert m.counts.status_codes == {}
    # The run took 0.28 ms: http_load printed no fetches/sec line and no msecs lines.
    assert m.rates.rps is None
    assert m.latency.connect_mean_ms is None and m.latency.ttfb_mean_ms is None
    assert any("no fetches/sec line" in note for note in m.notes)
    assert verdict("refused") is Status.FAILED


def test_404_is_http_4xx_and_fails_the_cell():
    m = parse("404")
    assert m.counts.requests_ok == 0 and m.counts.failures.http_4xx == 1000
    assert m.counts.status_codes == {404: 1000}
    assert m.counts.failures.connect == 0
    assert verdict("404") is Status.FAILED


def test_slow_target_connect_times():
    m = parse("slow_p10")
    assert m.counts.requests_ok == 200 and m.rates.rps == 192.82
    assert m.latency.connect_mean_ms == 20.2429 and m.latency.ttfb_mean_ms == 2.44724
    assert "msecs/connect: 20.2429 mean, 1027.71 max, 0.018 min" in m.notes


@pytest.mark.parametrize("case", CASES)
def test_every_recorded_case_parses(case):
    m = parse(case)
    assert m.tool == "http_load"
    assert m.counts.requests_total == m.counts.requests_ok + m.counts.requests_failed
    failures = dataclasses.asdict(m.counts.failures)
    assert sum(v for v in failures.values() if v) == m.counts.requests_failed


def test_usage_text_is_a_clear_parse_error():
    with pytest.raises(ParseError, match="usage text"):
        parse("usage")


def test_output_with_only_error_lines_is_a_clear_parse_error():
    stderr = (FIXTURES / "http_load" / "27jun2014-refused.stderr.txt").read_text()
    with pytest.raises(ParseError, match=r"only per-URL errors.*Connection refused \(10x\)"):
        http_load.parse(RawOutput(stdout="", stderr=stderr, exit_code=0, source="refused-stderr-only"))


def test_empty_output_is_a_clear_parse_error():
    with pytest.raises(ParseError, match="no summary line"):
        http_load.parse(RawOutput(stdout="", stderr="", exit_code=0))


class UsageHost:
    """Answers as an installed http_load does when run bare (the recorded usage case)."""

    label = "fake"

    def __init__(self, stderr: str) -> None:
        self.stderr = stderr

    def which(self, program: str) -> str | None:
        return f"/usr/local/bin/{program}"

    def capture(self, argv: list[str], timeout_s: float = 10.0) -> Captured:
        assert argv == ["/usr/local/bin/http_load"]  # the program found, run bare
        return Captured(1, "", self.stderr)


def test_detect_recognises_the_usage_text():
    usage = (FIXTURES / "http_load" / "27jun2014-usage.stderr.txt").read_text()
    assert http_load.ADAPTER.detect(UsageHost(usage)) == Found("/usr/local/bin/http_load", "unknown")
    other = http_load.ADAPTER.detect(UsageHost("some other program\n"))
    assert isinstance(other, Missing) and "did not print http_load's usage" in other.reason


def cell(**changes) -> Cell:
    base = Cell(scenario="t", tool="http_load", concurrency=25, keepalive=False, repetition=1,
                request=RequestSpec(), stop=StopSpec(duration_s=3), timeout_s=60,
                url="http://127.0.0.1:8080/")
    return dataclasses.replace(base, **changes)


FOUND = Found("/usr/local/bin/http_load", "unknown")


def test_build_parallel_seconds_and_url_file(tmp_path):
    inv = http_load.ADAPTER.build(cell(options={"timeout_s": 5}), tmp_path, FOUND)
    assert inv.argv == ["/usr/local/bin/http_load", "-timeout", "5", "-parallel", "25", "-seconds", "3", "urls.txt"]
    assert inv.files == {"urls.txt": "http://127.0.0.1:8080/\n"}


def test_build_rate_and_fetches(tmp_path):
    inv = http_load.ADAPTER.build(cell(rate_rps=200.0, stop=StopSpec(requests=1000)), tmp_path, FOUND)
    assert inv.argv == ["/usr/local/bin/http_load", "-timeout", "30", "-rate", "200", "-fetches", "1000", "urls.txt"]


@pytest.mark.parametrize("changes, reason", [
    ({"keepalive": True}, "no keep-alive"),
    ({"request": RequestSpec(method="POST", body="x")}, "plain GET"),
    ({"request": RequestSpec(headers={"X-A": "1"})}, "plain GET"),
    ({"rate_rps": 2.5}, "whole number"),
    ({"rate_rps": 5000.0}, "from 1 to 1000"),
    ({"stop": StopSpec(duration_s=2.5)}, "whole seconds"),
])
def test_unsupported_cells_say_why(changes, reason):
    support = http_load.ADAPTER.supports(cell(**changes))
    assert not support.ok and reason in support.reason


def test_supported_cell():
    assert http_load.ADAPTER.supports(cell()).ok
    assert http_load.ADAPTER.supports(cell(rate_rps=100.0)).ok


def test_cli_parse_json_over_fixtures():
    folder = FIXTURES / "http_load"
    files = [folder / "27jun2014-p10_fetches.txt", folder / "27jun2014-p10_fetches.stderr.txt",
             folder / "27jun2014-refused.txt", folder / "27jun2014-refused.stderr.txt"]
    proc = subprocess.run([str(REPO / ".venv" / "bin" / "toolbench"), "parse", "--tool", "http_load",
                           *map(str, files), "--format", "json"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    results = {r["identity"]["cell_id"]: r for r in json.loads(proc.stdout)}
    ok, refused = results["27jun2014-p10_fetches"], results["27jun2014-refused"]
    assert ok["outcome"]["status"] == "ok" and ok["measurement"]["counts"]["requests_total"] == 20000
    assert ok["measurement"]["rates"]["rps"] == 20632.9
    assert refused["outcome"]["status"] == "failed"
    assert refused["measurement"]["counts"]["failures"]["connect"] == 10


def test_cli_parse_of_usage_output_is_one_line_error(tmp_path):
    folder = FIXTURES / "http_load"
    proc = subprocess.run([str(REPO / ".venv" / "bin" / "toolbench"), "parse", "--tool", "http_load",
                           str(folder / "27jun2014-usage.txt"), str(folder / "27jun2014-usage.stderr.txt")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "usage text" in proc.stderr and "Traceback" not in proc.stderr


def test_requests_per_connection_is_planned_unsupported_with_the_reason():
    support = http_load.ADAPTER.supports(cell(stop=StopSpec(requests_per_connection=10)))
    assert not support.ok and "per connection" in support.reason


def test_first_response_time_is_ttfb_and_the_report_labels_it():
    from toolbench.report import results
    lat = http_load.parse(recorded("http_load", "27jun2014-p10_fetches")).latency
    assert lat.mean_ms is None and lat.ttfb_mean_ms is not None  # no whole-request latency
    shown = results._mean(lat)
    assert shown.flag == "first byte only, not the whole request" and shown.sort is None
