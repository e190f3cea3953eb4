"""The JMeter forms people keep, each over a recorded file (fixtures/jmeter/README.md, "Forms
people keep"): CSV JTLs whose timeStamp is a formatted date, a JTL in another harness's column
order (Taurus's Locust wrapper), and transaction controllers with and without a parent sample
around a redirect, embedded resources and a plain request, in CSV and XML."""
import csv
import re
from datetime import datetime, timezone

import pytest

from conftest import FIXTURES, recorded
from toolbench.adapters.jmeter import adapter as jmeter
from toolbench.adapters.jmeter import jtl as jmeter_jtl
from toolbench.adapters.jmeter import reader as jmeter_reader
from toolbench.adapters.jmeter.agg import Aggregate
from toolbench.adapters.jmeter.reader import read_jtl
from toolbench.cli.commands import results_of
from toolbench.contract import registry
from toolbench.contract.adapter import RawOutput
from toolbench.contract.runs_found import runs
from toolbench.errors import ParseError
from toolbench.record.derive import complete

JM = FIXTURES / "jmeter"


def parse(case: str, stdout: bool = True):
    raw = recorded("jmeter", case, jtl="jtl")
    if not stdout:
        raw = RawOutput(files=raw.files, source=case)
    return complete(jmeter.parse(raw))


def rows_of(case: str) -> list[dict[str, str]]:
    with open(JM / f"{case}.jtl", newline="") as fh:
        return list(csv.DictReader(fh))


def summary_count(case: str) -> int:
    return int(re.search(r"summary = +(\d+) in", (JM / f"{case}.txt").read_text()).group(1))


def run_bounds_ms(case: str) -> tuple[int, int]:
    """JMeter's own epoch-ms start and end of the test, from its stdout."""
    text = (JM / f"{case}.txt").read_text()
    return (int(re.search(r"Starting standalone test @ .*\((\d+)\)", text).group(1)),
            int(re.search(r"Tidying up .*\((\d+)\)", text).group(1)))


@pytest.mark.parametrize("case, pattern", [("5.6.3-date-ms", "%Y/%m/%d %H:%M:%S.%f"),
                                           ("5.6.3-date-s", "%Y-%m-%d %H:%M:%S")])
def test_a_csv_jtl_with_formatted_dates_is_read_from_its_dates(case, pattern):
    m = parse(case)
    rows = rows_of(case)
    assert m.counts.requests_total == m.counts.requests_ok == len(rows) == summary_count(case)
    # JMeter ran with the machine's zone UTC: the dates read as UTC are the epoch ms it stamped.
    starts = [int(datetime.strptime(r["timeStamp"], pattern).replace(tzinfo=timezone.utc).timestamp() * 1000)
              for r in rows]
    ends = [start + int(r["elapsed"]) for start, r in zip(starts, rows)]
    assert m.timing.duration_s == pytest.approx((max(ends) - min(starts)) / 1000)
    begun, tidied = run_bounds_ms(case)
    agg = read_jtl(JM / f"{case}.jtl").aggregate
    assert agg.ts_min == min(starts) and begun - 1000 <= agg.ts_min and agg.end_max <= tidied + 1000
    assert sum(s.requests for s in m.series) == len(rows) and m.series[0].second == 0
    assert any(note.startswith("timeStamp is a date (" + ("yyyy/MM/dd HH:mm:ss.SSS" if "%f" in pattern
                                                           else "yyyy-MM-dd HH:mm:ss")) for note in m.notes)
    assert any("known to 1 s only" in note for note in m.notes) == ("%f" not in pattern)


def test_a_headerless_csv_jtl_with_dates_is_told_from_its_first_record():
    m = parse("5.6.3-date-noheader")
    assert m.counts.requests_total == m.counts.requests_ok == summary_count("5.6.3-date-noheader")
    assert any("no header" in note for note in m.notes) and any("timeStamp is a date" in n for n in m.notes)
    found = runs([JM / "5.6.3-date-noheader.jtl"], registry.adapters(), None)
    assert [run.adapter.name for run in found] == ["jmeter"]


def test_a_date_format_toolbench_does_not_read_is_an_error_naming_it():
    with pytest.raises(ParseError, match=r"timeStamp '04:16:15\.686' is neither epoch milliseconds nor a date "
                                         r"toolbench reads \(yyyy/MM/dd HH:mm:ss\.SSS, .*timestamp_format"):
        parse("5.6.3-date-time-only")


def test_an_xml_jtl_keeps_epoch_milliseconds_whatever_the_date_format():
    m = parse("5.6.3-date-xml")
    assert m.counts.requests_total == summary_count("5.6.3-date-xml")
    assert not any("timeStamp is a date" in note for note in m.notes)


def test_dates_read_the_same_by_every_path(monkeypatch):
    """The vectorized date reader, the csv module's row-at-a-time path and worker processes agree."""
    path = JM / "5.6.3-date-ms.jtl"
    fast = read_jtl(path).aggregate
    slow_agg = Aggregate()
    slow_agg.subsamples = True  # every row through the csv module (the file has no sub-result)
    slow = read_jtl(path, slow_agg).aggregate
    monkeypatch.setattr(jmeter_reader, "MIN_BYTES", 0)
    monkeypatch.setattr(jmeter_reader, "workers", lambda: 3)
    monkeypatch.setattr(jmeter_jtl, "BLOCK", 997)
    split = read_jtl(path).aggregate
    for other in (slow, split):
        assert (other.rows, other.ts_min, other.end_max, other.series()) == \
            (fast.rows, fast.ts_min, fast.end_max, fast.series())


