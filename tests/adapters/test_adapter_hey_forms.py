"""hey's fields that its forms print: each read into a field, or named in a note (over the
recorded real output in tests/fixtures/hey/)."""
from __future__ import annotations

import csv

import pytest

from conftest import FIXTURES
from helpers.tool_cells import parsed

HEY = FIXTURES / "hey"


def test_hey_summary_reads_the_connect_and_first_byte_means_of_its_details():
    m = parsed("hey", "0.1.4-ok")
    text = (HEY / "0.1.4-ok.txt").read_text()
    assert "DNS+dialup:\t0.0000 secs" in text and "resp wait:\t0.0007 secs" in text
    assert (m.latency.connect_mean_ms, m.latency.ttfb_mean_ms) == (0.0, pytest.approx(0.7))


def test_hey_summary_names_what_it_prints_and_toolbench_does_not_read():
    m = parsed("hey", "0.1.4-ok")
    unread = next(note for note in m.notes if note.startswith("not read (no field here)"))
    for printed in ("10%, 25% latency rows", "response time histogram", "Size/request", "DNS-lookup", "req write",
                    "resp read"):
        assert printed in unread


def test_hey_summary_without_a_response_says_its_times_are_none():
    m = parsed("hey", "0.1.4-timeout")
    assert m.latency.mean_ms is None and m.latency.connect_mean_ms is None
    assert any("NaN" in note for note in m.notes)


def test_hey_csv_rows_give_the_phase_means_and_name_the_other_columns():
    m = parsed("hey", "0.1.4-ok-csv")
    with open(HEY / "0.1.4-ok-csv.txt", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert m.latency.connect_mean_ms == pytest.approx(sum(float(r["DNS+dialup"]) for r in rows) / len(rows) * 1000)
    assert m.latency.ttfb_mean_ms == pytest.approx(sum(float(r["Response-delay"]) for r in rows) / len(rows) * 1000)
    assert any("DNS, Request-write and Response-read columns" in note for note in m.notes)
