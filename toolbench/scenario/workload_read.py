"""`workload:` in a scenario, read at the boundary into a Workload (toolbench.scenario.workload):
every value checked, every error one line `file:line: workload.requests[1].checks.status: ...`.

What it holds to: request names REQUEST_NAME and unique; the literal parts of paths and header
values as httpvalues checks them, `${variables}` kept as they are (each tool fills them; a literal
`${` is refused, since JMeter would read it as its own expression); a body inline or from a file,
and the CSV data file, both relative to the scenario's folder and inside it (no absolute path, no
`..` or symlink out), read bounded; every `${variable}` a request sends a data column or, in a
sequence, extracted by an earlier request. Query values are kept unencoded: each tool encodes
them, with the variables filled, as it sends them."""
from __future__ import annotations

import dataclasses
import math
import re
import urllib.parse
from pathlib import Path
from typing import Any, Callable, Mapping

from toolbench.errors import ScenarioError
from toolbench.scenario import httpvalues, yamlread
from toolbench.scenario.read import Matrix, StopSpec
from toolbench.scenario.request import METHODS, RequestSpec
from toolbench.scenario.targets import TargetSpec
from toolbench.scenario.workload import (JSON_PATH, ORDERS, REQUEST_NAME, VARIABLE, Checks, Extract, Workload,
                                         WorkloadRequest)
from toolbench.scenario.workload_parts import NAME, NAME_RULE, data_file, file_under, stages, think
from toolbench.scenario.yamlread import Node, attempt

KEYS = ("order", "data", "think", "stages", "requests")
REQUEST_KEYS = ("name", "method", "path", "query", "headers", "body", "body_file", "weight", "extract", "checks")
CHECK_KEYS = ("status", "contains", "json", "max_bytes")
MAX_BODY_BYTES = 1 << 20
MAX_REQUESTS = 64
MAX_REGEX = 512
MAX_CHECK_BYTES = 1 << 30
MAX_WEIGHT = 1e6


def parse(node: Node, folder: Path | None) -> Workload | None:
    """The workload under `node`; `folder` is the scenario file's folder, where its files are. None
    when no request read (while yamlread collects errors: each request's are kept).

    With no `folder`, its shape only, as a report reads back a stored run's workload (the run
    folder holds the scenario's text, not its files): no file is opened (a data file has no
    columns, a body_file's body is unknown) and no variable is checked against the data."""
    keys = node.items(KEYS)
    if "requests" not in keys:
        raise node.error("missing required key 'requests'")
    order = keys["order"].choice(ORDERS) if "order" in keys else "sequence"
    data = attempt(lambda: data_file(keys["data"], folder), None) if "data" in keys else None
    pause = attempt(lambda: think(keys["think"]), None) if "think" in keys else None
    profile = attempt(lambda: stages(keys["stages"]), ()) if "stages" in keys else ()
    read = _requests(keys["requests"], order, folder)
    # A part that did not read leaves its variables unknown: checking against it would only add noise.
    if folder is not None and None not in read and ("data" not in keys or data is not None):
        _check_variables(read, data.columns if data is not None else ())
    requests = tuple(request for _, request in filter(None, read))
    if not requests:  # each was refused with its errors, kept while collecting
        return None
    return Workload(order=order, requests=requests, data=data, think=pause, stages=profile)


def first_request(workload: Workload) -> RequestSpec:
    """The workload's first request as the one `request:` of a scenario without a workload, so that
    code that reads a cell's single request still works; its query is in its path, encoded."""
    first = workload.requests[0]
    query = "?" + urllib.parse.urlencode(first.query, quote_via=urllib.parse.quote) if first.query else ""
    return RequestSpec(method=first.method, path=httpvalues.request_path(first.path + query),
                       headers=dict(first.headers), body=first.body)


