"""Compatibility names for the targets' helpers, which live in toolbench.servers (the stacks,
their specs, their cost); the runner serves a scenario's targets through toolbench.serving."""
from __future__ import annotations

from toolbench.servers.nginx import HELLO, nginx_static
from toolbench.servers.process import RunningTarget, free_port
from toolbench.servers.ready import http_get, wait_ready

__all__ = ["HELLO", "RunningTarget", "free_port", "http_get", "nginx_static", "wait_ready"]
