"""Run directories on disk: manifest.json, results.jsonl (appended and flushed
cell by cell), raw/<cell>/ with every artifact. Reports read only from here."""
from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from toolbench.errors import SchemaError, StoreError
from toolbench.schema import RunResult

if TYPE_CHECKING:
    import pandas

MANIFEST = "manifest.json"
RESULTS = "results.jsonl"
RAW = "raw"


def contained(root: Path, *parts: str) -> Path:
    """root/parts..., refused when it would land outside root: a `..`, an absolute part
    or a symlink that leads out. Every folder and file toolbench names goes through here."""
    path = root.joinpath(*parts)
    real_root = root.resolve()
    real = path.resolve()
    if real == real_root or not real.is_relative_to(real_root):
        raise StoreError(f"{'/'.join(parts)!r}: refusing a path outside {root}")
    return path


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class RunDir:
    path: Path

    @classmethod
    def create(cls, root: Path, scenario: str) -> "RunDir":
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        root = root.resolve()
        path = contained(root, f"{scenario}-{stamp}")
        n = 1
        while path.exists():
            n += 1
            path = contained(root, f"{scenario}-{stamp}-{n}")
        (path / RAW).mkdir(parents=True)
        return cls(path)

    @classmethod
    def open(cls, path: Path) -> "RunDir":
        if not (path / MANIFEST).is_file():
            raise StoreError(f"{path}: not a run directory (no {MANIFEST})")
        return cls(path)

    def cell_dir(self, cell_id: str) -> Path:
        path = contained(self.path / RAW, cell_id)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def relative(self, path: Path) -> str:
        return os.path.relpath(path, self.path)

    # manifest ----------------------------------------------------------------
    def write_manifest(self, manifest: dict[str, Any]) -> None:
        tmp = self.path / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        tmp.replace(self.path / MANIFEST)

    def manifest(self) -> dict[str, Any]:
        try:
            data = json.loads((self.path / MANIFEST).read_text())
        except (OSError, ValueError) as exc:
            raise StoreError(f"{self.path / MANIFEST}: unreadable: {exc}") from None
        if not isinstance(data, dict):
            raise StoreError(f"{self.path / MANIFEST}: expected a JSON object")
        return data

    def update_manifest(self, **changes: Any) -> None:
        manifest = self.manifest()
        manifest.update(changes)
        self.write_manifest(manifest)

    # results -----------------------------------------------------------------
    def append(self, result: RunResult) -> None:
        """One line per cell, flushed to disk, so a crash loses at most the cell in flight."""
        line = json.dumps(result.to_dict(), sort_keys=True, allow_nan=False)
        with open(self.path / RESULTS, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def results(self) -> list[RunResult]:
        return list(self._iter_results())

    def _iter_results(self) -> Iterator[RunResult]:
        path = self.path / RESULTS
        if not path.exists():
            return
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    yield RunResult.from_dict(json.loads(line))
                except ValueError as exc:
                    # A line cut by a crash is the only damage a run can take; name it.
                    raise StoreError(f"{path}:{number}: not a result record: {exc}") from None
                except SchemaError as exc:
                    raise StoreError(f"{path}:{number}: {exc}") from None

    def finished_cells(self) -> set[str]:
        return {r.identity.cell_id for r in self._iter_results()}


def flatten(result: RunResult) -> dict[str, Any]:
    """One row per result: nested fields become dotted columns, for tables and DataFrames."""
    row: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and prefix not in ("counts.status_codes", "fidelity", "identity.params"):
            for key, sub in value.items():
                walk(f"{prefix}.{key}" if prefix else key, sub)
        elif prefix in ("histogram", "histogram_uncorrected", "series", "probe.samples_ms", "probe.baseline_ms",
                        "probe.sample_offsets_s"):
            return  # bulky per-request data stay in the record, not in the table
        else:
            row[prefix] = value

    walk("", result.to_dict())
    return row


def load(path: str | Path) -> "pandas.DataFrame":
    """A run as a pandas DataFrame: one row per cell, dotted column names."""
    import pandas

    run = RunDir.open(Path(path))
    return pandas.DataFrame([flatten(r) for r in run.results()])
