"""The forms of existing output that issue 14 found `toolbench parse` refusing or
miscounting, each over a recorded real file (tests/fixtures/<tool>/README.md names how)."""
import warnings

import pytest

from conftest import FIXTURES
from helpers.cli import cli
from toolbench.cli.commands import results_of
from toolbench.contract import registry
from toolbench.contract.runs_found import runs
from toolbench.errors import Notice, ToolbenchError

JM = FIXTURES / "jmeter"


def parsed(*paths, tool=None):
    """(results, notes) of `toolbench parse` over the files."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", Notice)
        found = runs(list(paths), registry.adapters(), registry.get(tool) if tool else None)
        results = [r for run in found for r in results_of(run.adapter, run.name, run.paths)]
    return results, [str(w.message) for w in seen]


@pytest.mark.parametrize("tool", [None, "jmeter"])
def test_an_empty_companion_file_is_noted_and_skipped(tool):
    results, notes = parsed(JM / "5.6.3-kpi-errors-kpi.jtl", JM / "5.6.3-kpi-errors-error.jtl", tool=tool)
    assert [r.identity.cell_id for r in results] == ["5.6.3-kpi-errors-kpi"]
    assert results[0].measurement.counts.requests_total == 200
    assert f"{JM / '5.6.3-kpi-errors-error.jtl'}: empty, skipped" in notes


def test_only_empty_files_is_an_error_of_one_line():
    empty = JM / "5.6.3-kpi-errors-error.jtl"
    with pytest.raises(ToolbenchError, match=f"^{empty}: empty: nothing to read$"):
        parsed(empty)
    done = cli("parse", str(empty))
    assert done.returncode != 0 and done.stderr.splitlines() == [f"toolbench: error: {empty}: empty: nothing to read"]


def test_a_whole_last_row_without_a_line_break_is_read_and_a_cut_one_left_out():
    whole = parsed(JM / "5.6.3-kpi-errors-kpi.jtl")[0][0].measurement
    unended = parsed(JM / "5.6.3-no-final-newline.jtl")[0][0].measurement
    assert unended.counts.requests_total == whole.counts.requests_total == 200
    assert unended.latency == whole.latency
    assert "the last line (201) has no line break but is a whole record: it was read" in unended.notes
    cut = parsed(JM / "5.6.3-csv-truncated.jtl")[0][0].measurement
    assert cut.counts.requests_total == 1121 and any("(1123) is cut off" in note for note in cut.notes)


def test_a_percentile_above_the_exact_max_is_set_to_it():
    m = parsed(FIXTURES / "engine" / "0.1.0-pct-above-max.json")[0][0].measurement
    assert m.latency.max_ms == 15.109 and m.latency.percentiles.p999_ms == 15.109  # the file says 15.111
    assert m.fidelity["latency.percentiles.p999_ms"].value == "derived"
    assert any("p999_ms 15.111 -> 15.109 ms" in note for note in m.notes)
    for r in (m.latency.percentiles.p50_ms, m.latency.percentiles.p99_ms):
        assert m.latency.min_ms <= r <= m.latency.max_ms


def test_the_engine_reads_its_percentiles_within_its_exact_extremes():
    from toolbench.record import histogram

    hist = histogram.from_ms([15.109, 2.5])
    assert histogram.percentiles_ms(hist).p999_ms > 15.109
    assert histogram.percentiles_ms(hist, 2.5, 15.109).p999_ms == 15.109


def test_a_failed_name_lookup_is_a_connect_failure():
    files = sorted((FIXTURES / "locust").glob("2.47.0-dns[._]*"))
    m = parsed(*files)[0][0].measurement
    assert m.counts.requests_total == m.counts.requests_failed == 2
    assert m.counts.failures.connect == 2 and m.counts.failures.other == 0


@pytest.mark.parametrize("alone", ["2.3-slow.csv", "2.3-nokeepalive.csv"])
def test_abs_percentile_file_alone_has_unknown_counts_and_says_so(alone):
    result = parsed(FIXTURES / "ab" / alone)[0][0]
    counts = result.measurement.counts
    assert (counts.requests_total, counts.requests_ok, counts.requests_failed) == (None, None, None)
    assert result.outcome.status.value == "ok"
    assert result.outcome.error.startswith("counts unknown")


@pytest.mark.parametrize("alone, rows", [("2.3-slow.tsv", 8), ("2.3-nokeepalive.tsv", None)])
def test_abs_g_file_alone_counts_its_rows_as_requests_and_leaves_failures_unknown(alone, rows):
    path = FIXTURES / "ab" / alone
    rows = rows or len(path.read_text().splitlines()) - 1  # one row per completed request, under a header
    counts = parsed(path)[0][0].measurement.counts
    assert (counts.requests_total, counts.requests_ok, counts.requests_failed) == (rows, None, None)


def test_abs_g_file_alone_gives_its_exact_smallest_and_largest_time():
    times = [int(line.split("\t")[4]) for line in (FIXTURES / "ab" / "2.3-slow.tsv").read_text().splitlines()[1:]]
    latency = parsed(FIXTURES / "ab" / "2.3-slow.tsv")[0][0].measurement.latency
    assert (latency.min_ms, latency.max_ms) == (min(times), max(times)) == (1132, 1298)
    assert latency.mean_ms == sum(times) / len(times)
    whole = parsed(*(FIXTURES / "ab").glob("2.3-slow.*"))[0][0].measurement
    assert whole.counts.requests_total == 8 and whole.latency.min_ms == 1131.858  # the -e file's, finer


def test_abs_e_file_alone_mends_the_rows_read_past_its_table():
    m = parsed(FIXTURES / "ab" / "2.3-slow.csv")[0][0].measurement
    assert m.latency.percentiles.p99_ms == m.latency.max_ms == 1297.829


@pytest.mark.parametrize("log, totals", [("4.0.7-log-3runs.csv", [100, 200, 400]), ("4.0.7-log-mark.csv", [2000, 2000])])
def test_each_run_of_a_siege_log_is_a_result(log, totals):
    results = parsed(FIXTURES / "siege" / log)[0]
    stem = log[: -len(".csv")]
    assert [r.identity.cell_id for r in results] == [f"{stem}-run{n}" for n in range(1, len(totals) + 1)]
    assert [r.measurement.counts.requests_total for r in results] == totals


def test_a_siege_log_beside_its_runs_summary_is_that_one_run():
    files = [FIXTURES / "siege" / f"4.0.7-log-mark{ending}" for ending in (".csv", ".txt", ".stderr.txt")]
    assert [r.identity.cell_id for r in parsed(*files)[0]] == ["4.0.7-log-mark"]


@pytest.mark.parametrize("ending", [".log", ".txt", ".*"])
def test_the_summariser_under_its_listeners_name_on_stdout_or_in_jmeter_log(ending):
    results, notes = parsed(*sorted(JM.glob(f"5.6.3-generate-summary{ending}")))
    m = results[0].measurement
    assert [r.identity.cell_id for r in results] == ["5.6.3-generate-summary"]
    assert (m.counts.requests_total, m.counts.requests_failed, m.rates.rps) == (1200, 0, 80.3)
    assert (m.latency.min_ms, m.latency.mean_ms, m.latency.max_ms) == (0, 37, 442)


def test_a_2x_jmeter_log_with_the_interval_in_seconds():
    m = parsed(JM / "2.x-maven-plugin-116.log")[0][0].measurement
    assert (m.counts.requests_total, m.latency.mean_ms, m.rates.rps) == (1, 1126, 0.9)


@pytest.mark.parametrize("case, columns", [("5.6.3-2x-12col", 12), ("5.6.3-2x-10col", 10)])
def test_a_headerless_csv_in_a_2x_layout_is_read_and_its_layout_named(case, columns):
    m = parsed(JM / f"{case}.jtl")[0][0].measurement
    rows = (JM / f"{case}.jtl").read_text().splitlines()
    assert m.counts.requests_total == len(rows) == 400 and m.counts.requests_ok == 400
    assert m.latency.max_ms == max(int(row.split(",")[1]) for row in rows)
    assert m.transfer.received_bytes == sum(int(row.split(",")[8]) for row in rows)
    assert m.latency.ttfb_mean_ms == sum(int(row.split(",")[-1]) for row in rows) / 400
    assert any(f"JMeter 2.x's {columns} columns" in note for note in m.notes)


def test_sub_results_and_transaction_rows_are_not_requests_in_csv_or_xml():
    csv_m = parsed(JM / "5.6.3-subresults-csv.jtl")[0][0].measurement
    xml_m = parsed(JM / "5.6.3-subresults-xml.jtl")[0][0].measurement
    rows = len((JM / "5.6.3-subresults-csv.jtl").read_text().splitlines()) - 1
    assert rows == 1000
    for m, stdout in ((csv_m, "5.6.3-subresults-csv.txt"), (xml_m, "5.6.3-subresults-xml.txt")):
        assert "summary =    400 in" in (JM / stdout).read_text()  # JMeter's own count
        assert m.counts.requests_total == m.counts.requests_ok == 400
        assert any("500 sub-results" in note and "100 transaction" in note for note in m.notes)
    assert csv_m.transfer.received_bytes == xml_m.transfer.received_bytes


def test_an_xml_jtl_with_invalid_character_references_is_read_as_jmeter_wrote_it():
    assert "&#x1;" in (JM / "5.6.3-xml-charrefs.jtl").read_text()
    m = parsed(JM / "5.6.3-xml-charrefs.jtl")[0][0].measurement
    assert m.counts.requests_total == m.counts.requests_ok == 20


def test_the_character_references_are_mended_across_reads():
    import io

    from toolbench.adapters.jmeter.jtl_xml import _ValidRefs

    data = (JM / "5.6.3-xml-charrefs.jtl").read_bytes()
    whole = b"".join(iter(_ValidRefs(io.BytesIO(data)).read, b""))
    for size in (1, 5, 97):
        source = _ValidRefs(io.BytesIO(data))
        assert b"".join(iter(lambda: source.read(size), b"")) == whole
    assert b"&#x1;" not in whole and whole.count(b"&#xFFFD;") == 20 * 5  # 5 control characters a sample


def test_a_plugins_sample_element_is_a_sample(tmp_path):
    # No plug-in sampler runs here: the recorded XML JTL with its <httpSample> elements
    # renamed the way XStream names a plug-in's class (the WebDriver sampler's).
    plugin = "com.googlecode.jmeter.plugins.webdriver.sampler.SampleResultWithSubs"
    text = (JM / "5.6.3-xml.jtl").read_text().replace("<httpSample ", f"<{plugin} ").replace(
        "</httpSample>", f"</{plugin}>")
    (tmp_path / "webdriver.jtl").write_text(text)
    m = parsed(tmp_path / "webdriver.jtl", tool="jmeter")[0][0].measurement
    assert m.counts.requests_total == parsed(JM / "5.6.3-xml.jtl")[0][0].measurement.counts.requests_total == 400


K6 = FIXTURES / "k6"


def test_k6s_summary_export_is_read():
    results, notes = parsed(K6 / "0.x-summary-export-gateways.json")
    m = results[0].measurement
    assert notes == [f"{K6 / '0.x-summary-export-gateways'}: read as k6 output"]
    assert (m.counts.requests_total, m.counts.requests_ok, m.counts.requests_failed) == (413551, 413551, 0)
    assert m.rates.rps == 1355.9762175963654 and m.concurrency == 757
    assert (m.latency.min_ms, m.latency.mean_ms, m.latency.max_ms) == (0.043502, 4.131573364257359, 217.061652)
    assert (m.latency.percentiles.p50_ms, m.latency.percentiles.p95_ms) == (0.60984, 23.400920499999998)
    assert m.latency.percentiles.p99_ms is None  # not in the summary: absent, not guessed
    assert (m.transfer.received_bytes, m.transfer.sent_bytes) == (78988241, 38046245)


def test_k6s_json_points_are_read_one_request_each():
    m = parsed(K6 / "0.x-out-json-head.json")[0][0].measurement
    assert (m.counts.requests_total, m.counts.requests_failed, m.counts.status_codes) == (2, 0, {200: 2})
    assert (m.latency.min_ms, m.latency.max_ms) == (121.17116, 224.534453)


def test_k6_is_registered_read_only():
    from toolbench.contract.adapter import Missing

    k6 = registry.get("k6")
    assert k6.read_only and isinstance(k6.detect(None), Missing) and "licence" in k6.detect(None).reason


@pytest.mark.parametrize("case", ["single", "404", "refused"])
def test_locusts_console_summary_alone_gives_the_runs_counts(case):
    folder = FIXTURES / "locust"
    alone = parsed(folder / f"2.47.0-{case}.stderr.txt")[0][0].measurement
    whole = parsed(*sorted(folder.glob(f"2.47.0-{case}[._]*[!y]")))[0][0].measurement  # all but the .py
    assert (alone.counts.requests_total, alone.counts.requests_failed) == \
        (whole.counts.requests_total, whole.counts.requests_failed)
    if whole.counts.requests_failed:
        assert alone.counts.failures == whole.counts.failures
    assert alone.latency.max_ms is not None and alone.latency.resolution_ms == 1.0


def test_a_jtl_appended_by_runs_40_days_apart_is_one_result_per_run():
    results, _ = parsed(JM / "5.6.3-multirun.jtl")
    assert [r.identity.cell_id for r in results] == ["5.6.3-multirun-run1", "5.6.3-multirun-run2"]
    for r in results:  # each run: 4 threads x 50 loops, all answered 200
        m = r.measurement
        assert m.counts.requests_total == m.counts.requests_ok == 200 and m.counts.status_codes == {200: 200}
        assert m.timing.duration_s < 60 and len(m.series) < 60
    started = [r.measurement.notes[-1] for r in results]
    assert "started 2026-10-21" in started[0] and "started 2026-11-30" in started[1]


def test_a_jtl_of_several_runs_read_as_one_says_what_it_holds():
    from toolbench.contract.adapter import RawOutput
    from toolbench.errors import ParseError

    with pytest.raises(ParseError, match="holds 2 test runs"):
        registry.get("jmeter").parse(RawOutput(files={"jtl": JM / "5.6.3-multirun.jtl"}))


def test_one_run_of_a_jtl_is_not_cut_up():
    from toolbench.adapters.jmeter.runs import run_windows

    for case in ("5.6.3-csv.jtl", "5.6.3-404.jtl", "5.6.3-subresults-csv.jtl"):
        assert len(run_windows(JM / case)) == 1, case


def test_locust_1x_csvs_are_read():
    loc = FIXTURES / "locust"
    files = [loc / f"1.4.4-mixed{end}" for end in ("_stats.csv", "_failures.csv", "_stats_history.csv",
                                                    "_exceptions.csv", ".txt", ".stderr.txt")]
    m = parsed(*files, tool="locust")[0][0].measurement
    assert (m.counts.requests_total, m.counts.requests_failed) == (1373, 345)  # the stats CSV's Aggregated row
    assert m.latency.percentiles.p50_ms == 5 and m.latency.percentiles.p99_ms == 15


def test_locust_1x_failure_classes_agree_with_the_counts():
    loc = FIXTURES / "locust"
    files = [loc / f"1.4.4-mixed{end}" for end in ("_stats.csv", "_failures.csv", ".stderr.txt")]
    # The error report on stderr (409) was printed after the stats CSV (345 failed): the failures
    # CSV, written with the stats, gives the classes.
    m = parsed(*files, tool="locust")[0][0].measurement
    assert m.counts.failures.http_4xx == m.counts.requests_failed == 345


def test_the_runs_of_a_jtl_are_merged_when_asked():
    each = [r.measurement for r in parsed(JM / "5.6.3-multirun.jtl")[0]]
    found = runs([JM / "5.6.3-multirun.jtl"], registry.adapters(), None)
    [merged] = [r.measurement for run in found for r in results_of(run.adapter, run.name, run.paths, True)]
    assert merged.counts.requests_total == merged.counts.requests_ok == 400
    assert merged.timing.duration_s == pytest.approx(sum(m.timing.duration_s for m in each))
    assert merged.latency.mean_ms == pytest.approx(sum(m.latency.mean_ms * 200 for m in each) / 400)
    assert merged.latency.max_ms == max(m.latency.max_ms for m in each) and merged.series == []


def test_the_runs_of_a_siege_log_are_not_merged():
    found = runs([FIXTURES / "siege" / "4.0.7-log-3runs.csv"], registry.adapters(), None)
    with pytest.raises(ToolbenchError, match="cannot be merged"):
        [results_of(run.adapter, run.name, run.paths, True) for run in found]


@pytest.mark.parametrize("form", ["csv", "xml"])
def test_sub_samples_are_counted_instead_of_their_parents_when_asked(form):
    path = JM / f"5.6.3-subresults-{form}.jtl"
    [top] = [r.measurement for r in parsed(path)[0]]
    found = runs([path], registry.adapters(), None)
    [subs] = [r.measurement for run in found
              for r in results_of(run.adapter, run.name, run.paths, read_options=frozenset({"jmeter_subsamples"}))]
    # Per thread and loop: /redir's 2 hops, /page.html's 3 sub-samples, the transaction's 2 GET /
    # (its own row not counted): 7 x 100, where the top-level count is 4 x 100.
    assert top.counts.requests_total == 400 and subs.counts.requests_total == 700
    assert subs.counts.status_codes.get(302) == 100 and 302 not in top.counts.status_codes
    assert subs.latency.max_ms <= top.latency.max_ms  # a parent's time spans its sub-samples'
    assert any("sub-samples counted instead" in note for note in subs.notes)


def test_locust_0x_requests_and_distribution_csvs_are_read():
    loc = FIXTURES / "locust"
    m = parsed(loc / "0.x-docs_requests.csv", loc / "0.x-docs_distribution.csv")[0][0].measurement
    # Its `/does_not_exist` row: 0 requests, 56 failures: `# requests` counted successes alone.
    assert (m.counts.requests_total, m.counts.requests_ok, m.counts.requests_failed) == (165, 109, 56)
    assert m.latency.mean_ms == 3 and m.latency.max_ms == 6
    assert m.latency.percentiles.p50_ms == 3 and m.latency.percentiles.p99_ms == 5  # the distribution's Total row
    assert m.timing.duration_s == pytest.approx(109 / 1.89)


def test_locust_0x_counts_that_cannot_be_told_are_read_one_way_and_the_note_says_which(tmp_path):
    # The recorded example without its all-failed row: whether `# requests` holds the 56
    # failures is no longer shown by any row, so the 0.9-and-earlier reading is taken, said.
    lines = (FIXTURES / "locust" / "0.x-docs_requests.csv").read_text().splitlines(keepends=True)
    (tmp_path / "x_requests.csv").write_text("".join(line for line in lines if "does_not_exist" not in line))
    m = parsed(tmp_path / "x_requests.csv", tool="locust")[0][0].measurement
    assert (m.counts.requests_total, m.counts.requests_ok, m.counts.requests_failed) == (165, 109, 56)
    assert any("nothing beside it tells which" in note for note in m.notes), m.notes


def test_a_locust_csv_header_with_every_field_quoted_reads_the_same(tmp_path):
    # A mutation of recorded 2.47.0 CSVs: their header lines quoted field by field, as older
    # Locusts wrote them; the rows stay as recorded.
    loc = FIXTURES / "locust"
    for end in ("_stats.csv", "_stats_history.csv", "_failures.csv"):
        header, rest = (loc / f"2.47.0-404{end}").read_text().split("\n", 1)
        quoted = ",".join(f'"{name}"' for name in header.split(","))
        (tmp_path / f"q{end}").write_text(quoted + "\n" + rest)
    quoted = parsed(*sorted(tmp_path.iterdir()), tool="locust")[0][0].measurement
    plain = parsed(*(loc / f"2.47.0-404{end}" for end in ("_stats.csv", "_stats_history.csv", "_failures.csv")),
                   tool="locust")[0][0].measurement
    assert quoted.counts == plain.counts and quoted.series == plain.series and len(plain.series) > 0
