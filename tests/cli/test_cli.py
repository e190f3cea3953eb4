"""The `toolbench` command as a user runs it: exit codes, one-line errors, outputs."""
import csv
import io
import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import FIXTURES, REPO
from helpers.cli import cli
from toolbench.record.schema import SCHEMA_VERSION


def test_validate_shows_the_plan():
    done = cli("validate", str(REPO / "scenarios" / "quickstart.yaml"))
    assert done.returncode == 0, done.stderr
    assert "ab-c10-ka-rep1" in done.stdout and "ok," in done.stdout


def test_a_bad_scenario_is_one_line_naming_file_line_and_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntarget: {server: nginx-static}\nmatrix:\n  tool: [ab]\n  concurrency: [1, two]\n")
    done = cli("validate", str(bad))
    assert done.returncode == 2  # a scenario error is a usage error
    assert done.stderr == f"toolbench: error: {bad}:5: matrix.concurrency[1]: expected a positive integer, got 'two'\n"


def test_parse_groups_the_files_of_one_run_into_one_result():
    folder = FIXTURES / "ab"
    files = [folder / "2.3-nokeepalive.txt", folder / "2.3-nokeepalive.csv", folder / "2.3-nokeepalive.tsv",
             folder / "2.3-404.txt"]
    done = cli("parse", "--tool", "ab", *map(str, files))
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)
    assert [r["identity"]["cell_id"] for r in records] == ["2.3-nokeepalive", "2.3-404"]
    first = records[0]
    assert first["schema_version"] == SCHEMA_VERSION and first["identity"]["tool"] == "ab"
    assert first["measurement"]["counts"]["requests_total"] == 5000 and first["measurement"]["histogram"]
    assert first["measurement"]["latency"]["percentiles"]["p50_ms"] == 0.374
    assert records[1]["outcome"]["status"] == "failed"


def test_parse_csv_and_table_formats():
    path = str(FIXTURES / "siege" / "4.0.7-benchmark-j.txt")
    done = cli("parse", "--tool", "siege", path, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert rows[0]["counts.requests_total"] == "2000" and rows[0]["rates.rps"] == "9090.91"
    assert rows[0]["latency.percentiles.p50_ms"] == ""  # absent stays empty, never 0
    table = cli("parse", "--tool", "siege", path, "--format", "table")
    assert table.returncode == 0 and "9,091" in table.stdout and not table.stderr  # a table is output


def test_a_table_of_appended_runs_shows_where_their_names_differ(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    done = cli("parse", str(FIXTURES / "wrk" / "4.1.0-appended-headings.txt"), "--format", "table")
    assert done.returncode == 0, done.stderr
    cells = "".join(line.split("│")[0].strip() for line in done.stdout.splitlines()[2:])
    for name in ("nginx-keep-alive", "nginx-with-latency", "flaky-server", "nginx-404"):
        assert f"4.1.0-appended-headings-{name}" in cells, done.stdout


def test_parse_errors_are_one_line():
    done = cli("parse", "--tool", "ab", str(FIXTURES / "siege" / "4.0.7-benchmark-j.txt"))
    assert done.returncode == 1
    assert done.stderr.startswith("toolbench: error: ab: cannot parse output") and done.stderr.count("\n") == 1
    assert cli("parse", "--tool", "nosuchtool", "x").stderr.startswith("toolbench: error: unknown tool 'nosuchtool'")
    assert "no such file" in cli("parse", "--tool", "ab", "/nonexistent.txt").stderr


def test_tools_lists_versions():
    done = cli("tools")
    assert done.returncode == 0
    lines = {line.split()[0]: line for line in done.stdout.splitlines()}
    if (Path("/usr/bin/ab")).exists():
        assert lines["ab"].split()[1] == "2.3"


@pytest.mark.integration
def test_run_ends_on_the_report_path_and_load_gives_a_dataframe(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: tiny\ntarget: {server: nginx-static}\nmatrix: {tool: [ab], concurrency: [2, 4]}\n"
                        "stop: {requests: 500}\n")
    done = cli("run", str(scenario), "--reports-dir", str(tmp_path / "reports"))
    assert done.returncode == 0, done.stderr
    report = Path(done.stdout.strip().splitlines()[-1])
    assert report.name == "report.html" and report.is_file()
    html = report.read_text()
    assert "<svg" in html and "ab-c4-ka-rep1" in html and "http://" not in html.split("<body>")[0]
    import toolbench
    frame = toolbench.load(report.parent)
    assert sorted(frame["identity.cell_id"]) == ["ab-c2-ka-rep1", "ab-c4-ka-rep1"]  # in the run's shuffled order
    assert (frame["counts.requests_total"] == 500).all()
    assert frame["transfer.sent_bytes"].isna().all()  # ab reports no bytes sent for a GET: absent, not 0
    # ab prints no 99.9th percentile; toolbench derives it from the -g per-request file, whose times
    # are whole milliseconds: a whole value marked derived, or absent (with a note) below 1 ms, or,
    # where the -g rounding put it beyond the exact figures of the -e file (above its max, or below
    # its 99th percentile), that figure (with a note).
    notes_of = frame["tool_notes"].fillna("") + "\n" + frame["notes"].fillna("")  # a line per note
    for p99, p999, top, fidelity, notes in zip(frame["latency.percentiles.p99_ms"], frame["latency.percentiles.p999_ms"],
                                               frame["latency.max_ms"], frame["fidelity.latency.percentiles.p999_ms"],
                                               notes_of):
        if pd.isna(p999):
            assert "p999 is below the 1 ms step" in notes
            continue
        assert fidelity == "derived"
        if "p999_ms read from the per-request times" in notes:
            assert p999 in (top, p99) and f"set to {p999:g} ms" in notes
        else:
            assert p999 >= 1.0 and p999 == int(p999)
    rerender = cli("report", str(report.parent), "-o", str(tmp_path / "again.html"))
    assert rerender.returncode == 0 and (tmp_path / "again.html").is_file()


def test_parse_joins_all_files_of_a_locust_run():
    folder = FIXTURES / "locust"
    files = sorted(folder.glob("2.47.0-single*"))
    files = [f for f in files if not f.name.endswith(".py")]
    done = cli("parse", "--tool", "locust", *map(str, files))
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)
    assert [r["identity"]["cell_id"] for r in records] == ["2.47.0-single"]
    assert records[0]["measurement"]["counts"]["requests_total"] == 8918  # the JSON's count, not the lagging CSV's
