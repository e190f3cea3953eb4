"""Targets under load, as the runner starts them from a scenario's single `target:`: the
bundled nginx-static, a command that serves a URL, or a URL already running. The stacks
themselves, their specs and their cost live in toolbench.servers."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

from toolbench.lifeline import Lifeline, watching
from toolbench.scenario import TargetSpec as ScenarioTarget
from toolbench.servers.nginx import HELLO, LEGACY_WORKER_CONNECTIONS, nginx_static
from toolbench.servers.process import RunningTarget, free_port
from toolbench.servers.ready import http_get, wait_ready
from toolbench.servers.spec import NginxOptions, ReadySpec, TargetSpec
from toolbench.servers.stacks import start

__all__ = ["HELLO", "RunningTarget", "free_port", "http_get", "kind_of", "nginx_static", "started", "wait_ready"]


@contextlib.contextmanager
def started(spec: ScenarioTarget, workdir: Path, lifeline: Lifeline | None = None) -> Iterator[RunningTarget]:
    """`lifeline`, when given, records every server process started and kills it should toolbench die."""
    with watching(lifeline), start(_from_scenario(spec), workdir / "nginx" if spec.server else workdir) as target:
        yield target


def kind_of(spec: ScenarioTarget) -> str:
    """What kind of target a scenario's `target:` is, as the manifest records it."""
    return _from_scenario(spec).kind


def _from_scenario(spec: ScenarioTarget) -> TargetSpec:
    if spec.server == "nginx-static":
        # One worker and room for 16384 connections: what the single `target:` has always run.
        return TargetSpec(kind="nginx-static", label=spec.label,
                          nginx=NginxOptions(workers=1, worker_connections=LEGACY_WORKER_CONNECTIONS))
    ready = ReadySpec(path=spec.ready_path, timeout_s=spec.ready_timeout_s)
    return TargetSpec(kind="command" if spec.command else "url", label=spec.label, ready=ready,
                      command=spec.command, url=spec.url)
