"""`toolbench export` and `toolbench.load()` over recorded real runs: every format reads back
as load() gives it, and the .hgrm files match the hdrhistogram library's own output."""
from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest

import toolbench
from toolbench.cli.main import main
from toolbench.export import rows
from toolbench.record import histogram
from toolbench.record.schema import RunResult
from toolbench.record.store import RunDir

FIXTURES = Path(__file__).parents[1] / "fixtures"
RUNS = FIXTURES / "runs"  # a folder of recorded runs: complete, interrupted, all failed, two targets...
STORED = FIXTURES / "stored"  # runs written by older toolbench versions, migrated on load


def export(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["export", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def loaded() -> pd.DataFrame:
    return toolbench.load(RUNS, STORED)


def test_load_takes_a_folder_of_runs_and_single_runs(loaded: pd.DataFrame) -> None:
    names = sorted(p.name for p in RUNS.iterdir() if (p / "manifest.json").is_file())
    names += sorted(p.name for p in STORED.iterdir() if (p / "manifest.json").is_file())
    assert list(dict.fromkeys(loaded["run"])) == names
    expected = sum(len(RunDir(RUNS / n if (RUNS / n).is_dir() else STORED / n).results()) for n in names)
    assert len(loaded) == expected
    one = toolbench.load(RUNS / "pair-a")
    assert set(one["run"]) == {"pair-a"} and len(one) == len(RunDir(RUNS / "pair-a").results())
    # every result has every fixed column, each with its own nullable type
    assert loaded["counts.requests_total"].dtype == "Int64" and loaded["rates.rps_ok"].dtype == "Float64"
    assert loaded["identity.keepalive"].dtype == "boolean" and loaded["outcome.status"].dtype == "string"


def test_an_absent_figure_is_missing_never_zero(loaded: pd.DataFrame) -> None:
    siege = loaded[(loaded["run"] == "pair-a") & (loaded["identity.tool"] == "siege")]
    assert len(siege) and siege["latency.percentiles.p50_ms"].isna().all()  # siege prints no percentiles
    assert (siege["fidelity.latency.percentiles.p50_ms"] == "absent").all()
    assert (siege["fidelity.rates.rps"] == "reported").all()
    missing = loaded[loaded["outcome.status"] == "unsupported"]
    assert missing["counts.requests_total"].isna().all()


def test_csv_reads_back_as_load_gives_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         loaded: pd.DataFrame) -> None:
    out = tmp_path / "all.csv"
    code, _, err = export(capsys, str(RUNS), str(STORED), "-o", str(out))
    assert code == 0, err
    header = pd.read_csv(out, nrows=0).columns
    back = pd.read_csv(out, dtype=rows.dtypes(header))
    pd.testing.assert_frame_equal(back, loaded)
    # plain pandas, without the types, still reads the same numbers
    plain = pd.read_csv(out)
    pd.testing.assert_series_equal(plain["counts.requests_total"], loaded["counts.requests_total"],
                                   check_dtype=False)


def test_parquet_reads_back_as_load_gives_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             loaded: pd.DataFrame) -> None:
    out = tmp_path / "all.parquet"
    code, _, err = export(capsys, str(RUNS), str(STORED), "-o", str(out))
    assert code == 0, err
    pd.testing.assert_frame_equal(pd.read_parquet(out), loaded)


def test_json_has_one_object_per_result_with_nulls(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   loaded: pd.DataFrame) -> None:
    code, out, err = export(capsys, str(RUNS), "--format", "json")
    assert code == 0, err
    records = json.loads(out)
    frame = loaded[loaded["run"].isin([p.name for p in RUNS.iterdir()])].reset_index(drop=True)
    assert len(records) == len(frame)
    for record, (_, row) in zip(records, frame.iterrows()):
        assert record["identity.cell_id"] == row["identity.cell_id"]
        total = row["counts.requests_total"]
        assert record["counts.requests_total"] == (None if pd.isna(total) else int(total))
    # the same table as CSV: the JSON reads back into it
    back = pd.DataFrame(records).astype(rows.dtypes(records[0]))
    pd.testing.assert_frame_equal(back, frame[list(records[0])])


