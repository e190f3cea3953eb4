"""Finds adapters through the `toolbench.adapters` entry-point group, so a
third-party adapter is registered exactly like a built-in one.

An entry point must name an instance of toolbench.contract.adapter.Adapter, the one declared
contract. An adapter that fails to load does not take the others down: it is listed as
broken, with its error, and naming it in a scenario is an error."""
from __future__ import annotations

from functools import lru_cache
from importlib.metadata import entry_points

from toolbench.contract.adapter import Adapter
from toolbench.errors import ToolbenchError

GROUP = "toolbench.adapters"


@lru_cache(maxsize=1)
def _load_all() -> tuple[dict[str, Adapter], dict[str, str]]:
    found: dict[str, Adapter] = {}
    broken: dict[str, str] = {}
    for ep in entry_points(group=GROUP):
        try:
            adapter = ep.load()
        except Exception as exc:  # a plug-in may fail in any way; it is reported, not raised
            broken[ep.name] = f"{ep.value} failed to load: {type(exc).__name__}: {exc}"
            continue
        if not isinstance(adapter, Adapter):
            broken[ep.name] = f"{ep.value} is a {type(adapter).__name__}, not a toolbench.contract.adapter.Adapter"
            continue
        if adapter.name != ep.name:
            broken[ep.name] = f"{ep.value} calls itself {adapter.name!r}"
            continue
        found[ep.name] = adapter
    return dict(sorted(found.items())), broken


def adapters() -> dict[str, Adapter]:
    return _load_all()[0]


def broken() -> dict[str, str]:
    return _load_all()[1]


def get(name: str) -> Adapter:
    known, bad = _load_all()
    if name in bad:
        raise ToolbenchError(f"adapter {name!r} is broken: {bad[name]}")
    if name not in known:
        raise ToolbenchError(f"unknown tool {name!r} (known: {', '.join(known) or 'none'})")
    return known[name]
