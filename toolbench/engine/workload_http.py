"""One workload request's bytes with a user's variables filled in, and the verdict on its response:
its checks, and the values its extractors take from it. Pure functions, no I/O.

Variables reach the request only encoded for where they go: percent-encoded in the path (a value
is one segment, `/` included) and in query values, stripped of control characters in a header
value (a value taken from a response cannot add a header), as text in the body. A variable that
has no value yet (no data column of that name, nothing extracted yet) is sent as empty text."""
from __future__ import annotations

import json
import re
import urllib.parse
from typing import Any, Mapping

from toolbench.engine.options import USER_AGENT
from toolbench.engine.workload import VARIABLE, Checks, Request

# Verdicts on a response: ok, or the failure class it counts in (toolbench.record.schema.Failures).
OK, CHECK, HTTP_4XX, HTTP_5XX = "ok", "check", "http_4xx", "http_5xx"
JUDGED = (HTTP_4XX, HTTP_5XX, CHECK)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[([0-9]+)\]")
_MISSING = object()


def fill(text: str, values: Mapping[str, str], encode: Any = None) -> str:
    """`text` with each ${name} replaced by its value (encoded by `encode`, when given)."""
    if "${" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        value = values.get(match.group(1), "")
        return encode(value) if encode is not None else value

    return VARIABLE.sub(one, text)


def request_bytes(req: Request, values: Mapping[str, str], host: str, keepalive: bool) -> bytes:
    """The request as sent: request line, headers (the defaults the engine always sends unless the
    workload gives them), and the body."""
    target = fill(req.path, values, _segment)
    if req.query:
        target += "?" + "&".join(f"{urllib.parse.quote_plus(k)}={urllib.parse.quote_plus(fill(v, values))}"
                                 for k, v in req.query)
    given = {name.lower() for name, _ in req.headers}
    lines = [f"{req.method} {target} HTTP/1.1"]
    lines += [f"{n}: {v}" for n, v in (("Host", host), ("User-Agent", USER_AGENT), ("Accept", "*/*"))
              if n.lower() not in given]
    lines += [f"{n}: {fill(v, values, _header)}" for n, v in req.headers
              if n.lower() not in ("content-length", "connection", "host", "transfer-encoding")]
    body = fill(req.body, values).encode("utf-8") if req.body is not None else b""
    if body or req.method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    if not keepalive:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body


def judge(req: Request, status: int, body: bytes, body_bytes: int) -> tuple[str, dict[str, str]]:
    """The verdict on one response (OK or the failure class it counts in), and the values its
    extractors took from it (one that found nothing is left out: the variable keeps its value).
    An extractor that finds nothing fails the response as a check when the request has checks.
    `body` is what was kept of the body, `body_bytes` its whole length."""
    taken: dict[str, str] = {}
    doc: Any = _MISSING
    missed = False
    text: str | None = None
    for ex in req.extract:
        if ex.json_path is not None:
            if doc is _MISSING:
                doc = _json(body)
            value = _text(at_path(doc, ex.json_path))
        else:
            assert ex.regex is not None
            if text is None:
                text = body.decode("utf-8", "replace")
            match = ex.regex.search(text)
            value = match.group(1) if match is not None and match.group(1) is not None else None
        if value is None:
            missed = True
        else:
            taken[ex.variable] = value
    checks = req.checks
    if checks is None:
        return _by_status(status), taken
    if checks.status:
        if status not in checks.status:
            return CHECK, taken
    elif status >= 400:
        return _by_status(status), taken  # as without checks: the status is its own class
    if missed or not _passes(checks, body, body_bytes, doc):
        return CHECK, taken
    return OK, taken


def _passes(checks: Checks, body: bytes, body_bytes: int, doc: Any) -> bool:
    if checks.max_bytes is not None and body_bytes > checks.max_bytes:
        return False
    if checks.contains is not None and checks.contains.encode("utf-8") not in body:
        return False
    if checks.json_path is not None:
        value = at_path(_json(body) if doc is _MISSING else doc, checks.json_path)
        if not same(value, checks.json_equals):
            return False
    return True


def at_path(doc: Any, path: str) -> Any:
    """The value at `path` (`$`, then `.key` and `[index]` steps) in a parsed JSON document,
    or _MISSING."""
    value = doc
    for match in _STEP.finditer(path, 1):
        key, index = match.group(1), match.group(2)
        if key is not None and isinstance(value, dict) and key in value:
            value = value[key]
        elif index is not None and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            return _MISSING
    return value


def same(value: Any, expected: Any) -> bool:
    """JSON equality: a number equals a number of the same value, a boolean only a boolean,
    a string only the same string."""
    if value is _MISSING:
        return False
    if isinstance(expected, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(expected, bool) and value == expected
    if isinstance(expected, (int, float)):
        return isinstance(value, (int, float)) and value == expected
    return isinstance(value, str) and value == expected


def _by_status(status: int) -> str:
    return HTTP_5XX if status >= 500 else HTTP_4XX if status >= 400 else OK


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return _MISSING


def _text(value: Any) -> str | None:
    """A JSON value as a variable's text: a string as it is, anything else as JSON; None: none."""
    if value is _MISSING:
        return None
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _segment(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def _header(value: str) -> str:
    return _CONTROL.sub("", value)