def test_markdown_is_one_table_row_per_result(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = export(capsys, str(RUNS / "pair-a"), "--format", "markdown")
    assert code == 0, err
    lines = out.splitlines()
    results = RunDir(RUNS / "pair-a").results()
    assert len(lines) == 2 + len(results) and lines[0].startswith("| run | identity.cell_id |")
    siege = next(line for line in lines if "| siege-c10-ka-rep1 |" in line)
    assert "| — |" in siege  # siege's absent percentiles
    code, out, _ = export(capsys, str(RUNS / "pair-a"), "--format", "markdown",
                          "--columns", "identity.cell_id,latency.percentiles.p99_ms")
    assert out.splitlines()[0] == "| identity.cell_id | latency.percentiles.p99_ms |"


def test_export_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = export(capsys, str(RUNS / "pair-a"), "-o", str(tmp_path))
    assert code != 0 and err == f"toolbench: error: {tmp_path}: is a folder; -o takes a file\n"
    code, _, err = export(capsys, str(RUNS / "pair-a"), "--format", "parquet")
    assert code != 0 and err == "toolbench: error: Parquet is binary: give the file with -o\n"
    code, _, err = export(capsys, str(RUNS / "pair-a"), "--columns", "rates.rps_ok,nope")
    assert code != 0 and err.startswith("toolbench: error: no column 'nope'") and err.count("\n") == 1
    code, _, err = export(capsys, str(tmp_path), "-o", str(tmp_path / "x.csv"))
    assert code != 0 and "neither a run folder nor a folder of runs" in err
    code, _, err = export(capsys, str(RUNS / "pair-a"), "-o", str(tmp_path / "x.txt"))
    assert code != 0 and "say which format with --format" in err
    assert not list(tmp_path.iterdir())  # nothing half-written


def _table_and_footer(text: str) -> tuple[list[str], dict[str, float]]:
    lines = text.splitlines()
    table = [line for line in lines if line and not line.startswith("#")]
    footer = dict((k, float(v)) for k, v in re.findall(r"(\w[\w ]*?)\s*=\s*([\d.]+)", "".join(
        line for line in lines if line.startswith("#"))))
    return table, footer


def test_hgrm_matches_the_hdrhistogram_library(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = export(capsys, str(RUNS / "pair-a"), str(RUNS / "generator-bound"), "--hgrm", str(tmp_path))
    assert code == 0, err
    checked = 0
    for run in ("pair-a", "generator-bound"):
        for result in RunDir(RUNS / run).results():
            path = tmp_path / run / f"{result.identity.cell_id}.hgrm"
            if not result.measurement.histogram:
                assert not path.exists()
                continue
            hist = histogram.decode(result.measurement.histogram)
            theirs = io.BytesIO()
            hist.output_percentile_distribution(theirs, 1000.0)  # the library's own .hgrm, in ms
            mine_table, mine = _table_and_footer(path.read_text())
            their_table, their = _table_and_footer(theirs.getvalue().decode())
            assert mine_table == their_table and len(mine_table) > 20
            assert mine["Mean"] == their["Mean"] and mine["Max"] == their["Max"]
            assert mine["Buckets"] == their["Buckets"] and mine["SubBuckets"] == their["SubBuckets"]
            assert mine["Total count"] == their["TotalCount"] == hist.get_total_count()
            # the library leaves the standard deviation in µs; HdrHistogram's Java original scales it
            assert mine["StdDeviation"] == pytest.approx(their["StdDeviation"] / 1000.0, abs=0.0005)
            last = mine_table[-1].split()
            assert float(last[1]) == 1.0 and int(last[2]) == hist.get_total_count()
            checked += 1
    assert checked >= 10


def test_load_adds_series_and_histograms_on_request() -> None:
    frame = toolbench.load(RUNS / "pair-a", series=True, histograms=True)
    results: list[RunResult] = RunDir(RUNS / "pair-a").results()
    for (_, row), result in zip(frame.iterrows(), results):
        series = row["series"]
        assert list(series["requests"]) == [s.requests for s in result.measurement.series]
        if result.measurement.histogram:
            assert row["histogram"].get_total_count() == histogram.decode(result.measurement.histogram).get_total_count()
        else:
            assert row["histogram"] is None
    assert "series" not in toolbench.load(RUNS / "pair-a").columns
