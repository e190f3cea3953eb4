"""The forms of oha's output a user keeps, read by `toolbench parse` (recorded in
tests/fixtures/oha/, commands in its CASES.tsv and README.md): its text summary in each unit and
layout, several results appended to one file; and its per-request CSV, named instead of read."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from helpers.cli import cli
from helpers.recordings import refused_when_changed
from toolbench.cli.commands import results_of
from toolbench.contract import registry
from toolbench.contract.adapter import CLASSIFY_CHARS, raw_from_files
from toolbench.contract.checked import parse_checked
from toolbench.errors import ParseError
from toolbench.record.schema import Fidelity, Measurement

HERE = FIXTURES / "oha"
ADAPTER = registry.get("oha")


def read(*names: str) -> Measurement:
    return parse_checked(ADAPTER, raw_from_files(ADAPTER, "case", [HERE / name for name in names]))


def results(name: str, merge: bool = False) -> list[Measurement]:
    return [r.measurement for r in results_of(ADAPTER, name, [HERE / name], merge_runs=merge)]


def refusal(*names: str) -> str:
    with pytest.raises(ParseError) as caught:
        read(*names)
    assert "\n" not in str(caught.value)
    return str(caught.value)


def summary_line(name: str, key: str) -> str:
    line = next(line for line in (HERE / name).read_text().splitlines() if line.startswith(f"  {key}:\t"))
    return line.split("\t", 1)[1]


@pytest.mark.parametrize("case, unit, ms, step", [("text-ok", "ms", 1.0, 1e-4), ("text-unit-ms", "ms", 1.0, 1e-4),
                                                  ("text-unit-s", "sec", 1000.0, 0.1),
                                                  ("text-unit-us", "us", 1e-3, 1e-7)])
def test_the_text_summary_in_each_unit(case, unit, ms, step):
    name = f"1.16.0-{case}.txt"
    m = read(name)
    assert m.counts.requests_total == m.counts.requests_ok == 200 and m.counts.status_codes == {200: 200}
    total, slowest = summary_line(name, "Total"), summary_line(name, "Slowest")
    assert total.endswith(f" {unit}") and slowest.endswith(f" {unit}")
    assert m.timing.duration_s == pytest.approx(float(total.split()[0]) * ms / 1000.0)
    assert m.latency.max_ms == pytest.approx(float(slowest.split()[0]) * ms)
    assert m.latency.resolution_ms == pytest.approx(step)  # four decimals of its unit
    assert m.latency.percentiles.p999_ms == pytest.approx(m.latency.max_ms)  # oha's nearest rank, 200 requests
    assert m.latency.min_ms <= m.latency.percentiles.p50_ms <= m.latency.percentiles.p99_ms <= m.latency.max_ms
    assert m.coordinated_omission is None


def test_what_the_summary_prints_and_toolbench_does_not_keep_is_said():
    m = read("1.16.0-text-ok.txt")
    unread = next(n for n in m.notes if n.startswith("not read from the text summary"))
    for said in ("p10, p25, p99.99", "Requests/sec", "Size/request", "Size/sec", "`Response time histogram`",
                 "`Details (average, fastest, slowest)`"):
        assert said in unread
    # `Total data: 2.54 KiB`: 200 responses of 13 bytes, read to the 0.01 KiB oha printed
    assert abs(m.transfer.received_bytes - 200 * 13) <= 0.005 * 1024
    assert m.fidelity_of("transfer.received_bytes") is Fidelity.DERIVED
    assert any("`Total data: 2.54 KiB`, rounded to 0.01 KiB" in n for n in m.notes)
    breakdown = read("1.16.0-text-breakdown.txt")  # --stats-success-breakdown: its extra sections are said
    assert any("`Response time distribution (2xx only)`" in n for n in breakdown.notes)


def test_failures_and_no_time_without_a_response():
    missing = read("1.16.0-text-404.txt")
    assert missing.counts.failures.http_4xx == missing.counts.requests_failed == 200
    refused = read("1.16.0-text-refused.txt", "1.16.0-text-refused.stderr.txt")
    assert refused.counts.failures.connect == refused.counts.requests_total == 20 and refused.counts.requests_ok == 0
    assert refused.latency.mean_ms is None and refused.latency.max_ms is None  # oha printed NaN, inf and -inf
    cut = read("1.16.0-text-duration.txt")  # -z 1s: the requests aborted at the deadline are left out
    assert cut.counts.requests_total == cut.counts.status_codes[200]
    assert any("2 requests oha aborted at the end of its run are not counted" == n for n in cut.notes)


def test_summaries_appended_to_one_file_are_one_result_each_and_not_merged():
    runs = results("1.16.0-text-appended.txt")
    assert [m.counts.status_codes for m in runs] == [{200: 100}, {404: 50}]
    with pytest.raises(ParseError, match="cannot be merged"):
        results("1.16.0-text-appended.txt", merge=True)
    assert "holds 2 summaries" in refusal("1.16.0-text-appended.txt")
    documents = results("1.16.0-json-appended.json")  # --output-format json to stdout, appended
    assert [m.counts.status_codes for m in documents] == [{200: 100}, {404: 50}]
    assert documents[1].transfer.received_bytes == 50 * 153
    assert "holds 2 of them" in refusal("1.16.0-json-appended.json")


def test_the_per_request_csv_is_named_not_read():
    said = refusal("1.16.0-csv.csv", "1.16.0-csv.stderr.txt")
    assert "this is oha's per-request CSV (--output-format csv)" in said and "not those that failed" in said
    assert ADAPTER.recognizes(HERE / "x.csv", (HERE / "1.16.0-csv.csv").read_text())


def test_oha_said_quotes_its_stderr_only():
    said = refusal("1.16.0-cutoff-kill.json", "1.16.0-cutoff-kill.stderr.txt")
    assert said.endswith("nothing on its stderr")
    version = refusal("1.16.0-version.txt")  # `oha 1.16.0` on stdout: no result, and not what oha "said"
    assert "oha 1.16.0" not in version and version.endswith("nothing on its stderr")


def test_its_text_and_csv_are_claimed_and_no_other_tools_files():
    for name in ("1.16.0-text-ok.txt", "1.16.0-text-appended.txt", "1.16.0-json-appended.json", "1.16.0-csv.csv"):
        assert ADAPTER.recognizes(HERE / name, (HERE / name).read_text()[:CLASSIFY_CHARS]), name
    for path in sorted(FIXTURES.glob("*/*")):
        if path.parent.name in ("oha", "stored", "runs") or not path.is_file():
            continue
        assert not ADAPTER.recognizes(path, path.read_text(errors="replace")[:CLASSIFY_CHARS]), path


def test_the_command_reads_a_text_summary_without_being_told_the_tool():
    done = cli("parse", str(HERE / "1.16.0-text-ok.txt"), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "read as oha output" in done.stderr
    assert json.loads(done.stdout)[0]["measurement"]["counts"]["requests_ok"] == 200
    named = cli("parse", str(HERE / "1.16.0-csv.csv"))
    assert named.returncode != 0 and "oha's per-request CSV" in named.stderr


def test_a_summary_whose_figures_disagree_is_an_error(tmp_path: Path):
    refused_when_changed(ADAPTER, HERE / "1.16.0-text-404.txt", (
        ("Success rate:\t100.00%", "Success rate:\t90.00%", "90.00% is not its counts' 200"),
        ("[404] 200 responses", "[404] 200 replies", "expected `[code] count responses`"),
        ("Total:\t138.2196 ms", "Total:\t138.2196 fortnights", "expected a time in one of oha's"),
        ("Total data:\t29.88 KiB", "Total data:\t29.88 KB", "expected a size in bytes")), tmp_path)


def test_oha_1_8_prints_its_times_in_secs():
    name = "1.8.0-text-ok.txt"
    m = read(name)
    assert summary_line(name, "Total").endswith(" secs") and m.latency.resolution_ms == pytest.approx(0.1)
    assert m.counts.requests_ok == 200 and m.latency.max_ms == pytest.approx(
        float(summary_line(name, "Slowest").split()[0]) * 1000.0)
    assert read("1.8.0-text-404.txt").counts.failures.http_4xx == 200
    refused = read("1.8.0-text-refused.txt")
    assert refused.counts.failures.connect == 20 and refused.latency.mean_ms is None
    as_json = read("1.8.0-json-ok.json")  # `-j`, to stdout
    assert as_json.counts.status_codes == {200: 200} and as_json.latency.resolution_ms == 1e-6


def test_oha_0_5_gives_its_success_rate_as_a_ratio_and_a_latency_distribution():
    name = "0.5.8-text-ok.txt"
    m = read(name)
    assert summary_line(name, "Success rate") == "1.0000" and "Latency distribution:" in (HERE / name).read_text()
    assert m.counts.requests_ok == 200 and m.latency.percentiles.p50_ms is not None
    assert m.latency.percentiles.p999_ms is None  # it printed no 99.9
    assert any("p10, p25 (toolbench has no place for them)" in n for n in m.notes)
    assert read("0.5.8-text-404.txt").counts.failures.http_4xx == 200
    refused = read("0.5.8-text-refused.txt")  # `Average: 0.0000 secs` without a response: no time
    assert refused.counts.failures.connect == 20 and refused.latency.mean_ms is None
    assert read("0.5.8-json-ok.json").counts.status_codes == {200: 200}
