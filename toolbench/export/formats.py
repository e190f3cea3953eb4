"""Stored runs out to other tools: a table of results as CSV, JSON, Markdown or Parquet (the
rows of toolbench.export.rows, one per result), and each result's HDR histogram as the percentile
distribution text HdrHistogram writes (`.hgrm`), which its plotter and wrk2's readers take."""
from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterator

from hdrh.histogram import HdrHistogram

from toolbench.errors import MissingExtra, ToolbenchError, UsageError
from toolbench.export import rows
from toolbench.record import histogram, outfile, store
from toolbench.record.schema import RunResult

if TYPE_CHECKING:
    import pandas

FORMATS = ("csv", "json", "markdown", "parquet")
SUFFIXES = {".csv": "csv", ".json": "json", ".md": "markdown", ".markdown": "markdown", ".parquet": "parquet"}
# A Markdown table of 200 columns reads as nothing: it shows these unless columns are asked for.
MARKDOWN_COLUMNS = ("run", "identity.cell_id", "identity.tool", "identity.concurrency", "identity.keepalive",
                    "outcome.status", "counts.requests_total", "counts.requests_failed", "rates.rps_ok",
                    "latency.mean_ms", "latency.percentiles.p50_ms", "latency.percentiles.p99_ms", "latency.max_ms")
ABSENT = "—"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a cell as a formula
# A number as a spreadsheet reads one (not Python's float(): `-inf` and `-1_0` are formulas there);
# no two repetitions can share a digit, so a long cell is matched in one pass.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
HGRM_TICKS_PER_HALF_DISTANCE = histogram.TICKS_PER_HALF_DISTANCE
HGRM_UNIT_US = 1000.0  # values are written in milliseconds; the histograms hold microseconds


def format_of(output: Path | None, given: str | None) -> str:
    """The format asked for, else the one the output file's suffix names."""
    if given:
        return given
    if output is not None and output.suffix.lower() in SUFFIXES:
        return SUFFIXES[output.suffix.lower()]
    raise UsageError(f"{output or 'the output'}: say which format with --format ({', '.join(FORMATS)})")


def table(runs: list[Path], columns: list[str] | None = None, fmt: str = "csv") -> "pandas.DataFrame":
    """The results of the runs as the export writes them; `columns` picks some, in that order."""
    frame = rows.load(*runs)
    if columns is None and fmt == "markdown":
        columns = [c for c in MARKDOWN_COLUMNS if c in frame.columns]
    if columns is None:
        return frame
    unknown = [c for c in columns if c not in frame.columns]
    if unknown:
        raise ToolbenchError(f"no column {', '.join(map(repr, unknown))} in these results "
                             f"(e.g. {', '.join(MARKDOWN_COLUMNS[:4])})")
    return frame[columns]


def write(frame: "pandas.DataFrame", fmt: str, output: Path | None, stdout: IO[str]) -> None:
    """The table in `fmt`, to `output` (whole or not at all) or, for a text format, to stdout."""
    if fmt not in FORMATS:
        raise ToolbenchError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    if output is None:
        if fmt == "parquet":
            raise UsageError("Parquet is binary: give the file with -o")
        stdout.write(_text(frame, fmt))
        return
    with _atomic(output) as tmp:
        if fmt == "parquet":
            if importlib.util.find_spec("pyarrow") is None:
                raise MissingExtra("parquet", "pyarrow", "Parquet export")
            frame.to_parquet(tmp, engine="pyarrow", index=False)
        else:
            tmp.write_text(_text(frame, fmt), encoding="utf-8")


