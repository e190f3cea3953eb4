"""Which files of a `toolbench parse` call are one run, and of which tool.

With a tool named, its adapter groups the files (group_name). Without one, each file is
offered to every adapter (recognizes): a file claimed by exactly one is that tool's; a file
none claims (a stderr, a test plan) joins the run of a claimed file it shares a name with.
A run whose files are all empty (an empty error.jtl beside kpi.jtl) has nothing to read:
it is noted and skipped, not an error that takes the other runs down."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from toolbench.contract.adapter import CLASSIFY_CHARS, Adapter
from toolbench.errors import Notice, ParserCrash, ToolbenchError


@dataclass
class Run:
    adapter: Adapter
    name: str
    paths: list[Path] = field(default_factory=list)


def runs(paths: list[Path], adapters: Mapping[str, Adapter], tool: Adapter | None = None) -> list[Run]:
    """The runs among `paths`, in the order their first file was given."""
    for path in paths:
        if not path.is_file():
            raise ToolbenchError(f"{path}: no such file")
    empty = [path for path in paths if path.stat().st_size == 0]
    if len(empty) == len(paths):  # one line: an empty file has no form to tell, no tool to name
        raise ToolbenchError(f"{', '.join(map(str, paths))}: empty: nothing to read")
    found = _by_tool(paths, tool) if tool is not None else _by_content(paths, adapters)
    kept = []
    for run in found:
        if all(path.stat().st_size == 0 for path in run.paths):
            warnings.warn(Notice(f"{', '.join(map(str, run.paths))}: empty, skipped"), stacklevel=2)
        else:
            kept.append(run)
    return kept


def _group_name(adapter: Adapter, path: Path) -> str:
    try:
        return adapter.group_name(path)
    except Exception as exc:  # a plug-in's group_name() may fail in any way
        raise ParserCrash(adapter.name, exc) from exc


def _by_tool(paths: list[Path], adapter: Adapter) -> list[Run]:
    found: dict[str, Run] = {}
    for path in paths:
        name = _group_name(adapter, path)
        found.setdefault(name, Run(adapter, name)).paths.append(path)
    return list(found.values())


def _head(path: Path) -> str:
    try:
        with open(path, errors="replace") as fh:
            return fh.read(CLASSIFY_CHARS)
    except OSError as exc:
        raise ToolbenchError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _claims(path: Path, adapters: Mapping[str, Adapter]) -> list[Adapter]:
    head = _head(path)
    if not head.strip():
        return []
    claimed = []
    for adapter in adapters.values():
        try:
            if adapter.recognizes(path, head):
                claimed.append(adapter)
        except Exception as exc:  # a plug-in's recognizes() may fail in any way
            raise ParserCrash(adapter.name, exc) from exc
    return claimed


def _by_content(paths: list[Path], adapters: Mapping[str, Adapter]) -> list[Run]:
    found: dict[tuple[str, str], Run] = {}
    unclaimed: list[Path] = []
    for path in paths:
        claimed = _claims(path, adapters)
        if len(claimed) > 1:
            raise ToolbenchError(f"{path}: reads as the output of {' and '.join(a.name for a in claimed)}: "
                                 f"name the tool with --tool")
        if not claimed:
            unclaimed.append(path)
            continue
        adapter = claimed[0]
        key = (adapter.name, _group_name(adapter, path))
        found.setdefault(key, Run(adapter, key[1])).paths.append(path)
    lone: dict[str, Run] = {}
    for path in unclaimed:
        keys = [key for key, run in found.items() if _group_name(run.adapter, path) == key[1]]
        if len(keys) == 1:
            found[keys[0]].paths.append(path)
        elif path.stat().st_size == 0:
            lone.setdefault(str(path), Run(next(iter(adapters.values())), str(path), [path]))
        else:
            raise ToolbenchError(_unread(path, adapters))
    ordered = sorted(found.values(), key=lambda run: min(paths.index(p) for p in run.paths))
    for run in ordered:
        warnings.warn(Notice(f"{run.name}: read as {run.adapter.name} output"), stacklevel=3)
    return ordered + list(lone.values())


def _unread(path: Path, adapters: Mapping[str, Adapter]) -> str:
    """The one line for a file no adapter reads: what it is, where an adapter knows the form."""
    head = _head(path)
    for adapter in adapters.values():
        try:
            form = adapter.unread_form(path, head)
        except Exception as exc:  # a plug-in's unread_form() may fail in any way
            raise ParserCrash(adapter.name, exc) from exc
        if form:
            return f"{path}: {form}"
    if "\x00" in head:
        return f"{path}: a binary file, not the text or JSON output of any known tool ({', '.join(adapters)})"
    return f"{path}: not the output of any known tool ({', '.join(adapters)}): name the tool with --tool"
