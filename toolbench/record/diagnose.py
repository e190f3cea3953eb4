"""Why a tool counted nothing. siege and Locust report 0 requests and 0 failures against a
server that accepts connections and never answers, and against one that accepts none at
all; they say nothing about which. Asked after such a cell, one connection of toolbench's
own tells them apart: its connect times out, is refused, or succeeds and the request gets
no answer, or an answer."""
from __future__ import annotations

import socket
import time
import urllib.parse

from toolbench.record.derive import Reach

CHECK_TIMEOUT_S = 2.0


def reach(url: str, timeout_s: float = CHECK_TIMEOUT_S) -> Reach:
    """At most `timeout_s` for the connect, and as long again for the first byte of an answer."""
    try:
        parts = urllib.parse.urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return Reach.UNKNOWN
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except socket.timeout:
        return Reach.CONNECT_TIMEOUT
    except ConnectionRefusedError:
        return Reach.REFUSED
    except OSError:
        return Reach.UNKNOWN
    with sock:
        path = parts.path or "/"
        request = f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n\r\n"
        deadline = time.monotonic() + timeout_s
        try:
            sock.sendall(request.encode("ascii", errors="replace"))
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            first = sock.recv(1)
        except socket.timeout:
            return Reach.SILENT
        except OSError:
            return Reach.UNKNOWN
    return Reach.ANSWERS if first else Reach.UNKNOWN
