"""A cell against a recorded URL, a Found tool, and a recorded output parsed: what the adapter tests of the single-module tools share."""
from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES
from toolbench.contract import registry
from toolbench.contract.adapter import Found, raw_from_files
from toolbench.contract.cell import Cell
from toolbench.contract.checked import parse_checked
from toolbench.record.schema import Measurement
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec

URL = "http://127.0.0.1:8080/x?y=1"


def parsed(tool: str, case: str) -> Measurement:
    adapter = registry.get(tool)
    paths = sorted(p for p in (FIXTURES / tool).iterdir() if p.name.startswith(f"{case}."))
    assert paths, case
    return parse_checked(adapter, raw_from_files(adapter, case, paths))


def cell(tool: str, **kw) -> Cell:
    base = dict(scenario="t", tool=tool, concurrency=4, keepalive=True, repetition=1, request=RequestSpec(),
                stop=StopSpec(duration_s=1.5), timeout_s=60, url=URL)
    base.update(kw)
    return Cell(**base)


def argv(tool: str, **kw) -> list[str]:
    c = cell(tool, **kw)
    adapter = registry.get(tool)
    assert adapter.supports(c).ok, adapter.supports(c).reason
    return adapter.build(c, Path("/nonexistent"), Found("/bin/" + tool, "1")).argv
