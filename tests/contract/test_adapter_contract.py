"""One contract test over every registered adapter: what toolbench.contract.adapter.Adapter declares,
each adapter found through the `toolbench.adapters` entry points keeps, a third-party one
as much as a built-in one."""
from __future__ import annotations

import os
import random
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

from toolbench.contract import registry
from toolbench.contract.adapter import Adapter, Found, Invocation, Missing, RawOutput, Support
from toolbench.contract.cell import Cell
from toolbench.errors import ParseError
from toolbench.hosts.local import LocalHost
from toolbench.scenario import names
from toolbench.scenario.read import RequestSpec, StopSpec

URL = "http://127.0.0.1:8080/"
# A path no tool has on this machine: build() must put the one it is given, not one of its own.
ELSEWHERE = "/opt/elsewhere/bin/tool"


def cells(tool: str) -> Iterator[Cell]:
    """Representative cells, the plainest first: every tool supports at least one (an
    open-model tool, such as httperf, only those with a rate)."""
    for rate in (None, 20.0):
        for keepalive in (True, False):
            for stop in (StopSpec(duration_s=2.0), StopSpec(requests=100)):
                yield Cell(scenario="contract", tool=tool, concurrency=2, keepalive=keepalive, repetition=1,
                           request=RequestSpec(), stop=stop, timeout_s=60, url=URL, rate_rps=rate)


def garbage(seed: int, size: int) -> str:
    rng = random.Random(seed)  # fixed: the same garbage every run
    alphabet = "abcXYZ0123456789 ,;:.-_/\\\"'{}[]<>=%\t\n\r\x00\x1b\u00e9\u2603"
    return "".join(rng.choice(alphabet) for _ in range(size))


def check_contract(adapter: Adapter, tmp_path: Path) -> None:
    assert isinstance(adapter, Adapter)
    assert names.problem(adapter.name) is None and names.problem(adapter.program) is None
    assert all(isinstance(k, str) and isinstance(t, type) for k, t in adapter.option_types.items())
    assert adapter.ok_exit_codes and all(isinstance(code, int) for code in adapter.ok_exit_codes)
    assert isinstance(adapter.retries_on_hang, int) and adapter.retries_on_hang >= 0

    found = adapter.detect(LocalHost())
    assert isinstance(found, (Found, Missing))
    if isinstance(found, Found):
        assert os.path.isabs(found.path) and os.access(found.path, os.X_OK), found
        assert isinstance(found.version, str) and found.version
    else:
        assert found.reason and "\n" not in found.reason
    absent = adapter.detect(LocalHost(), "/nonexistent/toolbench-contract/tool")
    assert isinstance(absent, Missing) and "/nonexistent/toolbench-contract/tool" in absent.reason

    supported = []
    for cell in cells(adapter.name):
        support = adapter.supports(cell)
        assert isinstance(support, Support) and (support.ok or support.reason)
        if support.ok:
            supported.append(cell)
    if adapter.read_only:
        assert not supported, f"{adapter.name} is read-only but supports a cell"
        invocation = Invocation(argv=[ELSEWHERE])
    else:
        assert supported, f"{adapter.name} supports none of the representative cells"
        invocation = adapter.build(supported[0], tmp_path, Found(ELSEWHERE, "1"))
    assert isinstance(invocation, Invocation)
    assert invocation.argv[0] == ELSEWHERE and all(isinstance(arg, str) for arg in invocation.argv)
    assert list(tmp_path.iterdir()) == []  # building writes nothing

    for seed, size in ((0, 0), (1, 200), (2, 5000)):
        text = garbage(seed, size)
        assert isinstance(adapter.classify(tmp_path / "out.txt", text), str)
        files = {}
        step_outputs = [(step.role, step.stdout) for step in invocation.steps]
        for role, name in [*invocation.outputs.items(), *step_outputs]:
            (tmp_path / name).write_text(garbage(seed + 100, size), encoding="utf-8")
            files[role] = tmp_path / name
        for raw in (RawOutput(stdout=text, stderr=text, exit_code=0, source="garbage"),
                    RawOutput(stdout=text, stderr="", exit_code=0, files=files, source="garbage")):
            with pytest.raises(ParseError):
                adapter.parse(raw)
    assert isinstance(adapter.group_name(tmp_path / "run.stderr.txt"), str)


def test_every_entry_point_loads_as_an_adapter() -> None:
    assert registry.broken() == {}
    assert registry.adapters()  # the built-ins are entry points too


@pytest.mark.parametrize("name", sorted(registry.adapters()))
def test_registered_adapter_keeps_the_contract(name: str, tmp_path: Path) -> None:
    check_contract(registry.get(name), tmp_path)


PLUGIN = '''
from toolbench.contract.adapter import Adapter, Found, Missing, Invocation, found_by_version
from toolbench.errors import ParseError
import re


class Curl(Adapter):
    """A third-party adapter: what the contract leaves optional, it leaves out."""
    name = "curlish"

    def detect(self, host, path=None):
        return found_by_version(host, path or "curl", ["--version"], re.compile(r"curl (\\S+)"))

    def build(self, cell, workdir, found):
        return Invocation(argv=[found.path, "-s", cell.url])

    def parse(self, raw):
        raise ParseError(self.name, "nothing to read", raw.source)


ADAPTER = Curl()
NOT_AN_ADAPTER = object()
'''


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A distribution on sys.path registering two entry points, as `pip install` would."""
    site = tmp_path / "site"
    dist = site / "curlish_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: curlish-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent("""\
        [toolbench.adapters]
        curlish = curlish_plugin:ADAPTER
        notone = curlish_plugin:NOT_AN_ADAPTER
        """))
    (site / "curlish_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(site))
    registry._load_all.cache_clear()
    yield
    registry._load_all.cache_clear()


def test_a_third_party_entry_point_is_held_to_the_same_contract(plugin: None, tmp_path: Path) -> None:
    assert "curlish" in registry.adapters()
    assert "not a toolbench.contract.adapter.Adapter" in registry.broken()["notone"]
    work = tmp_path / "work"
    work.mkdir()
    check_contract(registry.get("curlish"), work)
    for name, adapter in registry.adapters().items():  # the built-ins are loaded beside it
        assert adapter.name == name
