"""bombardier's output in the forms people keep, over output recorded from the real tool
(v1.2.6 and v1.2.4; commands in fixtures/bombardier/CASES.tsv, how each was built in its README):
its text result with and without -l and its intro, the JSON one after its intro, and output
appended to by two runs."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from helpers.tool_cells import parsed
from toolbench.cli.commands import results_of
from toolbench.contract import registry
from toolbench.contract.runs_found import runs
from toolbench.errors import Notice, ParseError

TOOL = "bombardier"


def results(case: str, merge: bool = False):
    adapter = registry.get(TOOL)
    paths = sorted(p for p in (FIXTURES / TOOL).iterdir() if p.name.startswith(f"{case}."))
    return results_of(adapter, str(FIXTURES / TOOL / case), paths, merge)


def test_text_result_alone_reads_counts_and_latency_and_says_what_it_lacks():
    m = parsed(TOOL, "1.2.6-text-ok")  # -p r, no -l
    assert (m.counts.requests_total, m.counts.requests_ok) == (500, 500)
    assert (m.latency.mean_ms, m.latency.stdev_ms, m.latency.max_ms) == pytest.approx((0.07963, 0.0431, 0.644))
    assert m.latency.percentiles.p50_ms is None and m.latency.resolution_ms == 0.001
    assert m.timing.duration_s is None and m.rates.rps is None and m.transfer.received_bytes is None
    said = " | ".join(m.notes)
    assert "Reqs/sec, avg 24138.56, stdev 0.00, max 24138.56" in said and "Throughput, 7.16MB/s" in said
    assert "no duration, rate or bytes" in said and "only with -l" in said


def test_text_result_with_latency_distribution():
    m = parsed(TOOL, "1.2.6-text-ok-l")
    pcts = m.latency.percentiles
    assert (pcts.p50_ms, pcts.p75_ms, pcts.p99_ms) == (0.091, 0.121, 3.39) and m.latency.max_ms == 10.62
    assert m.latency.resolution_ms == 0.01  # two decimals of ms, the coarsest unit printed
    assert not any("only with -l" in n for n in m.notes)


def test_default_output_with_intro_and_progress_gives_url_and_connections():
    timed = parsed(TOOL, "1.2.6-text-default")
    assert timed.counts.requests_total == 17469 and timed.concurrency == 2 and timed.url.startswith("http://127.0.0.1:")
    assert timed.timing.duration_s is None and "it was asked to run for 1s" in timed.notes
    counted = parsed(TOOL, "1.2.6-text-default-l")
    assert counted.counts.requests_total == 500 and counted.latency.percentiles.p99_ms == 6.42


@pytest.mark.parametrize("version", ["1.2.6", "1.2.4"])
def test_text_failures_come_from_others_and_the_errors_block(version):
    refused = parsed(TOOL, f"{version}-text-refused")
    assert refused.counts.failures.connect == refused.counts.requests_failed == 20
    timeout = parsed(TOOL, f"{version}-text-timeout")
    assert timeout.counts.failures.timeout == timeout.counts.requests_total == 4
    assert timeout.latency.max_ms == 5010.0 and timeout.latency.resolution_ms == 10.0  # "5.01s"


def test_text_404_and_the_timeout_with_intro():
    assert parsed(TOOL, "1.2.6-text-404").counts.failures.http_4xx == 200
    m = parsed(TOOL, "1.2.6-text-timeout-default")
    assert m.counts.failures.timeout == 4 and m.concurrency == 2


def test_older_release_reads_alike():
    text, json_ = parsed(TOOL, "1.2.4-text-ok-l"), parsed(TOOL, "1.2.4-json-ok")
    assert text.counts.requests_total == json_.counts.requests_total == 500
    assert parsed(TOOL, "1.2.4-text-default").counts.requests_ok == 10187
    with pytest.raises(ParseError, match="bombardier said: bombardier version unspecified"):
        parsed(TOOL, "1.2.4-version")


def test_json_after_its_intro_is_read_as_before():
    m = parsed(TOOL, "1.2.6-json-default")
    assert m.counts.requests_total == 200 and m.timing.duration_s == pytest.approx(0.055420743)
    assert any("its rps figures" in n for n in m.notes)


@pytest.mark.parametrize("case", ["1.2.6-text-tworuns", "1.2.6-json-tworuns"])
def test_two_runs_in_one_output_are_two_results_never_mixed(case):
    first, second = results(case)
    assert first.identity.cell_id.endswith("-run1") and second.identity.cell_id.endswith("-run2")
    assert (first.measurement.counts.requests_ok, first.measurement.counts.failures.http_4xx) == (100, 0)
    assert (second.measurement.counts.requests_ok, second.measurement.counts.failures.http_4xx) == (0, 100)
    with pytest.raises(ParseError, match="cannot be merged"):
        results(case, merge=True)


def test_an_intro_without_result_names_what_it_is():
    with pytest.raises(ParseError, match=r"its intro \(`Bombarding \.\.\.`\) but no result.*-p.*nothing on stderr"):
        parsed(TOOL, "1.2.6-text-intro")


@pytest.mark.parametrize("case", ["1.2.6-text-ok", "1.2.6-text-default", "1.2.6-json-tworuns"])
def test_each_form_is_told_as_bombardier_without_tool(case):
    with pytest.warns(Notice, match="read as bombardier output"):
        found = runs([FIXTURES / TOOL / f"{case}.txt"], registry.adapters())
    assert [run.adapter.name for run in found] == [TOOL]
