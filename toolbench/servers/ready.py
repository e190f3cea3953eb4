"""Readiness: a started server counts as ready when it answers HTTP at a path (any status,
or the one asked for), accepts a TCP connection, or has run for a given time. A server
that exits first fails at once, with the last line of its log; one that is never ready
fails at its timeout, which the error names."""
from __future__ import annotations

import http.client
import socket
import subprocess
import time
import urllib.parse
from pathlib import Path
from typing import Sequence

from toolbench.errors import TargetError
from toolbench.scenario.targets import ReadySpec
from toolbench.servers.process import log_tail

POLL_S = 0.05
MAX_ATTEMPT_S = 10.0


def http_get(url: str, timeout_s: float) -> int:
    """One request on a fresh connection; returns the status code."""
    parts = urllib.parse.urlsplit(url)
    conn_cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = conn_cls(parts.hostname or "127.0.0.1", parts.port, timeout=timeout_s)
    try:
        conn.request("GET", parts.path or "/")
        response = conn.getresponse()
        response.read()
        return response.status
    except (http.client.HTTPException, socket.timeout) as exc:
        raise OSError(str(exc) or type(exc).__name__) from None
    finally:
        conn.close()


def wait_until_ready(ready: ReadySpec, base_url: str, label: str,
                     procs: Sequence[tuple[subprocess.Popen[bytes], Path | None]] = ()) -> None:
    """Polls `base_url` as `ready` says; `procs` are the server's processes with their logs."""
    parts = urllib.parse.urlsplit(base_url)
    target = base_url + ready.path if ready.mode == "http" else f"{parts.hostname}:{parts.port}"
    deadline = time.monotonic() + (ready.wait_s if ready.mode == "wait" else ready.timeout_s)
    last = "no answer"
    while True:
        for proc, log in procs:
            if proc.poll() is not None:
                raise TargetError(f"{label}: exited with code {proc.returncode} before it was ready" + log_tail(log))
        left = deadline - time.monotonic()
        if ready.mode == "wait":
            if left <= 0:
                return
            time.sleep(min(POLL_S, left))
            continue
        try:
            refusal = _refusal(ready, target, parts.hostname or "127.0.0.1", parts.port or 80,
                               max(0.2, min(left, MAX_ATTEMPT_S)))
            if refusal is None:
                return
            last = refusal
        except OSError as exc:
            last = str(exc) or type(exc).__name__
        if time.monotonic() >= deadline:
            what = "accepted no TCP connection" if ready.mode == "tcp" else "was not ready"
            raise TargetError(f"{label}: {target} {what} within ready.timeout = {ready.timeout_s:g}s ({last})"
                              + "".join(log_tail(log) for _, log in procs[:1]))
        time.sleep(POLL_S)


def _refusal(ready: ReadySpec, target: str, host: str, port: int, timeout_s: float) -> str | None:
    """None when the server is ready, else why not; a connection that fails raises OSError."""
    if ready.mode == "tcp":
        socket.create_connection((host, port), timeout=timeout_s).close()
        return None
    status = http_get(target, timeout_s)
    return None if ready.status is None or status == ready.status else f"HTTP {status}, not {ready.status}"