def _text(frame: "pandas.DataFrame", fmt: str) -> str:
    if fmt == "csv":
        return str(as_text_not_formulas(frame).to_csv(index=False, lineterminator="\n"))
    records = [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]
    if fmt == "json":
        return json.dumps(records, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    return markdown(list(frame.columns), records)


def as_text_not_formulas(frame: "pandas.DataFrame") -> "pandas.DataFrame":
    """The frame with each text cell a spreadsheet would take for a formula (one starting with =,
    +, -, @, a tab or a carriage return: a label or an error text from a tool or a stored run may
    be `=HYPERLINK(...)`) prefixed with `'`, so that it is read as the text it is (OWASP's advice
    on CSV injection). Numbers stay numbers: a number column is left alone, and a text cell that
    is a number (`-1.5`) is no formula. A carriage return in a text becomes a line feed: the csv
    module leaves a field with one unquoted, and a spreadsheet ends the row there, so that what
    follows it would start a row of its own (and could be a formula)."""
    text = [c for c in frame.columns if frame[c].dtype == object or str(frame[c].dtype) == "string"]
    if not text:
        return frame
    frame = frame.copy()
    for column in text:
        frame[column] = frame[column].map(_not_formula, na_action="ignore")
    return frame


def _not_formula(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if value.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(value):  # -1.5, +2e3: numbers
        value = "'" + value
    return value.replace("\r\n", "\n").replace("\r", "\n")  # a field with \n is quoted


def _plain(value: Any) -> Any:
    """A pandas scalar as JSON has it: a missing value is null."""
    import pandas

    if value is None or value is pandas.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def markdown(columns: list[str], records: list[dict[str, Any]]) -> str:
    """A GitHub-flavoured table; numbers right-aligned, a missing value shown as —."""
    numeric = {c: all(isinstance(r[c], (int, float)) and not isinstance(r[c], bool) for r in records
                      if r[c] is not None) for c in columns}
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |",
             "| " + " | ".join("---:" if numeric[c] else "---" for c in columns) + " |"]
    lines += ["| " + " | ".join(_cell(r[c]) for c in columns) + " |" for r in records]
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    """A value as a Markdown table cell that is text and only text: a label or an error may hold
    HTML (`<img onerror=...>`, which a Markdown renderer passes through), an entity, a backtick
    that opens code across cells, or a pipe or line break that ends the cell or the row early."""
    if value is None:
        return ABSENT
    if isinstance(value, float):
        value = f"{value:.6g}"
    text = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")
    return text.replace("\r\n", "<br>").replace("\r", "<br>").replace("\n", "<br>")


# ---- HDR histograms ----

@dataclass(frozen=True)
class HgrmFile:
    path: Path
    cell_id: str
    requests: int


def write_hgrm(runs: list[Path], folder: Path) -> list[HgrmFile]:
    """Each result's histogram as folder/<run>/<cell>.hgrm (and <cell>.uncorrected.hgrm for an
    open model's uncorrected latency); results without one are skipped."""
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder}: is a file; --hgrm takes a folder")
    written = []
    for run, result in rows.results(runs):
        for suffix, encoded in _histograms(result):
            path = store.contained(folder, run, f"{result.identity.cell_id}{suffix}.hgrm")
            hist = histogram.decode(encoded)
            with _atomic(path) as tmp:
                tmp.write_text(percentile_distribution(hist), encoding="ascii")
            written.append(HgrmFile(path, result.identity.cell_id, hist.get_total_count()))
    return written


def _histograms(result: RunResult) -> Iterator[tuple[str, str]]:
    if result.measurement.histogram:
        yield "", result.measurement.histogram
    if result.measurement.histogram_uncorrected:
        yield ".uncorrected", result.measurement.histogram_uncorrected


def percentile_distribution(hist: HdrHistogram, unit: float = HGRM_UNIT_US,
                            ticks: int = HGRM_TICKS_PER_HALF_DISTANCE) -> str:
    """HdrHistogram's `outputPercentileDistribution` text, as its Java original writes it:
    value (in ms), percentile, count so far and 1/(1-percentile), then mean, standard
    deviation, max, count and the bucket layout. (The Python port leaves the standard
    deviation in the recorded unit and names the count `TotalCount`; this follows Java.)"""
    digits = hist.significant_figures
    row = f"{{:12.{digits}f}} {{:2.12f}} {{:10d}} {{:14.2f}}\n"
    last = f"{{:12.{digits}f}} {{:2.12f}} {{:10d}}\n"
    out = ["{:>12} {:>14} {:>10} {:>14}\n\n".format("Value", "Percentile", "TotalCount", "1/(1-Percentile)")]
    for step in histogram.percentile_levels(hist, ticks):
        level, value, below = step.percentile, step.value_us / unit, step.count
        if level != 100:
            out.append(row.format(value, level / 100, below, 1 / (1 - level / 100)))
        else:
            out.append(last.format(value, level / 100, below))
    out.append(f"#[Mean    = {hist.get_mean_value() / unit:12.{digits}f}, "
               f"StdDeviation   = {hist.get_stddev() / unit:12.{digits}f}]\n")
    out.append(f"#[Max     = {hist.get_max_value() / unit:12.{digits}f}, "
               f"Total count    = {hist.get_total_count():12d}]\n")
    out.append(f"#[Buckets = {hist.bucket_count:12d}, SubBuckets     = {hist.sub_bucket_count:12d}]\n")
    return "".join(out)


def _atomic(output: Path) -> contextlib.AbstractContextManager[Path]:
    """A file written whole or not at all, and only ever a regular file (record.outfile): a reader
    never sees half an export, and `-o /dev/null` or a FIFO is refused, never replaced."""
    return outfile.written(output)

