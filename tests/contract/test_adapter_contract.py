"""One contract test over every registered adapter: what toolbench.contract.adapter.Adapter declares,
each adapter found through the `toolbench.adapters` entry points keeps, a third-party one
as much as a built-in one. The check itself is toolbench.testing.check_adapter, which a third
party's suite imports."""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Iterator

import pytest

from toolbench.contract import registry
from toolbench.contract.adapter import Adapter, Invocation, Missing
from toolbench.testing import check_adapter


def test_every_entry_point_loads_as_an_adapter() -> None:
    assert registry.broken() == {}
    assert registry.adapters()  # the built-ins are entry points too


@pytest.mark.parametrize("name", sorted(registry.adapters()))
def test_registered_adapter_keeps_the_contract(name: str, tmp_path: Path) -> None:
    check_adapter(registry.get(name), tmp_path)


PLUGIN = '''
from toolbench.contract.adapter import Adapter, Found, Missing, Invocation, found_by_version
from toolbench.errors import ParseError
from toolbench.testing import check_adapter
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
    check_adapter(registry.get("curlish"), work)
    for name, adapter in registry.adapters().items():  # the built-ins are loaded beside it
        assert adapter.name == name


class Broken(Adapter):
    """Keeps every declaration, and reads garbage as a measurement."""
    name = "broken"

    def detect(self, host, path=None):
        return Missing(f"{path or 'broken'}: not here")

    def build(self, cell, workdir, found):
        return Invocation(argv=[found.path])

    def parse(self, raw):
        return None


def test_the_check_names_what_an_adapter_breaks(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="parse\\(\\) read 0 characters of garbage without a ParseError"):
        check_adapter(Broken(), tmp_path)
