"""What a published site leaves out of the files it copies: absolute paths (a home folder, a
checkout's place) and the host's name. A path keeps its last part, so `…/tiny_server.py` still
says what ran; a host name becomes `[host]`."""
from __future__ import annotations

import functools
import re
import socket
from typing import Any, Iterable

HOST = "[host]"
ELLIPSIS = "…"
# An absolute path of two parts or more: a slash not inside a word, a URL (`http://h:80/a/b`) or
# a relative path (`raw/cell/x`), then parts free of spaces, quotes and punctuation that ends one.
_PART = r"[^\s/\"'<>|:;,=()\[\]{}`\\]"
_PATH = rf"(?<![\w.:/~%@\-]){'/'}(?:{_PART}+/)+{_PART}*"
_TEXT_PATH = re.compile(_PATH)
_BYTES_PATH = re.compile(_PATH.encode())


def _host_pattern(names: list[str]) -> str:
    # A name not inside a longer word or name: `vm` is redacted in `on vm.` but not in `vm.swappiness`.
    return r"(?<![\w.\-])(?:" + "|".join(map(re.escape, names)) + r")(?![\w\-]|\.\w)"


class Redactor:
    def __init__(self, hostnames: Iterable[str | None]) -> None:
        names = set()
        for name in hostnames:
            if name and name.strip():
                names.add(name.strip())
                names.add(name.strip().split(".")[0])  # the short name of a fully qualified one
        ordered = sorted(names, key=len, reverse=True)  # the longest first: a FQDN before its short name
        self._text_host = re.compile(_host_pattern(ordered), re.IGNORECASE) if ordered else None
        self._bytes_host = re.compile(_host_pattern(ordered).encode(), re.IGNORECASE) if ordered else None

    @classmethod
    def for_this_host(cls, *more: str | None) -> "Redactor":
        """This machine's names, and any others (the hosts a run's manifest names)."""
        return cls([*_this_host(), *more])

    def text(self, value: str) -> str:
        value = _TEXT_PATH.sub(_short_text, value)
        return self._text_host.sub(HOST, value) if self._text_host else value

    def bytes(self, value: bytes) -> bytes:
        value = _BYTES_PATH.sub(_short_bytes, value)
        return self._bytes_host.sub(HOST.encode(), value) if self._bytes_host else value

    def data(self, value: Any) -> Any:
        """Every text in a JSON value, redacted; its shape and its other values as they were."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.data(v) for v in value]
        if isinstance(value, dict):
            return {k: self.data(v) for k, v in value.items()}
        return value


@functools.lru_cache(maxsize=1)
def _this_host() -> tuple[str, str]:
    return socket.gethostname(), socket.getfqdn()  # getfqdn may ask the resolver: once is enough


def _short_text(match: re.Match[str]) -> str:
    parts = [p for p in match.group(0).split("/") if p]
    return f"{ELLIPSIS}/{parts[-1]}" if parts else ELLIPSIS


def _short_bytes(match: re.Match[bytes]) -> bytes:
    parts = [p for p in match.group(0).split(b"/") if p]
    return ELLIPSIS.encode() + (b"/" + parts[-1] if parts else b"")
