"""A scenario's `request:`, the one request every cell sends when there is no workload."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from toolbench.scenario import httpvalues
from toolbench.scenario.yamlread import Node

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


@dataclass(frozen=True)
class RequestSpec:
    method: str = "GET"
    path: str = "/"
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    content_type: str | None = None
    # Header names whose values `publish` takes out, besides the credential headers it always does
    # (toolbench.report.secret_text.SECRET_HEADERS); read back from the stored scenario text.
    secret_headers: tuple[str, ...] = ()


def parse_request(node: Node) -> RequestSpec:
    """A scenario's `request:`: its values checked as HTTP allows them (httpvalues)."""
    keys = node.items(("method", "path", "headers", "body", "content_type", "secret_headers"))
    path = _checked(keys["path"], httpvalues.request_path) if "path" in keys else "/"
    headers = {}
    if "headers" in keys:
        for name, child in keys["headers"].items().items():
            headers[name] = str(child.scalar())
            _checked(child, lambda value: httpvalues.header(name, value), headers[name])
    body = None
    if "body" in keys and not keys["body"].is_null():
        body = keys["body"].string()
        if not _utf8(body):
            raise keys["body"].error("the body is not valid text (it has a lone surrogate)")
    content_type = None
    if "content_type" in keys:
        content_type = keys["content_type"].string()
        _checked(keys["content_type"], lambda value: httpvalues.header("Content-Type", value), content_type)
    return RequestSpec(
        method=keys["method"].choice(METHODS) if "method" in keys else "GET",
        path=path,
        headers=headers,
        body=body,
        content_type=content_type,
        secret_headers=_secret_headers(keys["secret_headers"]) if "secret_headers" in keys else (),
    )


def _secret_headers(node: Node) -> tuple[str, ...]:
    """`secret_headers: [X-Token, ...]`: header names, each an RFC 7230 token."""
    if not node.is_sequence():
        raise node.error("expected a list of header names, e.g. [X-Token]")
    found = []
    for child in node.elements():
        name = child.string()
        if not httpvalues.TOKEN.fullmatch(name):
            raise child.error(f"not a header name: {name!r} (expected an RFC 7230 token: letters, digits "
                              "and !#$%&'*+.^_`|~-)")
        found.append(name)
    return tuple(found)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _checked(node: Node, check: Callable[[str], Any], value: str | None = None) -> Any:
    """`check` applied to the node's string (or to `value`), its complaint as file:line: key: ..."""
    try:
        return check(node.string() if value is None else value)
    except httpvalues.ValueProblem as exc:
        raise node.error(str(exc)) from None