def staged(workload: Workload, top: dict[str, Node], matrix: Matrix | None) -> tuple[Matrix | None, StopSpec]:
    """The matrix and stop a workload's stages set: its length is the stop, its peak the cell's
    concurrency (users) or rate (requests/s, the connections then the matrix's concurrency, 10 when
    not given). Given here too, they would contradict the stages: refused."""
    if "stop" in top:
        yamlread.soft(top["stop"].error("the workload's stages set the duration: give no `stop`"))
    given = top["matrix"].items() if "matrix" in top and top["matrix"].is_mapping() else {}
    by_users = workload.peak_users is not None
    for key in ("concurrency", "rate") if by_users else ("rate",):
        if key in given:
            what = "users (the concurrency)" if by_users else "rate"
            yamlread.soft(given[key].error(f"the workload's stages set the {what}: give no matrix.{key}"))
    stop = StopSpec(duration_s=workload.duration_s)
    if matrix is not None and by_users:
        matrix = dataclasses.replace(matrix, concurrency=(workload.peak_users,), rate=(None,))
    elif matrix is not None:
        matrix = dataclasses.replace(matrix, rate=(workload.peak_rate_rps,))
    return matrix, stop


# ---- requests ----

def _requests(node: Node, order: str, folder: Path | None) -> list[tuple[Node, WorkloadRequest] | None]:
    """Each request with its node; None for one that did not read (its errors are kept)."""
    children = list(node.elements())
    if not children:
        raise node.error("expected at least one request")
    if len(children) > MAX_REQUESTS:
        raise node.error(f"expected at most {MAX_REQUESTS} requests, got {len(children)}")
    seen: set[str] = set()
    read: list[tuple[Node, WorkloadRequest] | None] = []
    for child in children:
        request = attempt(lambda c=child: _request(c, order, folder, seen), None)
        read.append((child, request) if request is not None else None)
    return read


def _request(node: Node, order: str, folder: Path | None, seen: set[str]) -> WorkloadRequest:
    """The request, or its first error raised once each key has been read (the others kept)."""
    keys = node.items(REQUEST_KEYS)
    if "name" not in keys:
        raise node.error("missing required key 'name'")
    if "body" in keys and "body_file" in keys:
        raise keys["body_file"].error("give either `body` or `body_file`, not both")
    failed: list[ScenarioError] = []

    def part(key: str, read: Callable[[Node], Any], default: Any) -> Any:
        if key not in keys:
            return default
        try:
            return read(keys[key])
        except ScenarioError as exc:
            failed.append(exc)
            return default

    name = part("name", lambda n: _request_name(n, seen), "")
    body_file = part("body_file", lambda n: _body_file(n, folder), None)
    request = WorkloadRequest(
        name=name,
        method=part("method", lambda n: n.choice(METHODS), "GET"),
        path=part("path", _path, "/"),
        query=part("query", _query, {}),
        headers=part("headers", _headers, {}),
        body=part("body", _body, None) if body_file is None else body_file[1],
        body_file=body_file[0] if body_file is not None else None,
        weight=part("weight", lambda n: _weight(n, order), 1.0),
        extract=part("extract", lambda n: _extracts(n, order), ()),
        checks=part("checks", _checks, None),
    )
    for later in failed[1:]:
        yamlread.soft(later)
    if failed:
        raise failed[0]
    return request


def _request_name(node: Node, seen: set[str]) -> str:
    name = node.string()
    if not REQUEST_NAME.fullmatch(name):
        raise node.error(f"not a request name: {name!r} (expected a lower-case letter, then lower-case letters, "
                         "digits, '_' or '-', at most 32 characters)")
    if name in seen:
        raise node.error(f"a second request named {name!r}: each name keys its own figures")
    seen.add(name)
    return name


def _template(node: Node, text: str, literal: Callable[[str], str]) -> str:
    """`text` with each literal part passed through `literal` (checked, normalised) and each
    `${variable}` kept; a `${` that starts no variable is refused."""
    if "${" in VARIABLE.sub("", text):
        raise node.error(f"`${{` starts no variable in {text[:60]!r}: a variable is ${{name}}, the name {NAME_RULE} "
                         "(a literal `${` is refused: JMeter would read it as its own expression)")
    pieces, at = [], 0
    for found in VARIABLE.finditer(text):
        pieces += [literal(text[at:found.start()]), found.group(0)]
        at = found.end()
    return "".join(pieces) + literal(text[at:])


