"""Finds adapters through the `toolbench.adapters` entry-point group, so a
third-party adapter is registered exactly like a built-in one."""
from __future__ import annotations

from functools import lru_cache
from importlib.metadata import entry_points

from toolbench.adapter import Adapter
from toolbench.errors import ToolbenchError

GROUP = "toolbench.adapters"


@lru_cache(maxsize=1)
def adapters() -> dict[str, Adapter]:
    found: dict[str, Adapter] = {}
    for ep in entry_points(group=GROUP):
        try:
            adapter = ep.load()
        except Exception as exc:  # a broken plug-in must name itself, not crash the CLI
            raise ToolbenchError(f"adapter {ep.name!r} ({ep.value}) failed to load: {exc}") from exc
        if getattr(adapter, "name", None) != ep.name:
            raise ToolbenchError(f"adapter {ep.value} registers as {ep.name!r} but calls itself "
                                 f"{getattr(adapter, 'name', None)!r}")
        found[ep.name] = adapter
    return dict(sorted(found.items()))


def get(name: str) -> Adapter:
    known = adapters()
    if name not in known:
        raise ToolbenchError(f"unknown tool {name!r} (known: {', '.join(known) or 'none'})")
    return known[name]
