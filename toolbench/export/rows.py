"""Results as rows: one flat row per result, its nested fields as dotted column names, for
`toolbench.load()` and every export format (CSV, JSON, Markdown, Parquet) alike.

The row is walked from the record's types, not from what one record happens to hold, so
every result has the same fixed columns (an absent figure is a missing value, never 0) and
each column has one pandas type: a stored run reads back from CSV or Parquet as it loads.
Maps keyed by data (status codes, extra matrix parameters, artifacts by role, the server's
connections by TCP state) add a column per key."""
from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from toolbench.errors import Notice, StoreError
from toolbench.record import store
from toolbench.record.schema import METRICS, Artifact, Measurement, RunResult, SecondSample

if TYPE_CHECKING:
    import pandas

# Bulky per-request data stay in the record (`load(..., series=True, histograms=True)` adds
# them as objects); the measurement's own identity duplicates the identity columns.
_LEFT_OUT = frozenset(["histogram", "histogram_uncorrected", "series", "probe.samples_ms", "probe.baseline_ms",
                       "probe.sample_offsets_s", "tool", "url", "concurrency", "tool_version", "notes", "fidelity",
                       "by_request"])  # a workload's figures per request: a record each, not a column
RUN = "run"  # the run folder's name: rows of several runs stay apart

# Columns whose names carry a key from the data, and the type of every such column.
_KEYED = {"counts.status_codes": "Int64", "identity.params": "string", "outcome.artifacts": "string",
          "server_cost.connections_by_state_peak": "Int64", "fidelity": "string"}
_DTYPES = {bool: "boolean", int: "Int64", float: "Float64", str: "string"}


def flatten(result: RunResult, run: str | None = None) -> dict[str, Any]:
    """One row: `run` (when given), then toolbench's records (`identity.*`, `outcome.*`, `cost.*`,
    `probe.*`, `server_cost.*`) and the tool's figures under the names they had before schema 2
    moved them into `measurement` (`counts.requests_total`, `latency.percentiles.p99_ms`, ...).
    `fidelity.<metric>` says, for every metric, reported, derived or absent. A list of texts (notes,
    findings) is one text, a line each; toolbench's notes are `notes`, the tool's `tool_notes`."""
    row: dict[str, Any] = {RUN: run} if run is not None else {}
    for f in dataclasses.fields(RunResult):
        if f.name == "measurement":
            _walk(Measurement, result.measurement, "", row)
            row["tool_notes"] = _text_list(result.measurement.notes)
            for metric in sorted(METRICS):
                row[f"fidelity.{metric}"] = result.measurement.fidelity_of(metric).value
        elif f.name == "notes":
            row["notes"] = _text_list(result.notes)
        else:
            _field(_hints(RunResult)[f.name], getattr(result, f.name), f.name, row)
    return row


def _walk(tp: type, value: Any, prefix: str, row: dict[str, Any]) -> None:
    hints = _hints(tp)
    for f in dataclasses.fields(tp):
        name = f"{prefix}{f.name}"
        if name in _LEFT_OUT:
            continue
        _field(hints[f.name], None if value is None else getattr(value, f.name), name, row)


def _field(hint: Any, value: Any, name: str, row: dict[str, Any]) -> None:
    hint = _unoptional(hint)
    if dataclasses.is_dataclass(hint):
        _walk(hint, value, f"{name}.", row)  # a record that is absent still gives its columns
    elif typing.get_origin(hint) is dict:
        for key in sorted(value or {}, key=str):
            row[f"{name}.{key}"] = value[key]
    elif typing.get_args(hint) == (Artifact,):
        paths: dict[str, list[str]] = {}
        for artifact in value or ():
            paths.setdefault(artifact.role, []).append(artifact.path)
        for role in sorted(paths):
            row[f"{name}.{role}"] = "\n".join(paths[role])
    elif typing.get_origin(hint) is list:
        row[name] = _text_list(value or [])
    elif isinstance(value, enum.Enum):
        row[name] = value.value
    else:
        row[name] = None if value == "" else value  # an empty text is absent: CSV cannot tell them apart


def _text_list(values: list[Any]) -> str | None:
    return "\n".join(str(v) for v in values) or None


def _unoptional(hint: Any) -> Any:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return options[0]
    return hint


@functools.lru_cache(maxsize=None)
def _hints(tp: type) -> dict[str, Any]:
    return typing.get_type_hints(tp)


