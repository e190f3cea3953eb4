"""httperf with several calls per connection (--num-calls, --burst-length, --wsess): its requests
and replies are the counts, not its connections; and output appended to by two runs. Over output
recorded from the real httperf 0.9.0 (commands in fixtures/httperf/CASES.tsv)."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from helpers.tool_cells import parsed
from toolbench.cli.commands import results_of
from toolbench.contract import registry
from toolbench.errors import ParseError
from toolbench.record.schema import Fidelity

TOOL = "httperf"


def test_requests_not_connections_are_the_counts():
    m = parsed(TOOL, "0.9.0-calls")  # 50 connections of 10 calls
    assert (m.counts.requests_total, m.counts.requests_ok) == (500, 500) and m.rates.rps == 983.1
    assert m.latency.mean_ms == m.latency.ttfb_mean_ms == 2.1  # response 2.1 + transfer 0.0
    assert m.fidelity["latency.mean_ms"] is Fidelity.DERIVED
    # the connection times span ten requests each: not a request's latency
    assert m.latency.max_ms is None and m.latency.percentiles.p50_ms is None
    assert any("connection times (min 0.6, avg 21.2, max 63.8" in n and "10 calls each" in n for n in m.notes)
    assert parsed(TOOL, "0.9.0-calls-404").counts.failures.http_4xx == 200
    assert parsed(TOOL, "0.9.0-calls-burst").counts.requests_total == 200


def test_a_connection_closed_after_each_reply_fails_the_request_sent_on_it():
    m = parsed(TOOL, "0.9.0-calls-close")  # HTTP/1.0: 10 connections, 20 requests, 10 replies, 10 resets
    assert (m.counts.requests_total, m.counts.requests_ok, m.counts.failures.reset) == (20, 10, 10)


@pytest.mark.parametrize("case, cause", [("0.9.0-calls-timeout", "timeout"),
                                         ("0.9.0-calls-unreachable", "timeout"),
                                         ("0.9.0-calls-refused", "connect")])
def test_a_failed_connection_fails_one_request(case, cause):
    m = parsed(TOOL, case)
    conns = {"0.9.0-calls-refused": 20}.get(case, 4)
    assert m.counts.requests_total == m.counts.requests_failed == getattr(m.counts.failures, cause) == conns
    assert m.latency.mean_ms is None and not any("connection times" in n for n in m.notes)
    sent_none = case != "0.9.0-calls-timeout"  # the silent server took each request; the others none
    assert (m.fidelity.get("counts.requests_total") is Fidelity.DERIVED) == sent_none
    assert any("failed before sending a request" in n for n in m.notes) == sent_none


def test_sessions_are_read_as_several_calls():
    m = parsed(TOOL, "0.9.0-wsess")
    assert m.counts.requests_total == m.counts.requests_ok == 50 and m.latency.mean_ms == 5.3
    assert any("sessions of 5 calls (--wsess)" in n for n in m.notes)
    assert any("httperf ran sessions: 10 of 10 done" in n for n in m.notes)


def test_one_call_per_connection_reads_as_it_always_did():
    m = parsed(TOOL, "0.9.0-ok")
    assert m.counts.requests_total == 200 and m.latency.percentiles.p50_ms == 2.5 and m.latency.max_ms == 23.2
    refused = parsed(TOOL, "0.9.0-refused")
    assert refused.counts.requests_total == refused.counts.failures.connect == 20


def test_two_runs_in_one_output_are_two_results_never_mixed():
    adapter = registry.get(TOOL)
    paths = sorted((FIXTURES / TOOL).glob("0.9.0-tworuns.*"))
    first, second = results_of(adapter, "tworuns", paths)
    assert (first.measurement.counts.requests_total, first.measurement.latency.max_ms) == (50, 24.2)
    assert (second.measurement.counts.requests_total, second.measurement.counts.failures.http_4xx) == (200, 200)
    assert second.measurement.latency.max_ms is None  # ten calls each: no request's max
    with pytest.raises(ParseError, match="cannot be merged"):
        results_of(adapter, "tworuns", paths, merge_runs=True)


def test_two_summaries_without_their_command_lines_are_refused(tmp_path):
    adapter = registry.get(TOOL)
    text = (FIXTURES / TOOL / "0.9.0-tworuns.txt").read_text()
    kept = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("httperf --"))
    (tmp_path / "bare.txt").write_text(kept)
    with pytest.raises(ParseError, match="2 summaries without httperf's command line"):
        results_of(adapter, "bare", [tmp_path / "bare.txt"])
