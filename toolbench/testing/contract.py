"""The adapter contract as a check: what toolbench.contract.adapter.Adapter declares, an
adapter keeps, whoever wrote it. Raises AssertionError naming what broke, so it reads the same
under pytest, unittest or a plain script."""
from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Iterator

from toolbench.contract.adapter import Adapter, Found, Invocation, Missing, RawOutput, Support
from toolbench.contract.cell import Cell
from toolbench.contract.host import Host
from toolbench.errors import ParseError
from toolbench.scenario import names
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec

URL = "http://127.0.0.1:8080/"
# A path no tool has on this machine: build() must put the one it is given, not one of its own.
ELSEWHERE = "/opt/elsewhere/bin/tool"
ABSENT = "/nonexistent/toolbench-contract/tool"


def representative_cells(tool: str) -> Iterator[Cell]:
    """The plainest first: every tool supports at least one (an open-model tool, such as
    httperf, only those with a rate)."""
    for rate in (None, 20.0):
        for keepalive in (True, False):
            for stop in (StopSpec(duration_s=2.0), StopSpec(requests=100)):
                yield Cell(scenario="contract", tool=tool, concurrency=2, keepalive=keepalive, repetition=1,
                           request=RequestSpec(), stop=stop, timeout_s=60, url=URL, rate_rps=rate)


def check_adapter(adapter: Adapter, workdir: Path, host: Host | None = None) -> None:
    """Every part of the contract: its declarations, detect() on `host` (this machine by
    default), supports(), a pure build(), and a parse() that turns garbage into ParseError
    and nothing else. `workdir` must be an empty folder."""
    if host is None:
        from toolbench.hosts.local import LocalHost  # the [run] extra; a suite may pass its own host

        host = LocalHost()
    _declarations(adapter)
    _detection(adapter, host)
    invocation = _build(adapter, workdir)
    _parse_refuses_garbage(adapter, invocation, workdir)
    assert isinstance(adapter.group_name(workdir / "run.stderr.txt"), str)


def _declarations(adapter: Adapter) -> None:
    assert isinstance(adapter, Adapter), f"{adapter!r} is not a toolbench.contract.adapter.Adapter"
    assert names.problem(adapter.name) is None, f"name {adapter.name!r}: {names.problem(adapter.name)}"
    assert names.problem(adapter.program) is None, f"program {adapter.program!r}: {names.problem(adapter.program)}"
    assert all(isinstance(k, str) and isinstance(t, type) for k, t in adapter.option_types.items()), \
        "option_types maps option names to types"
    assert adapter.ok_exit_codes and all(isinstance(code, int) for code in adapter.ok_exit_codes), \
        "ok_exit_codes is a non-empty tuple of ints"
    assert isinstance(adapter.retries_on_hang, int) and adapter.retries_on_hang >= 0


def _detection(adapter: Adapter, host: Host) -> None:
    found = adapter.detect(host)
    assert isinstance(found, (Found, Missing)), f"detect() returned {found!r}"
    if isinstance(found, Found):
        assert os.path.isabs(found.path) and os.access(found.path, os.X_OK), f"not an executable path: {found}"
        assert isinstance(found.version, str) and found.version, f"no version: {found}"
    else:
        assert found.reason and "\n" not in found.reason, f"a Missing says why, on one line: {found!r}"
    absent = adapter.detect(host, ABSENT)
    assert isinstance(absent, Missing) and ABSENT in absent.reason, \
        f"detect() at a path that does not exist is Missing naming the path, not {absent!r}"


def _build(adapter: Adapter, workdir: Path) -> Invocation:
    supported = []
    for cell in representative_cells(adapter.name):
        support = adapter.supports(cell)
        assert isinstance(support, Support) and (support.ok or support.reason), f"supports() gave {support!r}"
        if support.ok:
            supported.append(cell)
    if adapter.read_only:
        assert not supported, f"{adapter.name} is read-only but supports a cell"
        return Invocation(argv=[ELSEWHERE])
    assert supported, f"{adapter.name} supports none of the representative cells"
    invocation = adapter.build(supported[0], workdir, Found(ELSEWHERE, "1"))
    assert isinstance(invocation, Invocation), f"build() returned {invocation!r}"
    assert invocation.argv[0] == ELSEWHERE, "build() runs the path it was given"
    assert all(isinstance(arg, str) for arg in invocation.argv), "every argument is a str"
    assert list(workdir.iterdir()) == [], "build() writes nothing (its files go in Invocation.files)"
    return invocation


def _garbage(seed: int, size: int) -> str:
    rng = random.Random(seed)  # fixed: the same garbage every run
    alphabet = "abcXYZ0123456789 ,;:.-_/\\\"'{}[]<>=%\t\n\r\x00\x1b\u00e9\u2603"
    return "".join(rng.choice(alphabet) for _ in range(size))


def _parse_refuses_garbage(adapter: Adapter, invocation: Invocation, workdir: Path) -> None:
    for seed, size in ((0, 0), (1, 200), (2, 5000)):
        text = _garbage(seed, size)
        assert isinstance(adapter.classify(workdir / "out.txt", text), str)
        files = {}
        step_outputs = [(step.role, step.stdout) for step in invocation.steps]
        for role, name in [*invocation.outputs.items(), *step_outputs]:
            (workdir / name).write_text(_garbage(seed + 100, size), encoding="utf-8")
            files[role] = workdir / name
        for raw in (RawOutput(stdout=text, stderr=text, exit_code=0, source="garbage"),
                    RawOutput(stdout=text, stderr="", exit_code=0, files=files, source="garbage")):
            try:
                adapter.parse(raw)
            except ParseError:
                continue
            raise AssertionError(f"{adapter.name}: parse() read {size} characters of garbage without a ParseError")
