"""wrk's and wrk2's text as people keep it: several runs appended to one file (with an `echo`
heading before each, or back to back with `2>&1`), read one result per run or merged, never
figures of one run with another's; wrk2's HdrHistogram sections. Over recorded real output
(tests/fixtures/wrk/README.md says how each file was made, or where it was found)."""
from __future__ import annotations

import re
import warnings

import pytest

from conftest import FIXTURES
from toolbench.cli.commands import results_of
from toolbench.contract import registry
from toolbench.contract.adapter import RawOutput
from toolbench.contract.checked import parse_checked
from toolbench.contract.runs_found import runs
from toolbench.errors import Notice, ParseError
from toolbench.record.schema import Omission

WRK = FIXTURES / "wrk"


def results(*paths, merge=False, tool=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Notice)
        found = runs(list(paths), registry.adapters(), registry.get(tool) if tool else None)
    return [r for run in found for r in results_of(run.adapter, run.name, run.paths, merge)]


def summary_lines(text: str) -> list[dict[str, int]]:
    """Each run's own count lines, as the file prints them, for comparing with what was read."""
    found = []
    for block in re.split(r"^Running ", text, flags=re.MULTILINE)[1:]:
        requests = int(re.search(r"^\s*(\d+) requests in", block, re.MULTILINE).group(1))
        socket = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", block)
        status = re.search(r"Non-2xx or 3xx responses: (\d+)", block)
        found.append({"requests": requests, "errors": sum(map(int, socket.groups())) if socket else 0,
                      "status": int(status.group(1)) if status else 0})
    return found


def test_appended_runs_with_headings_are_one_result_each_named_by_their_heading():
    path = WRK / "4.1.0-appended-headings.txt"
    got = results(path)
    assert [r.identity.cell_id for r in got] == ["4.1.0-appended-headings-" + name for name in (
        "nginx-keep-alive", "nginx-with-latency", "flaky-server", "nginx-404")]
    for result, own in zip(got, summary_lines(path.read_text())):
        c = result.measurement.counts
        # each run's figures are its own: the flaky run's socket errors never land in another run
        assert c.requests_total == own["requests"] + own["errors"]
        assert c.requests_failed == own["status"] + own["errors"]
    flaky = got[2].measurement
    assert (flaky.counts.failures.read, flaky.counts.failures.timeout, flaky.counts.failures.http) == (15, 1, 19)
    assert got[0].measurement.latency.percentiles.p50_ms is None  # run without --latency
    assert got[1].measurement.latency.percentiles.p99_ms == 3.92  # the --latency run's own row
    assert got[3].measurement.url.endswith("/nope") and got[3].measurement.counts.requests_ok == 0


def test_appended_runs_back_to_back_are_run1_run2_and_wrks_error_line_between_them_is_noted():
    got = results(WRK / "4.1.0-appended.txt")
    assert [r.identity.cell_id for r in got] == [f"4.1.0-appended-run{n}" for n in (1, 2, 3)]
    second = got[1].measurement
    assert second.counts.failures.read == 15 and second.counts.failures.timeout == 2
    assert second.latency.percentiles.p50_ms == 43.94
    assert any("unable to connect to 127.0.0.1:18099 Connection refused" in note for note in second.notes)
    assert got[2].measurement.counts.requests_total == 8594


def test_merge_runs_sums_counts_and_durations_and_keeps_no_percentile():
    path = WRK / "4.1.0-appended-headings.txt"
    (merged,) = results(path, merge=True)
    own = summary_lines(path.read_text())
    m = merged.measurement
    assert m.counts.requests_total == sum(r["requests"] + r["errors"] for r in own)
    assert m.timing.duration_s == pytest.approx(1.0 + 1.1 + 2.0 + 1.0)
    assert m.latency.percentiles.p50_ms is None and m.latency.stdev_ms is None
    assert m.latency.max_ms == 48.06 and m.url is None
    assert any(note.startswith("4 runs merged (nginx-keep-alive, ") for note in m.notes)


def test_several_runs_without_a_part_are_refused_not_mixed():
    text = (WRK / "4.1.0-appended-headings.txt").read_text()
    with pytest.raises(ParseError, match="holds 4 runs .*reads each alone"):
        parse_checked(registry.get("wrk"), RawOutput(stdout=text, source="appended"))