def test_a_row_whose_date_breaks_the_format_names_its_line(tmp_path):
    lines = (JM / "5.6.3-date-ms.jtl").read_text().splitlines(keepends=True)
    lines[5] = lines[5].replace("2026/12/02", "2026/13/02", 1)  # month 13: JMeter's own reader refuses it too
    (tmp_path / "bad.jtl").write_text("".join(lines))
    with pytest.raises(ParseError, match=r"line 6: timeStamp is not a date in yyyy/MM/dd HH:mm:ss.SSS"):
        read_jtl(tmp_path / "bad.jtl")


def test_taurus_locust_wrappers_column_order_is_read():
    path = JM / "1.17.2-taurus-locust.jtl"
    assert path.read_text().startswith("allThreads,timeStamp,label,method,elapsed,")
    [result] = [r for run in runs([path], registry.adapters(), None)
                for r in results_of(run.adapter, run.name, run.paths)]
    m = result.measurement
    rows = rows_of("1.17.2-taurus-locust")
    # Locust's own count, in its last stats table on stderr: "GET / 2204 0(0.00%)".
    locust = re.findall(r"GET +/ +(\d+) +(\d+)\(", (JM / "1.17.2-taurus-locust.stderr.txt").read_text())[-1]
    assert m.counts.requests_total == len(rows) == int(locust[0])
    assert m.counts.requests_failed == int(locust[1]) and m.counts.status_codes == {200: len(rows)}
    assert m.latency.max_ms == max(int(r["elapsed"]) for r in rows) and m.concurrency == 2
    assert m.transfer.received_bytes == sum(int(r["bytes"]) for r in rows)
    assert m.latency.ttfb_mean_ms is None  # the wrapper's Latency is 0 in every row: a placeholder, not read
    assert any("Taurus's Locust wrapper" in note for note in m.notes)


def test_a_jtl_of_transaction_samples_alone_says_so():
    with pytest.raises(ParseError, match=r"only transaction controllers' samples \(2\)"):
        read_jtl(JM / "2.x-taurus-tranctl.jtl")


@pytest.mark.parametrize("case", ["5.6.3-tc-parent-csv", "5.6.3-tc-parent-xml", "5.6.3-tc-children-csv",
                                  "5.6.3-tc-children-xml"])
def test_transaction_controllers_count_the_requests_inside_once(case):
    """Per thread and loop: a transaction around GET /redir (2 hops), GET /page.html (2 images) and
    GET /, then GET / alone: 4 requests of their own; the sub-results and the transaction's sample
    are none. The same 160 whether the transaction generates a parent sample or not, CSV or XML."""
    m = parse(case)
    assert m.counts.requests_total == m.counts.requests_ok == 4 * 10 * 4
    assert m.counts.status_codes == {200: 160}
    assert any("200 sub-results" in note and "40 transaction controller samples" in note for note in m.notes)
    summariser = summary_count(case)
    if "parent" in case:  # JMeter's summariser skips the parent sample and the requests in it
        assert summariser == 40
        assert any("the summariser counted 40 samples, the JTL has 160 (the summariser skips" in n for n in m.notes)
    else:
        assert summariser == 160
    assert any("120 requests nested in transaction controllers' parent samples" in n for n in m.notes) == \
        (case == "5.6.3-tc-parent-xml")


@pytest.mark.parametrize("case", ["5.6.3-tc-parent-csv", "5.6.3-tc-parent-xml", "5.6.3-tc-children-csv",
                                  "5.6.3-tc-children-xml"])
def test_sub_samples_inside_transactions_are_counted_when_asked(case):
    path = JM / f"{case}.jtl"
    [subs] = [r.measurement for run in runs([path], registry.adapters(), None)
              for r in results_of(run.adapter, run.name, run.paths, read_options=frozenset({"jmeter_subsamples"}))]
    # Per thread and loop: /redir's 2 hops, /page.html's 3 sub-samples, GET / and GET / alone.
    assert subs.counts.requests_total == 7 * 40 and subs.counts.status_codes == {200: 240, 302: 40}


def test_an_xml_jtl_appended_by_two_runs_gives_one_result_per_run():
    """JMeter appends to an XML JTL too, writing on after its closing tag taken off: one
    <testResults> with the samples of two runs 40 days apart."""
    path = JM / "5.6.3-xml-appended.jtl"
    assert path.read_text().count("<testResults") == 1
    found = runs([path], registry.adapters(), None)
    results = [r for run in found for r in results_of(run.adapter, run.name, run.paths)]
    assert [r.identity.cell_id for r in results] == ["5.6.3-xml-appended-run1", "5.6.3-xml-appended-run2"]
    for r, n in zip(results, (1, 2)):
        assert r.measurement.counts.requests_total == summary_count(f"5.6.3-xml-appended-{n}")
        assert r.measurement.timing.duration_s < 10
    [merged] = [r.measurement for run in found for r in results_of(run.adapter, run.name, run.paths, True)]
    assert merged.counts.requests_total == sum(r.measurement.counts.requests_total for r in results)
    with pytest.raises(ParseError, match="holds 2 test runs"):
        jmeter.parse(RawOutput(files={"jtl": path}))
