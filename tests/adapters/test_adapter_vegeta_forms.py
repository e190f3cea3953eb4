"""The forms of vegeta's output a user keeps, read by `toolbench parse` (recorded in
tests/fixtures/vegeta/, commands in its CASES.tsv and README.md): the text report in each layout,
several in one file, `vegeta encode`'s JSON lines; and the forms it names instead of reading."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from helpers.cli import cli
from helpers.recordings import refused_when_changed
from toolbench.adapters import vegeta_text
from toolbench.cli.commands import results_of
from toolbench.contract import registry
from toolbench.contract.adapter import CLASSIFY_CHARS, RawOutput, raw_from_files
from toolbench.contract.checked import parse_checked
from toolbench.errors import ParseError
from toolbench.record import histogram
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Fidelity, Measurement

HERE = FIXTURES / "vegeta"
ADAPTER = registry.get("vegeta")


def read(*names: str) -> Measurement:
    paths = [HERE / name for name in names]
    return parse_checked(ADAPTER, raw_from_files(ADAPTER, "case", paths))


def results(name: str, merge: bool = False) -> list[Measurement]:
    return [r.measurement for r in results_of(ADAPTER, name, [HERE / name], merge_runs=merge)]


def refusal(*names: str) -> str:
    with pytest.raises(ParseError) as caught:
        read(*names)
    assert "\n" not in str(caught.value)
    return str(caught.value)


@pytest.mark.parametrize("case", ["ok", "404", "refused", "timeout"])
def test_the_text_report_says_what_the_json_report_of_the_same_results_says(case):
    """`vegeta report` and `vegeta report -type=json` over the same recorded results file."""
    text, said = read(f"12.13.0-text-{case}.txt"), json.loads((HERE / f"12.13.0-{case}.json").read_text())
    as_json = read(f"12.13.0-{case}.json")
    assert text.counts == as_json.counts and text.counts.requests_total == said["requests"]
    assert text.transfer.received_bytes == said["bytes_in"]["total"] and text.transfer.sent_bytes == 0
    step = text.latency.resolution_ms
    assert step in (1e-3, 1.0)  # its times rounded as vegeta 12 prints them: to the µs, above 1 s to the ms
    for name in ("min_ms", "mean_ms", "max_ms"):
        assert getattr(text.latency, name) == pytest.approx(getattr(as_json.latency, name), abs=step / 2)
    for name in ("p50_ms", "p90_ms", "p95_ms", "p99_ms"):
        assert getattr(text.latency.percentiles, name) == pytest.approx(
            getattr(as_json.latency.percentiles, name), abs=step / 2)
    assert text.timing.duration_s == pytest.approx(as_json.timing.duration_s, abs=1e-3)
    assert text.rates.rps == pytest.approx(said["rate"], abs=0.005)
    assert any("not kept from the text report: Requests throughput" in n for n in text.notes)


def test_failures_from_the_status_codes_and_the_error_set():
    assert read("12.13.0-text-refused.txt").counts.failures.connect == 20
    timeout = read("12.13.0-text-timeout.txt")
    assert timeout.counts.failures.timeout == timeout.counts.requests_failed == 4
    assert timeout.latency.min_ms == 1000.0 and timeout.latency.resolution_ms == 1.0  # `1s`, rounded to the ms
    missing = read("12.13.0-text-404.txt")  # `vegeta report -type=text`
    assert missing.counts.failures.http_4xx == 50 and missing.counts.status_codes == {404: 50}


def test_an_older_layout_is_read_by_its_field_names():
    """vegeta's README at 6e04f23: `Requests [total, rate]`, `Latencies [mean, 50, 95, 99, max]`,
    times at full precision; its JSON report has no min and no 90th."""
    old = read("6e04f23-readme-text.txt")
    assert (old.counts.requests_total, old.counts.requests_ok, old.counts.requests_failed) == (1200, 665, 535)
    assert old.counts.failures.other == 535  # refused, reset, broken pipe...: one count, no class
    assert old.latency.min_ms is None and old.latency.percentiles.p90_ms is None
    assert old.latency.percentiles.p50_ms == 108.272568 and old.latency.max_ms == 264.815246
    assert old.timing.duration_s == pytest.approx(10.094965987) and old.latency.resolution_ms == pytest.approx(1e-5)
    assert old.transfer.received_bytes == 3714690 and old.rates.rps == 120.0
    report = read("6e04f23-readme-report.json")
    assert report.counts.requests_ok == 100 and report.latency.min_ms is None
    assert report.latency.percentiles.p90_ms is None and report.latency.percentiles.p99_ms == 3.53


def test_reports_appended_to_one_file_are_one_result_each_or_merged():
    runs = results("12.13.0-text-appended.txt")
    alone = [read(f"12.13.0-text-{case}.txt") for case in ("ok", "404")]
    assert [m.counts.status_codes for m in runs] == [{200: 100}, {404: 50}, {405: 20}]
    assert [m.counts for m in runs[:2]] == [m.counts for m in alone]
    assert [m.latency for m in runs[:2]] == [m.latency for m in alone]
    (merged,) = results("12.13.0-text-appended.txt", merge=True)
    assert (merged.counts.requests_total, merged.counts.requests_ok) == (170, 100)
    assert merged.counts.status_codes == {200: 100, 404: 50, 405: 20}
    assert merged.timing.duration_s == pytest.approx(sum(m.timing.duration_s for m in runs))
    assert merged.latency.min_ms == min(m.latency.min_ms for m in runs) and merged.latency.percentiles.p50_ms is None
    assert merged.latency.mean_ms == pytest.approx(sum(m.latency.mean_ms * m.counts.requests_total
                                                       for m in runs) / 170)
    assert merged.fidelity_of("latency.mean_ms") is Fidelity.DERIVED and "merged" in merged.notes[0]
    assert "holds 3 reports" in refusal("12.13.0-text-appended.txt")  # never one of them, unasked


def test_the_snapshots_of_report_every_are_not_runs():
    (m,) = results("12.13.0-text-every.txt")
    assert ADAPTER.parts(RawOutput(stdout=(HERE / "12.13.0-text-every.txt").read_text())) == []
    assert m.counts.requests_total == 50 and m.counts.status_codes == {200: 50}  # the final report, not the first
    assert any("3 interim snapshots of `vegeta report -every`" in n for n in m.notes)


def test_encode_json_lines_are_read_as_the_csv_rows_of_the_same_results():
    lines, rows = read("12.13.0-encode.json"), read("12.13.0-ok.csv")
    assert lines.counts == rows.counts and lines.latency == rows.latency and lines.series == rows.series
    assert histogram.decode(lines.histogram).get_total_count() == 100 and lines.histogram == rows.histogram
    assert ADAPTER.timings(RawOutput(files={"jsonl": HERE / "12.13.0-encode.json"})).requests == 100


@pytest.mark.parametrize("name, words", [
    ("12.13.0-ok.gob", "vegeta's binary results file"),
    ("12.13.0-hist.txt", "a vegeta histogram report (`vegeta report -type=hist[...]`)"),
    ("12.13.0-hdrplot.txt", "a vegeta HDR plot (`vegeta report -type=hdrplot`)"),
])
def test_a_form_toolbench_does_not_read_is_named(name, words):
    said = refusal(name)
    assert f"this is {words}" in said and "which toolbench cannot read" in said and "vegeta encode --to csv" in said
    head = (HERE / name).read_text(errors="replace")[:CLASSIFY_CHARS]
    assert ADAPTER.recognizes(HERE / "renamed.out", head)  # by its content, whatever its name


def test_vegeta_said_quotes_its_stderr_only():
    said = refusal("12.13.0-text-missing.txt", "12.13.0-text-missing.stderr.txt")
    assert said.endswith("vegeta said: 2026/12/02 04:09:58 open /nonexistent.gob: no such file or directory")
    version = refusal("12.13.0-version.txt")  # a stdout that is no output of a run, an empty stderr
    assert "no results" in version and "Version" not in version and "nothing on its stderr" in version


def test_the_text_report_claims_no_other_tools_files():
    for path in sorted(FIXTURES.glob("*/*")):
        if path.parent.name in ("vegeta", "stored", "runs") or not path.is_file():
            continue
        head = path.read_text(errors="replace")[:CLASSIFY_CHARS]
        assert not ADAPTER.recognizes(path, head), path
    for name in ("12.13.0-text-ok.txt", "12.13.0-text-every.txt", "6e04f23-readme-text.txt", "12.13.0-encode.json",
                 "6e04f23-readme-report.json"):
        assert ADAPTER.recognizes(HERE / name, (HERE / name).read_text()[:CLASSIFY_CHARS]), name


def test_the_command_reads_each_appended_run_and_merges_when_asked():
    done = cli("parse", str(HERE / "12.13.0-text-appended.txt"), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert [r["identity"]["cell_id"] for r in json.loads(done.stdout)] == [
        f"12.13.0-text-appended-run{n}" for n in (1, 2, 3)]
    merged = cli("parse", str(HERE / "12.13.0-text-appended.txt"), "--merge-runs", "--format", "json")
    assert merged.returncode == 0 and json.loads(merged.stdout)[0]["measurement"]["counts"]["requests_total"] == 170
    named = cli("parse", str(HERE / "12.13.0-hist.txt"))
    assert named.returncode != 0 and "vegeta histogram report" in named.stderr


def test_a_report_whose_figures_disagree_is_an_error(tmp_path: Path):
    refused_when_changed(ADAPTER, HERE / "12.13.0-text-ok.txt", (
        ("100.00%", "90.00%", "Success ratio: 90.00% is not its status codes' 100 of 100"),
        ("200:100", "200:99", "they count 99 requests, the report 100"),
        ("376.687µs", "376.687 parsecs", "expected a Go duration"),
        ("1300, 13.00", "1300", "2 names in brackets, 1 values")), tmp_path)


@pytest.mark.parametrize("text, ns", [("1m59.995999932s", 119_995_999_932), ("2m0s", 120 * 10 ** 9),
                                      ("355.297µs", 355_297), ("0s", 0), ("1h2m3.5s", 3_723_500_000_000),
                                      ("7.8ms", 7_800_000), ("12ns", 12)])
def test_go_durations(text, ns):
    assert vegeta_text.go_duration_ns(text, Numbers("vegeta"), "t") == ns


@pytest.mark.parametrize("text", ["1.5", "-1s", "", "1s2", "1e3s", "9" * 30 + "h"])
def test_what_is_no_go_duration_is_an_error(text):
    with pytest.raises(ParseError):
        vegeta_text.go_duration_ns(text, Numbers("vegeta"), "t")


def test_snapshots_without_their_final_report_say_so(tmp_path: Path):
    text = (HERE / "12.13.0-text-every.txt").read_text()
    cut = tmp_path / "every.txt"  # `report -every` killed before its final report: the snapshots alone
    cut.write_text(text[:text.rindex("\nRequests") + 1])
    m = parse_checked(ADAPTER, raw_from_files(ADAPTER, "cut", [cut]))
    assert m.counts.requests_total == 47 and any("no final report" in n for n in m.notes)
