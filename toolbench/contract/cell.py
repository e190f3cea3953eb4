"""A cell: one tool at one concurrency, keep-alive choice, protocol, rate and repetition against one
target, with everything its adapter needs to build the tool's command (the request, the stop
condition, the tool's options). What the plan (toolbench.run.plan) hands each adapter."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec
from toolbench.scenario.workload import Workload


@dataclass(frozen=True)
class Cell:
    scenario: str
    tool: str
    concurrency: int
    keepalive: bool
    repetition: int
    request: RequestSpec
    stop: StopSpec
    timeout_s: float
    rate_rps: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    url: str | None = None  # known once the target runs
    variant: str | None = None  # the scenario's name for a configured tool, e.g. `locust-2p`
    target: str = ""  # the name of its target in `Scenario.targets`
    target_in_id: bool = False  # the scenario has several targets: the id starts with the target's name
    warmup_s: float = 0.0  # the unmeasured run before the cell (toolbench.run.warmup); 0: none
    # The CPUs the generator's side was given (the placement), for the tools that size their
    # threads or processes by the cores they have; None: not placed, every CPU of its host.
    cpus: int | None = None
    # What the cell speaks to the target (toolbench.scenario.read.PROTOCOLS): http1, https (HTTP/1.1
    # over TLS), h2 (over TLS, by ALPN) or h2c (in clear, prior knowledge).
    protocol: str = "http1"
    # The target's certificate (PEM) for the tools that can be told to trust it; None: a plain
    # target, or one whose certificate toolbench did not make (the tools' own trust applies).
    ca_file: str | None = None
    # Several named requests, data, think time, checks, stages (toolbench.scenario.workload);
    # None: the one `request`. With a workload, `request` is its first request, so that every
    # adapter still reads a cell the same way, and `url` is that request's URL.
    workload: Workload | None = None
    base_url: str | None = None  # the target's URL without a path, e.g. http://127.0.0.1:8080; known once it runs

    @property
    def tls(self) -> bool:
        return self.protocol in ("https", "h2")

    @property
    def label(self) -> str:
        return self.variant or self.tool

    @property
    def id(self) -> str:
        rate = f"-rate{self.rate_rps:g}" if self.rate_rps is not None else ""
        conn = "ka" if self.keepalive else "close"
        # A single target leaves the id as it always was, so that older runs still resume.
        prefix = f"{self.target}-" if self.target_in_id else ""
        # Plain HTTP/1.1 leaves the id as it always was, for the same reason.
        protocol = f"-{self.protocol}" if self.protocol != "http1" else ""
        return f"{prefix}{self.label}-c{self.concurrency}-{conn}{protocol}{rate}-rep{self.repetition}"

    def at(self, base_url: str, ca_file: str | None = None) -> "Cell":
        base = base_url.rstrip("/")
        return dataclasses.replace(self, url=base + self.request.path, ca_file=ca_file, base_url=base)
