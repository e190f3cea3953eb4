"""Locust's adapter over the CSVs of older Locusts, recorded from the real 0.9.0, 0.11.0, 0.12.2,
0.14.6 and 1.1.1 (fixtures/locust/record_old.py; README.md and CASES.tsv say how)."""
import csv
import warnings

import pytest

from conftest import FIXTURES
from toolbench.cli.commands import results_of
from toolbench.contract import registry
from toolbench.contract.runs_found import runs
from toolbench.errors import Notice

FOLDER = FIXTURES / "locust"


def parsed(version: str, *endings: str, tool: str | None = "locust"):
    """The one result of `toolbench parse` over the case's files with these endings (all: none given)."""
    paths = sorted(FOLDER.glob(f"{version}-mixed[._]*")) if not endings else \
        [FOLDER / f"{version}-mixed{end}" for end in endings]
    paths = [p for p in paths if not p.name.endswith(".locustfile.py")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Notice)
        found = runs(paths, registry.adapters(), registry.get(tool) if tool else None)
    [result] = [r for run in found for r in results_of(run.adapter, run.name, run.paths)]
    return result


def aggregated(path, count: str = "# requests", failed: str = "# failures") -> tuple[int, int]:
    rows = [r for r in csv.DictReader(path.read_text().splitlines()) if r["Name"] in ("Total", "Aggregated")]
    return int(rows[-1][count]), int(rows[-1][failed])


def test_a_history_with_two_rows_for_one_second_is_merged_not_refused():
    history = FOLDER / "1.1.1-mixed_stats_history.csv"
    seconds = [r["Timestamp"] for r in csv.DictReader(history.read_text().splitlines()) if r["Name"] == "Aggregated"]
    assert len(seconds) == 3 and seconds[1] == seconds[2]  # the row Locust 1.1 writes as the run ends
    result = parsed("1.1.1")
    m = result.measurement
    total, failed = aggregated(FOLDER / "1.1.1-mixed_stats.csv", "Request Count", "Failure Count")
    assert (m.counts.requests_total, m.counts.requests_failed) == (total, failed) == (738, 47)
    assert [s.second for s in m.series] == [0, 2]
    assert sum(s.requests for s in m.series) == total and sum(s.errors for s in m.series) == failed
    assert any("two Aggregated rows for 1 second(s)" in note for note in m.notes)
    assert any("wrote again as the run ended" in note for note in m.notes)  # its log says 1.1.1
    assert result.outcome.status.value == "ok"


def test_locust_0_9_counts_successes_alone_and_its_log_says_which_version():
    m = parsed("0.9.0").measurement
    counted, failed = aggregated(FOLDER / "0.9.0-mixed_requests.csv")
    assert (counted, failed) == (117, 9)
    assert (m.counts.requests_total, m.counts.requests_ok, m.counts.requests_failed) == (126, 117, 9)
    assert m.counts.failures.http_4xx == 9  # the error report on stderr
    assert any("Locust 0.9 (its log says so) counted successes alone" in note for note in m.notes)


def test_locust_0_11_writes_the_same_form_counting_every_request():
    m = parsed("0.11.0").measurement
    assert aggregated(FOLDER / "0.11.0-mixed_requests.csv") == (446, 25)
    assert (m.counts.requests_total, m.counts.requests_ok, m.counts.requests_failed) == (446, 421, 25)
    assert any("Locust 0.11 (its log says so) counts every request" in note for note in m.notes)
    assert m.latency.percentiles.p50_ms == 8  # the distribution CSV's Total row


@pytest.mark.parametrize("version, read_as", [("0.9.0", (126, 117, 9)), ("0.11.0", (471, 446, 25))])
def test_without_the_log_the_undecided_form_is_read_as_0_9_and_the_other_reading_is_said(version, read_as):
    m = parsed(version, "_requests.csv", "_distribution.csv").measurement
    assert (m.counts.requests_total, m.counts.requests_ok, m.counts.requests_failed) == read_as
    counted, failed = aggregated(FOLDER / f"{version}-mixed_requests.csv")
    [note] = [n for n in m.notes if "nothing beside it tells which" in n]
    assert f"from Locust 0.10 or 0.11 it would be {counted} requests, {failed} of them failed" in note


def test_locust_0_12_names_its_total_row_aggregated_which_tells_the_counting():
    m = parsed("0.12.2", "_requests.csv", "_distribution.csv").measurement  # without the log
    assert (m.counts.requests_total, m.counts.requests_failed) == aggregated(FOLDER / "0.12.2-mixed_requests.csv")
    assert any("the total row is named Aggregated" in note for note in m.notes)


def test_locust_0_14_stats_and_history_forms_are_read_without_naming_the_tool():
    result = parsed("0.14.6", tool=None)
    m = result.measurement
    assert (m.counts.requests_total, m.counts.requests_failed) == aggregated(FOLDER / "0.14.6-mixed_stats.csv")
    assert m.counts.requests_total == 1015 and m.counts.failures.http_4xx == 66
    assert m.latency.percentiles.p50_ms == 10 and m.latency.percentiles.p999_ms == 100
    assert m.rates.rps == 253.39
    assert sum(s.requests for s in m.series) == 1015 and sum(s.errors for s in m.series) == 66
    assert any("Locust 0.13/0.14's stats CSV" in note for note in m.notes)


def test_the_older_forms_are_classified_by_content():
    adapter = registry.get("locust")
    roles = {"0.14.6-mixed_stats.csv": "stats_csv", "0.14.6-mixed_stats_history.csv": "history_csv",
             "0.14.6-mixed_failures.csv": "failures_csv", "1.1.1-mixed_stats_history.csv": "history_csv",
             "0.9.0-mixed_requests.csv": "stats_csv", "0.9.0-mixed_distribution.csv": "distribution_csv"}
    for name, role in roles.items():
        text = (FOLDER / name).read_text()
        assert adapter.classify(FOLDER / name, text) == role and adapter.recognizes(FOLDER / name, text), name
