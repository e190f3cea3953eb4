"""Targets under load, as the runner starts them from one entry of a scenario's `targets:`:
a bundled server stack, a command that serves a URL, or a URL already running. The stacks
themselves, their specs and their cost live in toolbench.servers."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

from toolbench.lifeline import Lifeline, watching
from toolbench.servers.nginx import HELLO, nginx_static
from toolbench.servers.process import RunningTarget, free_port
from toolbench.servers.ready import http_get, wait_ready
from toolbench.servers.spec import TargetSpec
from toolbench.servers.stacks import start

__all__ = ["HELLO", "RunningTarget", "free_port", "http_get", "nginx_static", "started", "wait_ready"]


@contextlib.contextmanager
def started(spec: TargetSpec, workdir: Path, lifeline: Lifeline | None = None,
            max_concurrency: int = 0) -> Iterator[RunningTarget]:
    """`lifeline`, when given, records every server process started and kills it should toolbench die."""
    folder = workdir / "nginx" if spec.kind == "nginx-static" else workdir
    with watching(lifeline), start(spec, folder, max_concurrency) as target:
        yield target
