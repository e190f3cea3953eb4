"""The other installed tools for bench_engine.py, run through their toolbench adapters: each
adapter builds its command for one closed-model, keep-alive cell (as `toolbench run` would),
the command runs pinned to one CPU, and the adapter parses what the tool printed. Tools that
cannot run such a cell (httperf, which has only an open model), or are not installed, are
listed with the reason. An adapter's follow-up steps (Invocation.steps: vegeta's `encode` of its
binary results) run after the tool, as toolbench.run.tool_steps runs them, outside the CPU measured: the
runner runs them after the tool has ended too."""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from toolbench.contract import registry
from toolbench.contract.adapter import Adapter, Found, RawOutput
from toolbench.contract.cell import Cell
from toolbench.errors import ToolbenchError
from toolbench.hosts.local import LocalHost
from toolbench.record.schema import Measurement
from toolbench.run import tool_steps as steps
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec

# Run by bench_engine.py's own pinned commands (as before), or never run here (k6's licence).
OWN = ("engine", "wrk", "ab", "locust", "k6")

Pinned = Callable[..., "tuple[str, str, float]"]  # bench_engine.pinned(argv, cpu, cwd, timeout, env)


@dataclass(frozen=True)
class Generic:
    tool: str
    adapter: Adapter
    found: Found


def installed(wanted: list[str] | None) -> tuple[list[Generic], dict[str, str]]:
    """The other registered tools found here (or those named), and why each other one is left out."""
    host, found, skipped = LocalHost(), [], {}
    probe = _cell("http://127.0.0.1:9/", 50, 5.0)
    for name, adapter in registry.adapters().items():
        if name in OWN or (wanted is not None and name not in wanted):
            continue
        detected = adapter.detect(host)
        support = adapter.supports(probe)
        if not isinstance(detected, Found):
            skipped[name] = detected.reason
        elif not support.ok:
            skipped[name] = support.reason or "unsupported"
        else:
            found.append(Generic(name, adapter, detected))
    return found, skipped


def _cell(url: str, conns: int, duration: float | None, requests: int | None = None) -> Cell:
    stop = StopSpec(duration_s=duration) if duration else StopSpec(requests=requests)
    return Cell(scenario="bench", tool="bench", concurrency=conns, keepalive=True, repetition=1,
                request=RequestSpec(), stop=stop, timeout_s=(duration or 10) * 4 + 60, url=url)


def run(tool: Generic, url: str, conns: int, duration: float | None, work: Path, pinned: Pinned,
        requests: int | None = None) -> tuple[int, float, float]:
    """Requests the tool counted, over the duration it measured, and the CPU of its process tree."""
    folder = work / f"{tool.tool}-{os.getpid()}-{len(list(work.iterdir()))}"
    folder.mkdir()
    measured, err, cpu = measure(tool, _cell(url, conns, duration, requests), folder, pinned,
                                 (duration or 10) * 4 + 60)
    total, seconds = measured.counts.requests_total, measured.timing.duration_s
    if not total or not seconds:
        raise RuntimeError(f"{tool.tool}: no request count or duration in its output ({err[-300:]!r})")
    return total, seconds, cpu


def measure(tool: Generic, cell: Cell, folder: Path, pinned: Pinned, timeout_s: float) -> tuple[Measurement, str, float]:
    """One cell as `toolbench run` runs it: the adapter's command pinned to CPU 1 in `folder`, its
    follow-up steps after it (outside the CPU measured), then the adapter's parse. Returns what was
    measured, the tool's stderr and the CPU of its process tree."""
    invocation = tool.adapter.build(cell, folder, tool.found)
    for name, contents in invocation.files.items():
        (folder / name).write_text(contents)
    out, err, cpu = pinned(invocation.argv, 1, folder, timeout_s, {**os.environ, **invocation.env})
    files = {role: folder / name for role, name in invocation.outputs.items() if (folder / name).exists()}
    converted, failed = steps.run(invocation.steps, LocalHost(), folder, folder)
    if failed:
        raise RuntimeError(f"{tool.tool}: " + "; ".join(failed.values()))
    files.update(converted)
    return tool.adapter.parse(RawOutput(stdout=out, stderr=err, exit_code=0, files=files, source=tool.tool)), err, cpu


def startup(tool: Generic, url: str, work: Path, pinned: Pinned) -> float | None:
    """CPU of a one-request run (one connection), when the adapter can stop after a count; else None."""
    if not tool.adapter.supports(_cell(url, 1, None, requests=1)).ok:
        return None
    try:
        return run(tool, url, 1, None, work, pinned, requests=1)[2]
    except (RuntimeError, subprocess.SubprocessError, ToolbenchError) as exc:
        print(f"{tool.tool}: no start-up figure ({exc})")
        return None
