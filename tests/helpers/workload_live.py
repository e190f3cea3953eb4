"""A workload cell run for real through its adapter (the tool, then its steps) against a logged
nginx-static, and the target's access log counted per request line, and a data file as the
boundary reads it: what the workload tests of the adapters share."""
from __future__ import annotations

import collections
import csv
import subprocess
from pathlib import Path

import pytest

from toolbench.contract.adapter import Adapter, Found, RawOutput
from toolbench.contract.cell import Cell
from toolbench.contract.checked import parse_checked
from toolbench.hosts.local import LocalHost
from toolbench.record.schema import Measurement
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec
from toolbench.scenario.workload import DataFile, Workload


def found(adapter: Adapter) -> Found:
    got = adapter.detect(LocalHost())
    if not isinstance(got, Found):
        pytest.skip(got.reason)
    return got


def workload_cell(tool: str, workload: Workload, base_url: str = "http://127.0.0.1:8080", **kw) -> Cell:
    first = workload.requests[0]
    base = dict(scenario="t", tool=tool, concurrency=2, keepalive=True, repetition=1,
                request=RequestSpec(method=first.method, path=first.path, headers=dict(first.headers),
                                    body=first.body),
                stop=StopSpec(duration_s=1), timeout_s=60, workload=workload)
    return Cell(**(base | kw)).at(base_url)


def run(adapter: Adapter, cell: Cell, workdir: Path) -> tuple[Measurement, RawOutput]:
    """The cell's command and then its steps, bounded in time, and what it left parsed."""
    assert adapter.supports(cell).ok, adapter.supports(cell).reason
    invocation = adapter.build(cell, workdir, found(adapter))
    for name, contents in invocation.files.items():
        (workdir / name).write_text(contents)
    done = subprocess.run(invocation.argv, cwd=workdir, capture_output=True, text=True, timeout=60)
    files = {role: workdir / name for role, name in invocation.outputs.items() if (workdir / name).exists()}
    for step in invocation.steps:
        with open(workdir / step.stdout, "w") as out:
            subprocess.run(step.argv, cwd=workdir, stdout=out, stderr=subprocess.DEVNULL, timeout=60, check=True)
        files[step.role] = workdir / step.stdout
    raw = RawOutput(stdout=done.stdout, stderr=done.stderr, exit_code=done.returncode, files=files,
                    source=str(workdir))
    return parse_checked(adapter, raw), raw


def served(lines: list[str]) -> collections.Counter[str]:
    """The access log's request lines (`GET /1k.bin HTTP/1.1`) with their counts."""
    return collections.Counter(line.split('"')[1] for line in lines if line.count('"') >= 2)


def data_file(folder: Path, rows: list[dict[str, str]], per: str = "user", at_end: str = "recycle") -> DataFile:
    """A data file of these rows (the header row from the first's keys), as the boundary reads it."""
    path = folder / "data.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return DataFile(path=str(path), given="data.csv", columns=tuple(rows[0]), rows=len(rows), per=per, at_end=at_end)
