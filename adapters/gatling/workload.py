"""A cell's workload (toolbench.scenario.workload) for Gatling: what Gatling can express of one,
and the data its fixed simulation (templates/ToolbenchWorkload.java) reads.

As for a single request (adapter.py), the simulation is the same file for every workload,
compiled once; the workload is JSON beside it (PARAMS), so no value of a scenario is written into
Java source, and none reaches Gatling as a string it would read as its Expression Language: each
URL, header value and body is a list of pieces, literal text or a `${variable}` the simulation
fills from the session (a data row's column or an extracted value). Literal pieces of the path
and the query are percent-encoded here, variables there.

The translation: a feeder of the data file's rows (recycle: `listFeeder(...).circular()`; stop:
a feeder whose user leaves after the last row), fed once per user before its loop or at the top
of each iteration; the requests in order as an exec chain (sequence) or `randomSwitchOrElse` with
the weights as percentages (mix); checks `status().in(...)`, `substring(...)`, `jsonPath(...)`,
`bodyLength().lte(...)`, each named CHECK_PREFIX + what (its failure message starts with it:
log.classes counts it as a `check`); extractors `jsonPath`/`regex` with `saveAs`; think time a
constant or uniform `pause` before each request after a user's first.
The load: a closed cell (concurrency) is Gatling's closed model, its users looping over the
workload, `rampConcurrentUsers(a).to(b).during(d)` and `constantConcurrentUsers(n).during(d)`
per stage (or one constant step for the cell's duration); a looping user leaves at the top of an
iteration once more users loop than the profile asks for (a ramp down), and before a request
once the profile has ended. An open cell (rate) is the open model, `rampUsersPerSec` and
`constantUsersPerSec`: a new user per iteration, at the rate divided by the requests an
iteration sends, so that the request rate is the asked one on average."""
from __future__ import annotations

import json
import math
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus

from toolbench.adapters import workload_requests
from toolbench.contract.adapter import SUPPORTED, Support, option
from toolbench.contract.workload import FeatureSupport, approximated, honoured
from toolbench.errors import AdapterError
from toolbench.scenario.workload import VARIABLE, Workload, WorkloadRequest

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell

SOURCE, PARAMS = "ToolbenchWorkload.java", "gatling_workload.json"
CHECK_PREFIX = "toolbench check "  # the name of each of toolbench's checks (the simulation's CHECK)
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
PERCENT_DIGITS = 6  # a mix's percentages, to a millionth of a percent
MAX_USERS = 2 ** 31 - 1

FEATURES: dict[str, FeatureSupport] = {
    "sequence": honoured(),  # an exec chain, looped by each user (closed model)
    "mix": honoured(),  # randomSwitchOrElse, the weights as percentages
    "data": honoured(),  # a feeder of the rows: circular (recycle), or the user leaves after the last (stop)
    "extract": approximated("Gatling's regex check reads Java regular expressions, not Python's; a JSON path "
                            "is the same"),
    "think": honoured(),  # pause(d) or pause(min, max) before each request after a user's first
    "checks": honoured(),  # status().in, substring, jsonPath, bodyLength().lte, each named as toolbench's
    "stages": approximated("closed: rampConcurrentUsers/constantConcurrentUsers per stage, and on a ramp down "
                           "a looping user leaves at the top of its next iteration, not mid-sequence; open: "
                           "rampUsersPerSec/constantUsersPerSec, a new user per iteration at the rate divided by "
                           "the requests an iteration sends"),
    "per_request": honoured(),  # the simulation.log's request names
}


def supports(cell: "Cell", workload: Workload) -> Support:
    """What of a workload cell the simulation here cannot run (the feature table aside)."""
    if cell.stop.duration_s is None:
        return Support(False, "a Gatling workload runs for a duration (stop.duration or its stages): its users "
                              "loop, they do not share a request budget")
    if round(cell.stop.duration_s * 1000) < 1:
        return Support(False, f"Gatling's injection lasts whole milliseconds, not {cell.stop.duration_s:g}s")
    for request in workload.requests:
        if request.method not in METHODS:
            return Support(False, f"the simulation here sends {', '.join(METHODS)}, not {request.method}")
    for stage in workload.stages:
        if stage.users is not None and stage.users > MAX_USERS:
            return Support(False, f"Gatling counts its users in a Java int: at most {MAX_USERS}, not {stage.users}")
    return SUPPORTED


def simulation_source() -> str:
    return resources.files("toolbench.adapters.gatling").joinpath(f"templates/{SOURCE}").read_text()


def pieces(text: str, variable_kind: str, literal: Any = None) -> list[list[str]]:
    """`text` as the simulation fills it: ["text", literal] and [variable_kind, name] pieces, the
    literal ones passed through `literal` (percent-encoding in a URL)."""
    out: list[list[str]] = []
    at = 0
    for match in VARIABLE.finditer(text):
        if match.start() > at:
            out.append(["text", literal(text[at:match.start()]) if literal else text[at:match.start()]])
        out.append([variable_kind, match.group(1)])
        at = match.end()
    if at < len(text) or not out:
        out.append(["text", literal(text[at:]) if literal else text[at:]])
    return out


