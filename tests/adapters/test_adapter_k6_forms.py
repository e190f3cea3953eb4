"""k6's `--out csv` rows, and what the other k6 forms now read or name, over real public k6
output (tests/fixtures/k6/README.md names each file's source; k6 itself never runs here)."""
from __future__ import annotations

import csv
import warnings

import pytest

from conftest import FIXTURES
from toolbench.cli.commands import results_of
from toolbench.contract import registry
from toolbench.contract.adapter import RawOutput
from toolbench.contract.checked import parse_checked
from toolbench.contract.runs_found import runs
from toolbench.errors import Notice, ParseError

K6 = FIXTURES / "k6"
CSV = K6 / "recent-out-csv-head.csv"


def parsed(path):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", Notice)
        found = runs([path], registry.adapters(), None)
        (result,) = [r for run in found for r in results_of(run.adapter, run.name, run.paths)]
    return result.measurement, [str(w.message) for w in seen]


def rows(metric):
    with open(CSV, newline="") as fh:
        return [row for row in csv.DictReader(fh) if row["metric_name"] == metric]


def test_k6_csv_is_told_from_its_header_and_read_row_by_row():
    m, notes = parsed(CSV)
    assert notes == [f"{K6 / 'recent-out-csv-head'}: read as k6 output"]
    reqs = rows("http_reqs")
    assert m.counts.requests_total == len(reqs) == 9 and m.counts.requests_failed == 0
    assert m.counts.status_codes == {200: 9}
    times = [float(r["metric_value"]) for r in rows("http_req_duration")]
    assert (m.latency.min_ms, m.latency.max_ms) == (min(times), max(times))
    assert m.latency.mean_ms == pytest.approx(sum(times) / len(times))
    assert m.transfer.received_bytes == sum(int(float(r["metric_value"])) for r in rows("data_received"))
    assert m.transfer.sent_bytes == sum(int(float(r["metric_value"])) for r in rows("data_sent"))
    waits = [float(r["metric_value"]) for r in rows("http_req_waiting")]
    assert m.latency.ttfb_mean_ms == pytest.approx(sum(waits) / len(waits))
    assert m.timing.duration_s == 1.0 and m.concurrency == 1 and m.url == "http://localhost:8080/users"


def test_k6_csv_names_what_it_does_not_read():
    m, _ = parsed(CSV)
    assert any("failed requests from http_req_failed" in note for note in m.notes)
    unread = next(note for note in m.notes if note.startswith("not read (no field here): the metrics"))
    assert "checks" in unread and "iteration_duration" in unread and "http_req_blocked" in unread
    assert "the extra_tags and metadata columns" in " ".join(m.notes)
    assert any("(whole seconds)" in note for note in m.notes)


def test_k6_csv_with_a_header_that_is_not_k6s_is_a_parse_error(tmp_path):
    cut = tmp_path / "rows.csv"
    cut.write_text("\n".join(CSV.read_text().splitlines()[1:]) + "\n")  # the header cut away
    with pytest.raises(ParseError, match="CSV header: not k6's"):
        parse_checked(registry.get("k6"), RawOutput(files={"csv": cut}, source="rows"))


def test_k6_json_points_now_give_the_duration_and_phase_means():
    m, _ = parsed(K6 / "0.x-out-json-head.json")
    assert (m.counts.requests_total, m.counts.requests_failed, m.counts.status_codes) == (2, 0, {200: 2})
    assert m.timing.duration_s is not None and 0 < m.timing.duration_s < 2
    assert m.latency.ttfb_mean_ms is not None and m.latency.connect_mean_ms is not None


def test_k6_summary_export_names_the_metrics_it_has_no_field_for():
    m, _ = parsed(K6 / "0.x-summary-export-gateways.json")
    assert m.counts.requests_total == 413551
    unread = next(note for note in m.notes if note.startswith("not read (no field here)"))
    assert "iterations" in unread and "checks" in unread
