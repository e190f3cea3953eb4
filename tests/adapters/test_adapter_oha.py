"""oha's command and its JSON result, over recorded real output (commands in
tests/fixtures/oha/README.md and CASES.tsv)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from helpers.tool_cells import URL, argv, cell, parsed
from toolbench.adapters import oha as oha_adapter
from toolbench.contract import registry
from toolbench.contract.adapter import Found, RawOutput
from toolbench.contract.checked import parse_checked
from toolbench.errors import ParseError
from toolbench.record.schema import Fidelity, Measurement, Omission
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec

V = "1.16.0"


def as_run(case: str, role: str) -> Measurement:
    """A recording read as the runner hands it over: the JSON file under the role build() gave it."""
    raw = RawOutput(stderr=(FIXTURES / "oha" / f"{V}-{case}.stderr.txt").read_text(),
                    files={role: FIXTURES / "oha" / f"{V}-{case}.json"}, source=case)
    return parse_checked(registry.get("oha"), raw)


# ---- the command ----

def test_closed_cell_runs_a_duration_or_a_count_with_the_json_to_a_file():
    args = argv("oha")
    assert args[:7] == ["/bin/oha", "--no-tui", "--output-format", "json", "-o", "oha.json", "--disable-compression"]
    assert args[args.index("-z") + 1] == "1500ms" and args[args.index("-c") + 1] == "4" and args[-1] == URL
    assert "-q" not in args and "--latency-correction" not in args and "--disable-keepalive" not in args
    assert argv("oha", stop=StopSpec(requests=100))[-3:-1] == ["-n", "100"]


def test_rate_cell_is_one_schedule_timed_from_when_each_request_was_due():
    adapter = registry.get("oha")
    inv = adapter.build(cell("oha", rate_rps=40.0), Path("/x"), Found("/bin/oha", V))
    assert inv.argv[inv.argv.index("-q") + 1] == "40.0" and "--latency-correction" in inv.argv
    assert inv.outputs == {"corrected": "oha.json"}
    plain = adapter.build(cell("oha", rate_rps=2.5, options={"latency_correction": False}), Path("/x"),
                          Found("/bin/oha", V))
    assert plain.argv[plain.argv.index("-q") + 1] == "2.5" and "--latency-correction" not in plain.argv
    assert plain.outputs == {"not_corrected": "oha.json"}
    closed = adapter.build(cell("oha"), Path("/x"), Found("/bin/oha", V))
    assert closed.outputs == {"not_corrected": "oha.json"}


def test_body_goes_through_a_file_and_headers_one_argument_each():
    hostile = "{\"a\": \"$(rm -rf /)\"}\n-H x"
    adapter = registry.get("oha")
    inv = adapter.build(cell("oha", keepalive=False, request=RequestSpec(method="POST", body=hostile,
                                                                         headers={"X-A": "b; -z 1s"})),
                        Path("/x"), Found("/bin/oha", V))
    assert inv.files == {"body": hostile} and hostile not in inv.argv
    args = inv.argv
    assert args[args.index("-D") + 1] == "body" and args[args.index("-m") + 1] == "POST"
    assert args[args.index("-T") + 1] == "application/octet-stream" and "--disable-keepalive" in args
    assert args[args.index("-H") + 1] == "X-A: b; -z 1s" and args.count("-z") == 1


def test_http2_is_a_cell_option_and_has_no_keepalive_off():
    adapter = registry.get("oha")
    assert "--http2" in argv("oha", options={"h2": True}) and "--http2" not in argv("oha")
    assert not adapter.supports(cell("oha", keepalive=False, options={"h2": True})).ok
    assert adapter.supports(cell("oha", rate_rps=0.5)).ok


# ---- the JSON result ----

def recorded(case: str) -> dict:
    return json.loads((FIXTURES / "oha" / f"{V}-{case}.json").read_text())


def test_closed_run_gives_its_counts_bytes_and_reported_percentiles():
    m, data = parsed("oha", f"{V}-ok"), recorded("ok")
    n = data["statusCodeDistribution"]["200"]
    aborted = data["errorDistribution"].get("aborted due to deadline", 0)
    assert m.counts.requests_total == m.counts.requests_ok == n > 0 and m.counts.status_codes == {200: n}
    assert m.transfer.received_bytes == data["summary"]["totalData"] == 13 * n
    assert m.latency.percentiles.p99_ms == data["latencyPercentiles"]["p99"] * 1000.0
    assert m.latency.percentiles.p999_ms == data["latencyPercentiles"]["p99.9"] * 1000.0
    assert m.latency.max_ms == data["summary"]["slowest"] * 1000.0 and m.latency.percentiles.p66_ms is None
    assert m.latency.resolution_ms == 1e-6 and m.timing.duration_s == data["summary"]["total"]
    assert m.fidelity_of("latency.percentiles.p50_ms") is Fidelity.REPORTED
    assert m.fidelity_of("counts.requests_total") is Fidelity.DERIVED and m.rates.rps is None
    assert (f"{aborted} requests oha aborted at the end of its run are not counted" in m.notes) == bool(aborted)
    assert m.coordinated_omission is None  # a bare JSON does not say how oha timed it


def test_rate_run_read_as_the_runner_hands_it_over_says_how_it_was_timed():
    corrected = as_run("rate", "corrected")
    assert corrected.coordinated_omission is Omission.CORRECTED
    assert 0 < corrected.counts.requests_total <= 51  # one schedule: request i due at i/50 s, for 1 s
    plain = as_run("rate-uncorrected", "not_corrected")
    assert plain.coordinated_omission is Omission.NOT_CORRECTED and plain.counts.requests_ok > 0


def test_failures_by_class_and_no_time_without_a_response():
    missing = parsed("oha", f"{V}-404")
    assert missing.counts.failures.http_4xx == missing.counts.requests_failed == 200
    assert missing.counts.status_codes == {404: 200} and missing.latency.mean_ms is not None
    refused = parsed("oha", f"{V}-refused")
    assert refused.counts.failures.connect == refused.counts.requests_failed == refused.counts.requests_total == 20
    assert refused.latency.mean_ms is None and refused.latency.percentiles.p50_ms is None  # oha wrote null
    timeout = parsed("oha", f"{V}-timeout")
    assert timeout.counts.failures.timeout == timeout.counts.requests_failed == 4
    unreachable = parsed("oha", f"{V}-connect-timeout")
    assert unreachable.counts.failures.timeout == unreachable.counts.requests_failed == 4


def test_a_run_cut_short_is_read_when_oha_wrote_it_and_an_error_when_not():
    cut = parsed("oha", f"{V}-cutoff-int")
    assert 0 < cut.counts.requests_total < 500 and cut.counts.requests_ok == cut.counts.requests_total
    with pytest.raises(ParseError, match="no JSON result"):
        parsed("oha", f"{V}-cutoff-kill")


def test_version_and_garbage():
    text = (FIXTURES / "oha" / f"{V}-version.txt").read_text()
    assert oha_adapter._VERSION.search(text).group(1) == V
    data = recorded("ok")
    for bad in ({"200": -1}, {"abc": 1}, {"200": 1.5}, []):
        hostile = dict(data, statusCodeDistribution=bad)
        with pytest.raises(ParseError):
            registry.get("oha").parse(RawOutput(stdout=json.dumps(hostile), source="x"))