def _checked(node: Node, check: Callable[[str], str]) -> Callable[[str], str]:
    def run(text: str) -> str:
        try:
            return check(text)
        except httpvalues.ValueProblem as exc:
            raise node.error(str(exc)) from None
    return run


def _path(node: Node) -> str:
    path = node.string()
    if "?" in path:
        raise node.error(f"give the query under `query:`, not in the path: {path!r}")
    if not path.startswith("/"):
        raise node.error(f"expected a path starting with '/', got {path!r}")
    # Each literal part is checked as if it were a path of its own: "/" + part, the "/" then taken off.
    return _template(node, path, _checked(node, lambda text: httpvalues.request_path("/" + text)[1:]))


def _printable(node: Node, what: str) -> Callable[[str], str]:
    def check(text: str) -> str:
        if not text.isprintable() or not _utf8(text):
            raise node.error(f"{what} {text[:60]!r} has a control character or is not valid text")
        return text
    return check


def _query(node: Node) -> dict[str, str]:
    query = {}
    for key, child in node.items().items():
        if not key or not key.isprintable() or not _utf8(key) or "${" in key:
            raise child.error(f"not a query key: {key[:60]!r} (expected printable text without a variable)")
        value = child.scalar()
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise child.error("expected a text or a number as a query value")
        query[key] = _template(child, str(value), _printable(child, "query value"))
    return query


def _headers(node: Node) -> dict[str, str]:
    headers = {}
    for name, child in node.items().items():
        value = str(child.scalar())
        headers[name] = _template(child, value, lambda text: text)
        try:
            httpvalues.header(name, value)
        except httpvalues.ValueProblem as exc:
            raise child.error(str(exc)) from None
    return headers


def _body(node: Node) -> str:
    text = node.string()
    if not _utf8(text):
        raise node.error("the body is not valid text (it has a lone surrogate)")
    if len(text.encode("utf-8")) > MAX_BODY_BYTES:
        raise node.error(f"a body of more than {MAX_BODY_BYTES} bytes: give it as body_file")
    return _template(node, text, lambda literal: literal)


def _body_file(node: Node, folder: Path | None) -> tuple[str, str | None]:
    """The file's name as given and its text (None: not opened, no folder given)."""
    if folder is None:
        return node.string(), None
    _, data = file_under(node, folder, MAX_BODY_BYTES, "a body")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise node.error(f"{node.string()!r} is not UTF-8 text (byte {exc.start})") from None
    return node.string(), _template(node, text, lambda literal: literal)


def _weight(node: Node, order: str) -> float:
    if order != "mix":
        raise node.error("a weight needs order: mix (in a sequence each request runs once per iteration)")
    value = node.number(MAX_WEIGHT)
    if value <= 0:
        raise node.error("expected a positive weight")
    return value


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# ---- extract and checks ----

def _extracts(node: Node, order: str) -> tuple[Extract, ...]:
    if order != "sequence":
        raise node.error("extract needs order: sequence (in a mix no request is sure to come before another)")
    found = []
    for variable, child in node.items().items():
        if not NAME.fullmatch(variable):
            raise child.error(f"not a variable name: {variable!r} (expected {NAME_RULE})")
        how = child.items(("json", "regex"))
        if len(how) != 1:
            raise child.error("give exactly one of `json` (a path like $.token) or `regex` (with one group)")
        if "json" in how:
            found.append(Extract(variable, json_path=_json_path(how["json"])))
        else:
            found.append(Extract(variable, regex=_regex(how["regex"])))
    return tuple(found)


def _json_path(node: Node) -> str:
    path = node.string()
    if not JSON_PATH.fullmatch(path):
        raise node.error(f"not a JSON path toolbench translates: {path!r} (expected $ then .key or [index] steps, "
                         "e.g. $.token or $.results[0].id)")
    return path


