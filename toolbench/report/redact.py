"""What a published site leaves out of the files it copies: secrets (toolbench.report.secrets:
credential headers, URL tokens and userinfo, SSH users and key paths, in any encoding), absolute
paths (a home folder, a checkout's place), a home folder's user, the host's name and, when asked,
private addresses. A path keeps its last part, so `…/tiny_server.py` still says what ran; a host
name becomes `[host]`."""
from __future__ import annotations

import functools
import ipaddress
import re
import socket
from typing import Any, Iterable

from toolbench.report import secret_text
from toolbench.report.secret_text import REDACTED, USER
from toolbench.report.secrets import Secrets

HOST = "[host]"
PRIVATE = "[private address]"
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
    def __init__(self, hostnames: Iterable[str | None], secrets: Secrets | None = None,
                 private_addresses: bool = False) -> None:
        self._secrets = _SecretRules(secrets or Secrets(), private_addresses)
        names = set()
        for name in hostnames:
            if name and name.strip():
                names.add(name.strip())
                names.add(name.strip().split(".")[0])  # the short name of a fully qualified one
        ordered = sorted(names, key=len, reverse=True)  # the longest first: a FQDN before its short name
        self._text_host = re.compile(_host_pattern(ordered), re.IGNORECASE) if ordered else None
        self._bytes_host = re.compile(_host_pattern(ordered).encode(), re.IGNORECASE) if ordered else None

    @classmethod
    def for_this_host(cls, *more: str | None, secrets: Secrets | None = None,
                      private_addresses: bool = False) -> "Redactor":
        """This machine's names, and any others (the hosts a run's manifest names)."""
        return cls([*_this_host(), *more], secrets, private_addresses)

    def text(self, value: str) -> str:
        value = _TEXT_PATH.sub(_short_text, self._secrets.text(value))
        value = self._text_host.sub(HOST, value) if self._text_host else value
        return self._secrets.after_paths_text(value)

    def bytes(self, value: bytes) -> bytes:
        value = _BYTES_PATH.sub(_short_bytes, self._secrets.bytes(value))
        value = self._bytes_host.sub(HOST.encode(), value) if self._bytes_host else value
        return self._secrets.after_paths_bytes(value)

    def page(self, value: bytes) -> bytes:
        """A rendered page: only the secrets go (its paths and hosts came from redacted records)."""
        return self._secrets.after_paths_bytes(self._secrets.bytes(value))

    def data(self, value: Any) -> Any:
        """Every text in a JSON value, redacted; its shape and its other values as they were."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.data(v) for v in value]
        if isinstance(value, dict):
            return {k: REDACTED if self._secrets.is_secret_header(k) and isinstance(v, str) else self.data(v)
                    for k, v in value.items()}
        return value


class _SecretRules:
    """The secret rules, compiled once per run, for text and for bytes."""

    def __init__(self, secrets: Secrets, private_addresses: bool) -> None:
        self._headers = {h.lower() for h in secrets.headers}
        rules: list[tuple[str, str]] = []  # (pattern, replacement), in order
        if found := secret_text.known(secrets.values):
            rules.append((found, REDACTED))
        if found := secret_text.users(secrets.users):
            rules.append((found, USER))
        rules += [(secret_text.header_values(secrets.headers), r"\g<1>" + REDACTED),
                  (secret_text.QUERY, r"\g<1>" + REDACTED), (secret_text.USERINFO, r"\g<1>" + REDACTED + "@"),
                  (secret_text.SSH_LABEL, USER)]
        self._text = [(re.compile(p), r) for p, r in rules]
        self._bytes = [(re.compile(p.encode()), r.encode()) for p, r in rules]
        after = [(secret_text.HOME, r"\g<1>" + USER)]  # after the paths are cut: what they left of a home
        self._after_text = [(re.compile(p), r) for p, r in after]
        self._after_bytes = [(re.compile(p.encode()), r.encode()) for p, r in after]
        self._private = private_addresses

    def is_secret_header(self, name: str) -> bool:
        return name.lower() in self._headers

    def text(self, value: str) -> str:
        for pattern, replacement in self._text:
            value = pattern.sub(replacement, value)
        return value

    def bytes(self, value: bytes) -> bytes:
        for pattern, replacement in self._bytes:
            value = pattern.sub(replacement, value)
        return value

    def after_paths_text(self, value: str) -> str:
        for pattern, replacement in self._after_text:
            value = pattern.sub(replacement, value)
        return _ADDRESS.sub(_private_text, value) if self._private else value

    def after_paths_bytes(self, value: bytes) -> bytes:
        for pattern, replacement in self._after_bytes:
            value = pattern.sub(replacement, value)
        return _BYTES_ADDRESS.sub(_private_bytes, value) if self._private else value


# An IPv4 address, or an IPv6 one with a `::` or all eight groups, not inside a longer word or number.
_ADDRESS_PATTERN = (r"(?<![\w.:])(?:(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)"
                    r"|(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?:%[\w.-]+)?(?![\w.:]))")
_ADDRESS = re.compile(_ADDRESS_PATTERN)
_BYTES_ADDRESS = re.compile(_ADDRESS_PATTERN.encode())


def _is_private(text: str) -> bool:
    """RFC 1918, link-local (IPv4 and IPv6), unique local (fc00::/7); loopback stays."""
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return False
    if address.is_loopback:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return any(address in ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                                                                "169.254.0.0/16"))
    return address.is_link_local or address in ipaddress.ip_network("fc00::/7")


def _private_text(match: re.Match[str]) -> str:
    return PRIVATE if _is_private(match.group(0)) else match.group(0)


def _private_bytes(match: re.Match[bytes]) -> bytes:
    found = match.group(0)
    return PRIVATE.encode() if _is_private(found.decode("ascii", "replace")) else found


@functools.lru_cache(maxsize=1)
def _this_host() -> tuple[str, str]:
    return socket.gethostname(), socket.getfqdn()  # getfqdn may ask the resolver: once is enough


def _short_text(match: re.Match[str]) -> str:
    parts = [p for p in match.group(0).split("/") if p]
    return f"{ELLIPSIS}/{_last(parts, _HOMES)}" if parts else ELLIPSIS


def _short_bytes(match: re.Match[bytes]) -> bytes:
    parts = [p for p in match.group(0).split(b"/") if p]
    return ELLIPSIS.encode() + (b"/" + _last(parts, _BYTES_HOMES) if parts else b"")


_HOMES = ("home", "Users")
_BYTES_HOMES = (b"home", b"Users")


def _last(parts: list[Any], homes: tuple[Any, ...]) -> Any:
    """The last part, unless it is a home folder's name (`/home/alice`): a user's name never stays."""
    if len(parts) >= 2 and parts[-2] in homes:
        return USER if isinstance(parts[-1], str) else USER.encode()
    return parts[-1]