def url_pieces(base_url: str, request: WorkloadRequest) -> list[list[str]]:
    """The request's whole URL: the base, the path (a variable percent-encoded as one segment),
    and the query (each key and value encoded as a form value, as workload_requests.literal)."""
    out = [["text", base_url.rstrip("/")]] + pieces(request.path, "path", lambda s: quote(s, safe="/"))
    for n, (key, value) in enumerate(request.query.items()):
        out.append(["text", ("?" if n == 0 else "&")])
        out += pieces(key, "query", lambda s: quote_plus(s, safe=""))
        out.append(["text", "="])
        out += pieces(value, "query", lambda s: quote_plus(s, safe=""))
    return out


def _request(base_url: str, request: WorkloadRequest) -> dict[str, Any]:
    checks = request.checks
    headers = dict(request.headers)
    if request.body is not None and "content-type" not in {k.lower() for k in headers}:
        headers["Content-Type"] = "application/octet-stream"
    return {
        "name": request.name, "method": request.method, "url": url_pieces(base_url, request),
        "headers": [[key, pieces(value, "header", _header_text)] for key, value in headers.items()],
        "body": pieces(request.body, "body") if request.body is not None else None,
        "extract": [{"variable": e.variable, "json_path": e.json_path, "regex": e.regex} for e in request.extract],
        "checks": None if checks is None else {
            "status": list(checks.status), "contains": checks.contains, "json_path": checks.json_path,
            "json_equals": checks.json_equals, "max_bytes": checks.max_bytes},
    }


def _header_text(text: str) -> str:
    """A header's literal text without control characters (none can start a header of its own)."""
    return "".join(ch for ch in text if ch == "\t" or not (ord(ch) < 32 or ord(ch) == 127))


def percents(requests: tuple[WorkloadRequest, ...]) -> list[float]:
    """Each request's share of a mix in percent, but the last's (randomSwitchOrElse's `orElse`
    takes the rest), each rounded down so that they never add up past 100."""
    total = sum(r.weight for r in requests)
    if total <= 0 or any(r.weight <= 0 for r in requests):
        raise AdapterError("gatling: a request's weight must be positive")
    scale = 10 ** PERCENT_DIGITS
    return [math.floor(r.weight / total * 100 * scale) / scale for r in requests[:-1]]


def profile(cell: "Cell", workload: Workload, per_iteration: int) -> tuple[str, list[dict[str, Any]]]:
    """The load model and its steps, each {from, to, duration_ms}: the stages from 0, or one
    constant step for the cell's duration. An open model's levels are users a second: the
    request rate over the requests an iteration sends."""
    duration = cell.stop.duration_s
    assert duration is not None, "supports() refuses a workload without a duration"
    closed = cell.rate_rps is None
    if not workload.stages:
        level = cell.concurrency if closed else cell.rate_rps / per_iteration  # type: ignore[operator]
        return ("closed" if closed else "open"), [{"from": level, "to": level, "duration_ms": round(duration * 1000)}]
    steps, last = [], 0.0
    for stage in workload.stages:
        level = float(stage.users) if stage.users is not None else (stage.rate_rps or 0.0) / per_iteration
        steps.append({"from": last, "to": level, "duration_ms": round(stage.duration_s * 1000)})
        last = level
    if workload.stages[0].users is not None:
        return "closed", [{**s, "from": int(s["from"]), "to": int(s["to"])} for s in steps]
    return "open", steps


def params(cell: "Cell", workload: Workload) -> str:
    """The workload as the simulation reads it: JSON, every value as data."""
    assert cell.base_url is not None, "the runner resolves the target's URL before building"
    per_iteration = len(workload.requests) if workload.order == "sequence" else 1
    model, steps = profile(cell, workload, per_iteration)
    data = None
    if workload.data is not None:
        data = {"rows": workload_requests.read_rows(workload.data), "per": workload.data.per,
                "at_end": workload.data.at_end}
    think = workload.think
    out = {
        "base_url": cell.base_url, "order": workload.order,
        "requests": [_request(cell.base_url, r) for r in workload.requests],
        "percents": percents(workload.requests) if workload.order == "mix" else [],
        "data": data,
        "think": None if think is None else {"min_ms": round(think.min_s * 1000), "max_ms": round(think.max_s * 1000)},
        "model": model, "profile": steps, "duration_ms": sum(s["duration_ms"] for s in steps),
        "keepalive": cell.keepalive, "timeout_ms": int(option(cell, "timeout_s", 30)) * 1000,
        "http2": cell.protocol == "h2",
    }
    return json.dumps(out, indent=1) + "\n"