def _regex(node: Node) -> str:
    pattern = node.string()
    if len(pattern) > MAX_REGEX:
        raise node.error(f"a regex of more than {MAX_REGEX} characters")
    try:
        groups = re.compile(pattern).groups
    except re.error as exc:
        raise node.error(f"not a regex: {exc}") from None
    if groups != 1:
        raise node.error(f"expected exactly one group (the value taken), got {groups}")
    return pattern


def _checks(node: Node) -> Checks:
    keys = node.items(CHECK_KEYS)
    if not keys:
        raise node.error(f"expected at least one check ({', '.join(CHECK_KEYS)})")
    json_path, equals = None, None
    if "json" in keys:
        json_path, equals = _json_check(keys["json"])
    return Checks(status=_statuses(keys["status"]) if "status" in keys else (),
                  contains=_template(keys["contains"], keys["contains"].string(), lambda text: text)
                  if "contains" in keys else None,
                  json_path=json_path, json_equals=equals,
                  max_bytes=keys["max_bytes"].positive_int(MAX_CHECK_BYTES) if "max_bytes" in keys else None)


def _statuses(node: Node) -> tuple[int, ...]:
    if not node.is_sequence():
        raise node.error("expected a list of HTTP statuses, e.g. [200, 201]")
    found = []
    for child in node.elements():
        value = child.scalar()
        if isinstance(value, bool) or not isinstance(value, int) or not 100 <= value <= 599:
            raise child.error(f"expected an HTTP status from 100 to 599, got {value!r}")
        found.append(value)
    if not found:
        raise node.error("expected at least one HTTP status")
    return tuple(dict.fromkeys(found))


def _json_check(node: Node) -> tuple[str, str | int | float | bool]:
    keys = node.items(("path", "equals"))
    for required in ("path", "equals"):
        if required not in keys:
            raise node.error(f"missing required key {required!r}")
    equals = keys["equals"].scalar()
    if not isinstance(equals, (str, int, float, bool)) or isinstance(equals, float) and not math.isfinite(equals):
        raise keys["equals"].error("expected a text, a number or true/false to compare the value with")
    if isinstance(equals, str):
        equals = _template(keys["equals"], equals, lambda text: text)
    return _json_path(keys["path"]), equals


# ---- variables ----

def _check_variables(read: list[tuple[Node, WorkloadRequest] | None], columns: tuple[str, ...]) -> None:
    """Every ${variable} a request sends is a data column or extracted by an earlier request;
    an extracted variable is neither a column nor extracted twice."""
    pairs = [pair for pair in read if pair is not None]
    extracted_by = {e.variable: request.name for _, request in pairs for e in request.extract}
    before: set[str] = set()
    for node, request in pairs:
        for variable in sorted(request.variables() - set(columns) - before):
            if variable in extracted_by:
                why = (f"it is extracted by {extracted_by[variable]!r}, not by a request before this one "
                       "(a request sends only what an earlier one extracted)")
            else:
                known = ", ".join(columns) or "none: the workload has no data file"
                why = f"it is neither a column of the data file (columns: {known}) nor extracted by an earlier request"
            yamlread.soft(node.error(f"${{{variable}}}: {why}"))
        for extract in request.extract:
            if extract.variable in columns:
                yamlread.soft(node.error(f"extract {extract.variable!r}: already a column of the data file"))
            elif extract.variable in before:
                yamlread.soft(node.error(f"extract {extract.variable!r}: already extracted by an earlier request"))
            before.add(extract.variable)


def no_target_paths(top: dict[str, Node], targets: Mapping[str, TargetSpec]) -> None:
    """A workload gives each request its own path: a target's `path` (which replaces the one
    request's path) has no request to apply to, so it is an error, not silently dropped."""
    for name, spec in targets.items():
        if spec.path is not None:
            node = top["targets"].items()[name] if "targets" in top else top["target"]
            yamlread.soft(node.error("path: a workload gives each request its own path; leave the target's out"))
