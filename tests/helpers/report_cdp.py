"""A minimal headless Chromium driver over the DevTools protocol on a pipe (stdlib only).

Chromium started with --remote-debugging-pipe reads commands from fd 3 and writes
replies and events to fd 4, each message JSON followed by a NUL byte."""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--no-default-browser-check", "--mute-audio",
         "--disable-features=Translate,MediaRouter,OptimizationHints",
         # No name resolves: a page that reached for the network would fail, and be seen failing.
         "--host-resolver-rules=MAP * ~NOTFOUND", "--remote-debugging-pipe"]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class CdpError(Exception):
    pass


@dataclass
class Page:
    """What loading a page produced: the events a reviewer would call failures."""

    session: str
    console: list[dict[str, Any]] = field(default_factory=list)  # console.error / warning calls
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    log_entries: list[dict[str, Any]] = field(default_factory=list)  # the browser's own errors and warnings
    failed_loads: list[dict[str, Any]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)  # every URL the page asked for

    @property
    def problems(self) -> list[Any]:
        return self.console + self.exceptions + self.log_entries + self.failed_loads


class Browser:
    def __init__(self, binary: str, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        self._profile = tempfile.TemporaryDirectory(prefix="toolbench-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # Chromium wants the pipe on fds 3 and 4. A small Python launcher moves the ends there
        # from fds above 9, so that moving one end never overwrites the other.
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_child_r, from_child_w)]
        for fd in (to_child_r, from_child_w):
            os.close(fd)
        argv = [binary, *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"]
        launcher = (f"import os, sys; os.dup2({high[0]}, 3); os.dup2({high[1]}, 4); "
                    f"os.close({high[0]}); os.close({high[1]}); os.execv(sys.argv[1], sys.argv[1:])")
        self.proc = subprocess.Popen([sys.executable, "-c", launcher, *argv], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL,
                                     stderr=None if os.environ.get("CDP_DEBUG") else subprocess.DEVNULL,
                                     pass_fds=tuple(high))
        for fd in high:
            os.close(fd)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    # the wire ------------------------------------------------------------------
    def _send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_child], [], [], left)[0]:
                raise CdpError("no answer from Chromium in time")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise CdpError("Chromium closed the pipe (set CDP_DEBUG=1 to see its stderr)")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        wanted = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout_s
        while True:
            message = self._read(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise CdpError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._events.append(message)

    def wait_for(self, method: str, session: str) -> dict[str, Any]:
        for i, event in enumerate(self._events):
            if event.get("method") == method and event.get("sessionId") == session:
                return self._events[i]
        deadline = time.monotonic() + self.timeout_s
        while True:
            message = self._read(deadline)
            self._events.append(message)
            if message.get("method") == method and message.get("sessionId") == session:
                return message

    # pages ---------------------------------------------------------------------
    def open(self, url: str, width: int = 1280, height: int = 900, scripts: bool = True) -> Page:
        """Loads url in a new tab; the page records what went wrong while it loaded."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=session)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session)
        if not scripts:
            self.call("Emulation.setScriptExecutionDisabled", {"value": True}, session)
        self._events.clear()
        self.call("Page.navigate", {"url": url}, session)
        self.wait_for("Page.loadEventFired", session)
        return self._page(session)

    def _page(self, session: str) -> Page:
        page = Page(session)
        for event in self._events:
            if event.get("sessionId") != session:
                continue
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
                page.console.append(params)
            elif method == "Runtime.exceptionThrown":
                page.exceptions.append(params)
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") in ("error", "warning"):
                page.log_entries.append(params["entry"])
            elif method == "Network.loadingFailed":
                page.failed_loads.append(params)
            elif method == "Network.requestWillBeSent":
                page.requests.append(params.get("request", {}).get("url", ""))
        return page

    def evaluate(self, page: Page, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, page.session)
        if "exceptionDetails" in result:
            raise CdpError(f"{expression}: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def screenshot(self, page: Page, path: Path, whole: bool = True) -> Path:
        """The whole page, or (`whole=False`) only what the window shows before any scrolling."""
        if whole:
            size = self.call("Page.getLayoutMetrics", session=page.session)["cssContentSize"]
            clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
            params = {"format": "png", "captureBeyondViewport": True, "clip": clip}
        else:
            params = {"format": "png"}
        data = self.call("Page.captureScreenshot", params, page.session)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self._send("Browser.close")
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()  # our own child, by its handle
            self.proc.wait()
        finally:
            os.close(self._to_child)
            os.close(self._from_child)
            self._profile.cleanup()

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
