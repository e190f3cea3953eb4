"""Parsers and builders of wrk, hey, h2load and httperf over their recorded real output
(commands in each fixtures folder's README and CASES.tsv)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from helpers.tool_cells import argv, cell, parsed
from toolbench.contract import registry
from toolbench.contract.adapter import Found, RawOutput
from toolbench.contract.checked import parse_checked
from toolbench.errors import ParseError
from toolbench.record import migrate
from toolbench.record.schema import Omission
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec

# ---- wrk ----

def test_wrk_reads_its_done_script_figures_to_the_microsecond():
    m = parsed("wrk", "4.1.0-ok")
    done = json.loads((FIXTURES / "wrk" / "4.1.0-ok.json").read_text())
    assert m.counts.requests_total == m.counts.requests_ok == done["requests"] == 4509
    assert m.latency.percentiles.p999_ms == done["latency_us"]["percentiles"]["99.9"] / 1000.0
    assert m.latency.percentiles.p66_ms == 1.789 and m.latency.min_ms == 0.081
    assert m.latency.resolution_ms == 0.001 and m.transfer.received_bytes == 1118232
    assert m.rates.rps == 4471.72  # the text summary's own figure
    assert m.coordinated_omission is Omission.NOT_CORRECTED and m.concurrency == 4


def test_wrk_text_summary_alone_gives_its_rounded_figures():
    text = (FIXTURES / "wrk" / "4.1.0-ok.txt").read_text()
    m = parse_checked(registry.get("wrk"), RawOutput(stdout=text, source="ok.txt"))
    assert m.counts.requests_total == 4509 and m.latency.percentiles.p50_ms == 0.315
    assert m.latency.percentiles.p66_ms is None and m.latency.max_ms == 15.89
    assert m.latency.resolution_ms == 0.01
    # "1.07MB read": read to the two decimals wrk prints (its done() JSON says 1118232), and said so
    assert m.transfer.received_bytes == round(1.07 * 2 ** 20) == 1121976
    assert any(note.startswith("bytes read from the text summary: two decimals") for note in m.notes)


def test_wrk_404_counts_every_response_failed():
    m = parsed("wrk", "4.1.0-404")
    assert m.counts.requests_ok == 0 and m.counts.failures.http == m.counts.requests_total > 0


def test_wrk_with_no_response_has_no_latency_and_refused_is_a_parse_error():
    m = parsed("wrk", "4.1.0-timeout")
    assert m.counts.requests_total == 0 and m.latency.min_ms is None and m.latency.percentiles.p50_ms is None
    with pytest.raises(ParseError, match="Connection refused"):
        parsed("wrk", "4.1.0-refused")


def test_wrk_command_ships_the_fixed_script_and_closes_when_asked():
    adapter = registry.get("wrk")
    inv = adapter.build(cell("wrk", keepalive=False, request=RequestSpec(headers={"X-A": "b'\"; os.exit()"})),
                        Path("/x"), Found("/bin/wrk", "4"))
    assert inv.files["wrk_done.lua"] == (Path(__file__).parents[2] / "adapters/templates/wrk_done.lua").read_text()
    assert "os.exit" not in inv.files["wrk_done.lua"]  # the header reaches argv only
    assert inv.argv[inv.argv.index("-d") + 1] == "2s" and ["-H", "Connection: close"] == inv.argv[-3:-1]
    assert not adapter.supports(cell("wrk", stop=StopSpec(requests=10))).ok
    assert not adapter.supports(cell("wrk", rate_rps=10.0)).ok
    assert not adapter.supports(cell("wrk", request=RequestSpec(method="POST", body="x"))).ok



def test_wrk_and_h2load_default_to_a_thread_per_cpu_the_placement_gave_the_generator():
    def threads(tool: str, **kw) -> str:
        words = argv(tool, **kw)
        return words[words.index("-t") + 1]

    assert (threads("wrk"), threads("h2load")) == ("2", "1")  # not placed: as they always were
    assert (threads("wrk", cpus=1), threads("h2load", cpus=3)) == ("1", "3")
    assert threads("wrk", cpus=3, options={"threads": 2}) == "2"  # the scenario's option wins
    assert threads("h2load", cpus=8, concurrency=2) == "2"  # never more threads than connections


# ---- hey ----

def test_hey_summary_counts_statuses_and_errors():
    m = parsed("hey", "0.1.4-ok")
    assert m.counts.requests_total == m.counts.requests_ok == 5056 and m.counts.status_codes == {200: 5056}
    assert m.latency.percentiles.p99_ms == pytest.approx(9.8) and m.latency.resolution_ms == 0.1
    refused, timeout = parsed("hey", "0.1.4-refused"), parsed("hey", "0.1.4-timeout")
    assert refused.counts.failures.connect == refused.counts.requests_failed == 20
    assert timeout.counts.failures.timeout == 4 and timeout.latency.mean_ms is None  # hey printed NaN
    assert parsed("hey", "0.1.4-404").counts.failures.http_4xx == 200


def test_hey_csv_rows_go_through_the_per_request_aggregator():
    m = parsed("hey", "0.1.4-ok-csv")
    rows = (FIXTURES / "hey" / "0.1.4-ok-csv.txt").read_text().splitlines()[1:]
    assert m.counts.requests_ok == len(rows) and m.counts.requests_total is None  # failures have no row
    assert m.histogram is not None and m.histogram_resolution_ms == 0.1
    assert sum(s.requests for s in m.series) == len(rows)
    assert m.latency.max_ms == pytest.approx(max(float(r.split(",")[0]) for r in rows) * 1000)
    assert parsed("hey", "0.1.4-404-csv").counts.failures.http_4xx == 200


def test_hey_rate_is_per_worker():
    args = argv("hey", rate_rps=100.0, keepalive=False)
    assert args[args.index("-q") + 1] == "25" and "-disable-keepalive" in args
    assert "-o" not in args and ["-o", "csv"] == argv("hey", options={"per_request": True})[-3:-1]


# ---- h2load ----

def test_h2load_summary():
    m = parsed("h2load", "1.52.0-ok")
    assert m.counts.requests_total == m.counts.requests_ok == 6912 and m.latency.max_ms == 17.18
    assert m.latency.min_ms == 0.055 and m.latency.percentiles.p50_ms is None and m.concurrency == 4
    timeout = parsed("h2load", "1.52.0-timeout")
    assert timeout.counts.failures.timeout == 2 and timeout.counts.requests_failed == 4
    assert timeout.latency.mean_ms is None  # h2load printed zeros: nothing was timed
    assert parsed("h2load", "1.52.0-404").counts.failures.http_4xx == 200
    assert parsed("h2load", "1.52.0-refused").counts.requests_ok == 0


def test_h2load_command():
    assert "--h1" in argv("h2load") and "--h1" not in argv("h2load", options={"h2": True})
    assert argv("h2load", stop=StopSpec(requests=100))[-3:-1] == ["-n", "100"]
    assert not registry.get("h2load").supports(cell("h2load", rate_rps=5.0)).ok
    assert not registry.get("h2load").supports(cell("h2load", keepalive=False)).ok  # it hangs at the end
    assert ["-H", "Connection: close"] == argv("h2load", keepalive=False, stop=StopSpec(requests=8))[-3:-1]


# ---- httperf ----

def test_httperf_summary():
    m = parsed("httperf", "0.9.0-ok")
    assert m.counts.requests_total == m.counts.requests_ok == 200 and m.rates.rps == 199.6
    assert m.latency.percentiles.p50_ms == 2.5 and m.latency.ttfb_mean_ms == 4.4
    assert parsed("httperf", "0.9.0-refused").counts.failures.connect == 20
    assert parsed("httperf", "0.9.0-timeout").counts.failures.timeout == 4
    assert parsed("httperf", "0.9.0-404").counts.failures.http_4xx == 50


def test_httperf_median_outside_its_min_max_is_left_out_not_a_parse_error():
    # httperf's median is the middle of a 1 ms bin: 0.5 ms when every time is under 1 ms.
    m = parsed("httperf", "0.9.0-median-above-max")
    assert m.counts.requests_ok == 1000 and m.latency.max_ms == 0.3 and m.latency.percentiles.p50_ms is None
    assert any("median, 0.5 ms, is the middle of its 1 ms histogram bin" in n for n in m.notes)


def test_httperf_runs_the_open_model_only():
    adapter = registry.get("httperf")
    assert not adapter.supports(cell("httperf", keepalive=False)).ok
    assert not adapter.supports(cell("httperf", rate_rps=10.0)).ok  # keep-alive
    args = argv("httperf", keepalive=False, rate_rps=40.0, request=RequestSpec(headers={"X-A": "b"}))
    assert args[args.index("--num-conns") + 1] == "60" and args[args.index("--uri") + 1] == "/x?y=1"
    assert args[args.index("--add-header") + 1] == "X-A: b\\n"
    hostile = RequestSpec(headers={"X-A": "b\\r\\nHost: evil"})
    assert not adapter.supports(cell("httperf", keepalive=False, rate_rps=1.0, request=hostile)).ok


def test_version_2_records_migrate_with_their_coordinated_omission():
    old = {"schema_version": 2, "measurement": {"tool": "engine", "latency_uncorrected": {"mean_ms": 1.0}}}
    assert migrate.result(old)["measurement"]["coordinated_omission"] == "corrected"
    assert "coordinated_omission" not in migrate.result({"schema_version": 2, "measurement": {"tool": "ab"}})[
        "measurement"]


# ---- bombardier ----

def test_bombardier_json_result():
    m = parsed("bombardier", "1.2.6-ok")
    assert m.counts.requests_total == m.counts.requests_ok == 1293 and m.latency.percentiles.p99_ms is not None
    assert m.latency.resolution_ms == 0.001 and m.transfer.received_bytes > 0 and m.rates.rps is None
    assert m.concurrency == 2 and m.url == "http://127.0.0.1:57301/"
    refused, timeout = parsed("bombardier", "1.2.6-refused"), parsed("bombardier", "1.2.6-timeout")
    assert refused.counts.failures.connect == refused.counts.requests_failed == 20
    assert timeout.counts.failures.timeout == 4 and timeout.counts.requests_ok == 0
    assert parsed("bombardier", "1.2.6-404").counts.failures.http_4xx == 200
    with pytest.raises(ParseError, match="version unspecified"):
        parsed("bombardier", "1.2.6-version")


def test_bombardier_command():
    args = argv("bombardier", rate_rps=50.0, keepalive=False, request=RequestSpec(method="POST", body="{}"))
    assert args[args.index("-r") + 1] == "50" and "Connection: close" in args and args[args.index("-f") + 1] == "body"
    assert not registry.get("bombardier").supports(cell("bombardier", rate_rps=2.5)).ok