@functools.lru_cache(maxsize=1)
def _fixed_dtypes() -> dict[str, str]:
    """The pandas type of every fixed column, from the schema's type hints."""
    dtypes: dict[str, str] = {RUN: "string", "tool_notes": "string", "notes": "string"}

    def walk(tp: type, prefix: str) -> None:
        for f in dataclasses.fields(tp):
            name = f"{prefix}{f.name}"
            hint = _unoptional(_hints(tp)[f.name])
            if name in _LEFT_OUT or (prefix == "" and f.name in ("measurement", "notes")):
                continue
            if dataclasses.is_dataclass(hint):
                walk(hint, f"{name}.")
            elif typing.get_origin(hint) is list:
                dtypes[name] = "string"
            elif typing.get_origin(hint) is not dict:
                dtypes[name] = "string" if isinstance(hint, type) and issubclass(hint, enum.Enum) else _DTYPES[hint]

    walk(RunResult, "")
    walk(Measurement, "")
    return dtypes


def dtype(column: str) -> str:
    """The pandas type of a column (`Int64`, `Float64`, `boolean` or `string`: all of them nullable)."""
    found = _fixed_dtypes().get(column)
    if found is not None:
        return found
    for prefix, keyed in _KEYED.items():
        if column.startswith(prefix + "."):
            return keyed
    raise StoreError(f"{column!r} is not a column of toolbench's results")


def dtypes(columns: Iterable[str]) -> dict[str, str]:
    """The types of these columns, to read an exported CSV back as it was:
    `pandas.read_csv(FILE, dtype=toolbench.export.rows.dtypes(pandas.read_csv(FILE, nrows=0).columns))`."""
    return {column: dtype(column) for column in columns}


def frame(rows: list[dict[str, Any]]) -> "pandas.DataFrame":
    """Rows as a DataFrame: every column any row has, in first-seen order, each with its type."""
    import pandas

    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    table = pandas.DataFrame(rows, columns=list(columns))
    return table.astype(dtypes(table.columns)) if len(table.columns) else table


def run_dirs(paths: Iterable[str | Path]) -> list[store.RunDir]:
    """Each path a run folder, or a folder of runs (every run folder directly in it, by name)."""
    found = []
    for given in paths:
        path = Path(given)
        if (path / store.MANIFEST).is_file():
            found.append(store.RunDir(path))
            continue
        if not path.is_dir():
            raise StoreError(f"{path}: no such folder")
        inside, skipped = store.runs_in(path)  # a run folder that is a link is left out, and said
        for said in skipped:
            warnings.warn(Notice(said), stacklevel=2)
        if not inside:
            raise StoreError(f"{path}: neither a run folder nor a folder of runs (no {store.MANIFEST})")
        found += [store.RunDir(p) for p in inside]
    if not found:
        raise StoreError("no run given")
    return found


def results(paths: Iterable[str | Path]) -> list[tuple[str, RunResult]]:
    """Every result of the runs, each with its run folder's name. A run whose results do not
    read is left out with a notice naming it and why, while others read: one bad run in a folder
    of runs (from anyone) does not stop the rest."""
    runs = run_dirs(paths)
    found, bad = [], []
    for run in runs:
        try:
            found += [(run.path.name, r) for r in run.results()]
        except StoreError as exc:
            bad.append(exc)
    if bad and len(bad) == len(runs):
        raise bad[0]
    for exc in bad:
        warnings.warn(Notice(f"left out: {exc}"), stacklevel=2)
    return found


def load(*paths: str | Path, series: bool = False, histograms: bool = False) -> "pandas.DataFrame":
    """Runs as one DataFrame, a row per result (see flatten). `series=True` adds a `series`
    column: each result's per-second samples as a DataFrame of their own; `histograms=True`
    adds `histogram` and `histogram_uncorrected`: HdrHistogram objects (values in µs), or None."""
    import pandas

    found = results(paths)
    table = frame([flatten(r, run) for run, r in found])
    if series:
        names = [f.name for f in dataclasses.fields(SecondSample)]
        table["series"] = [pandas.DataFrame([dataclasses.astuple(s) for s in r.measurement.series], columns=names)
                           for _, r in found]
    if histograms:
        from toolbench.record import histogram

        for column in ("histogram", "histogram_uncorrected"):
            encoded = [getattr(r.measurement, column) for _, r in found]
            table[column] = pandas.Series([histogram.decode(e) if e else None for e in encoded], dtype=object)
    return table