def test_a_done_json_beside_several_runs_is_not_given_to_any_of_them():
    raw = RawOutput(stdout=(WRK / "4.1.0-appended.txt").read_text(), files={"json": WRK / "4.1.0-ok.json"},
                    part="run1", source="appended")
    m = parse_checked(registry.get("wrk"), raw)
    assert m.counts.requests_total == 35641  # the text's run1, not the JSON's 4509
    assert any("done() JSON" in note and "not used" in note for note in m.notes)


def test_a_file_that_starts_with_a_heading_is_still_wrks():
    adapter = registry.get("wrk")
    head = (WRK / "4.1.0-appended-headings.txt").read_text()[:2000]
    assert head.startswith("== nginx keep-alive ==") and adapter.recognizes(WRK / "x.txt", head)


def test_the_error_quotes_stderr_or_wrks_own_line_never_the_files_last_line():
    adapter = registry.get("wrk")
    cut = "\n".join((WRK / "4.1.0-ok.txt").read_text().splitlines()[:5])  # a run cut before its summary
    with pytest.raises(ParseError) as caught:
        parse_checked(adapter, RawOutput(stdout=cut, source="cut"))
    assert "nothing on stderr" in str(caught.value) and "Req/Sec" not in str(caught.value)
    # `wrk ... > out.txt 2>&1` of the refused run: its one stderr line, in the file
    merged = (WRK / "4.1.0-refused.stderr.txt").read_text()
    with pytest.raises(ParseError, match="the output holds wrk's error line: unable to connect"):
        parse_checked(adapter, RawOutput(stdout=merged, source="refused"))


# ---- wrk2 ----

def test_wrk2_hdr_percentiles_mean_and_spectrum_are_read():
    (r,) = results(WRK / "wrk2-allocget.txt")
    m = r.measurement
    p = m.latency.percentiles
    assert (p.p50_ms, p.p75_ms, p.p90_ms, p.p99_ms, p.p999_ms) == (1.37, 1.85, 2.42, 3.02, 5.72)
    assert (p.p80_ms, p.p95_ms) == (1.997, 2.663)  # from the spectrum's 0.800000 and 0.950000 rows
    assert (m.latency.mean_ms, m.latency.stdev_ms, m.latency.max_ms, m.latency.min_ms) == (1.441, 0.706, 12.92, 0.067)
    assert m.coordinated_omission is Omission.CORRECTED and m.latency_uncorrected is None
    assert m.counts.requests_total == 119714 and m.timing.duration_s == 60.0 and m.concurrency == 64
    assert any("cover 99357 of the 119714 requests" in note for note in m.notes)
    assert any(note.startswith("not read (no field here):") and "99.99%" in note for note in m.notes)


def test_wrk2_times_in_seconds_with_text_after_the_run():
    (r,) = results(WRK / "wrk2-seconds.txt")
    m = r.measurement
    assert m.latency.percentiles.p50_ms == 14160.0 and m.latency.resolution_ms == 10.0
    assert m.latency.mean_ms == 14171.875 and m.counts.requests_total == 172772


def test_wrk2_runs_back_to_back_each_alone_and_merged():
    run1, run2 = results(WRK / "wrk2-two-runs.txt")
    assert (run1.identity.cell_id, run2.identity.cell_id) == ("wrk2-two-runs-run1", "wrk2-two-runs-run2")
    assert (run1.measurement.counts.requests_total, run2.measurement.counts.requests_total) == (119714, 2399325)
    assert (run1.measurement.latency.mean_ms, run2.measurement.latency.mean_ms) == (1.396, 0.652)
    assert (run1.measurement.url, run2.measurement.url) == ("http://localhost:8081", "http://localhost:8080")
    (merged,) = results(WRK / "wrk2-two-runs.txt", merge=True)
    m = merged.measurement
    assert m.counts.requests_total == 119714 + 2399325 and m.timing.duration_s == 120.0
    # weighted by the requests each histogram holds (its Total count)
    assert m.latency.mean_ms == pytest.approx((1.396 * 99357 + 0.652 * 1999072) / (99357 + 1999072))
    assert m.coordinated_omission is Omission.CORRECTED
