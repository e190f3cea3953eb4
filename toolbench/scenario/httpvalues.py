"""What a scenario may put on the wire: URLs, request paths and headers, checked and
normalised once at the boundary so that every tool sends the same bytes, and no value
can inject a header, a second request line or a second URL."""
from __future__ import annotations

import ipaddress
import re
import urllib.parse

# RFC 7230 3.2.6: a header name is a token.
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# RFC 7230 3.2: field-value is visible ASCII, spaces and tabs; obs-text is not sent by
# new senders, and tools disagree on how to encode it.
FIELD_VALUE = re.compile(r"[\t\x20-\x7e]*")
_HOSTNAME = re.compile(r"(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
                       r"(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?")
# RFC 3986 pchar plus "/" and "?": what a request target may carry unencoded.
_PATH_SAFE = "/?!$&'()*+,;=:@-._~"
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


class ValueProblem(ValueError):
    """A value that cannot be sent as given; the message says why."""


def header(name: str, value: str) -> None:
    if not TOKEN.fullmatch(name):
        raise ValueProblem(f"not a header name: {name!r} (expected an RFC 7230 token: letters, digits "
                           "and !#$%&'*+.^_`|~-)")
    if not FIELD_VALUE.fullmatch(value):
        raise ValueProblem(f"header {name}: value {value!r} has a control character or non-ASCII text "
                           "(allowed: printable ASCII, spaces and tabs)")


def request_path(path: str) -> str:
    """The path (and query) as sent: every character outside RFC 3986's set is
    percent-encoded as UTF-8 (`/é` -> `/%C3%A9`, a space -> `%20`), a `%` that starts
    no escape becomes `%25`, and existing escapes stay as they are."""
    if not path.startswith("/"):
        raise ValueProblem(f"expected a path starting with '/', got {path!r}")
    if "#" in path:
        raise ValueProblem(f"a fragment (#...) is never sent to a server: {path!r}")
    try:
        return urllib.parse.quote(_LONE_PERCENT.sub("%25", path), safe=_PATH_SAFE + "%")
    except UnicodeEncodeError:
        raise ValueProblem(f"not valid text (a lone surrogate): {path!r}") from None


def base_url(url: str) -> str:
    """An http(s) URL of a server (and an optional base path), checked and normalised,
    without a trailing slash: `http://127.0.0.1:8080` or `http://host/app`."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:  # a bad port, an unclosed IPv6 bracket
        raise ValueProblem(f"not a valid URL: {url!r} ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueProblem(f"expected an http:// or https:// URL, got {url!r}")
    if "@" in parts.netloc:
        raise ValueProblem(f"a URL with a user name or password is not supported: {url!r} "
                           "(send credentials as a header under request.headers)")
    if port == 0:
        raise ValueProblem(f"port 0 is not a port to connect to: {url!r}")
    _host(parts.hostname or "", url)
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        raise ValueProblem(f"give the query in request.path, not in the target URL: {url!r}")
    path = request_path(parts.path) if parts.path else ""
    return f"{parts.scheme}://{parts.netloc}{path}".rstrip("/")


def _host(host: str, url: str) -> None:
    if ":" in host:  # inside brackets: only an IPv6 address
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueProblem(f"not an IPv6 address: [{host}] in {url!r}") from None
    elif not _HOSTNAME.fullmatch(host):
        raise ValueProblem(f"not a host name: {host!r} in {url!r} (an internationalised name is given "
                           "in its ASCII form, xn--...)")
