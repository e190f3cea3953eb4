"""A workload (toolbench.scenario.workload) for wrk: a Lua script made for the cell, the
workload's values as Lua string literals (`lua_string`) ahead of a fixed runtime
(templates/wrk_workload.lua) and toolbench's fixed done() (templates/wrk_done.lua), and the
figures per request name that the runtime writes beside wrk's own.

What follows from how wrk runs a script:
- one connection per thread (`-t C -c C`): a thread's request() and response() then alternate
  for its one connection, so the connection is the user: it runs the sequence in order, takes
  its data row, keeps the values it extracted, and each response is known to answer its request;
- think time is wrk's delay(), asked before each request;
- a check wrk cannot count itself: the script counts, per name, ok, HTTP failures (status 400 and
  above, as wrk counts them, unless the check names it), failed checks and requests that got no
  answer; the cell's ok and failed counts are then taken from those, which add up to wrk's own
  complete responses. When they do not (wrk counted errors the script saw no request of), the
  figures per name are left out, with the reason;
- wrk's Lua has no clock finer than a second and no latency per request: the figures per name
  are counts only;
- the data file is shipped beside the script (rows as tab-separated, percent-encoded fields), as
  the generator's host may not be this one."""
from __future__ import annotations

import dataclasses
import math
import re
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolbench.adapters import workload_requests
from toolbench.contract.adapter import Support
from toolbench.contract.workload import approximated, honoured, unsupported
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Counts, Failures, Measurement, Rates, RequestFigures
from toolbench.scenario.workload import REQUEST_NAME, Workload, WorkloadRequest

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell

SCRIPT = "wrk_workload.lua"
DATA_FILE = "wrk_data.txt"
REQUESTS_FILE = "wrk_requests.json"  # the name the runtime writes, in the working directory
REQUESTS_HEAD = '{"toolbench_wrk_requests"'
MAX_USERS = 256  # a thread each

FEATURES = {
    "sequence": honoured(),
    "mix": honoured(),
    "data": honoured(),
    "extract": honoured(),
    "think": honoured(),
    "checks": honoured(),
    "stages": unsupported("wrk opens all its connections at the start and keeps them to the end: no ramp of "
                          "users or rate"),
    "per_request": approximated("counts per name from the script's response(); wrk times requests only in its "
                                "one histogram, so there is no latency per name"),
}
_COUNTS = ("total", "ok", "http", "check", "unanswered")  # what the runtime counts per name, in order


def supports(cell: "Cell") -> Support | None:
    """Why wrk cannot run this cell's workload; None: it can."""
    workload = cell.workload
    assert workload is not None
    if cell.concurrency > MAX_USERS:
        return Support(False, f"wrk runs a workload on one thread per connection, to know which request each "
                              f"response answers: at most {MAX_USERS}")
    if any(e.regex is not None for r in workload.requests for e in r.extract):
        return Support(False, "wrk's Lua has patterns, not regular expressions: it cannot extract by a regex")
    if workload.data is not None and workload.data.at_end == "stop":
        return Support(False, "wrk cannot stop one connection when the data rows run out (at_end: stop)")
    return None


def lua_string(text: str) -> str:
    """A Lua string literal of `text` (as UTF-8): printable ASCII as itself, `"` and `\\` and every
    other byte as a decimal escape, so that no value ends the literal or the line it is on."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        out.append(ch if 32 <= byte < 127 and ch not in '"\\' else f"\\{byte:03d}")
    return '"' + "".join(out) + '"'


def _lua_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a finite number")
        return repr(int(value)) if isinstance(value, int) else f"{value:.17g}"
    return lua_string(str(value))


_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[([0-9]+)\]")


def _json_steps(path: str) -> str:
    """A checked JSON path (`$.a[0].b`) as the runtime's steps: a key as a string, an index as its
    1-based Lua index."""
    steps = [lua_string(key) if key else str(int(index) + 1) for key, index in _STEP.findall(path[1:])]
    return "{" + ", ".join(steps) + "}"


def _pairs(items: dict[str, str]) -> str:
    return "{" + ", ".join(f"{{{lua_string(k)}, {lua_string(v)}}}" for k, v in items.items()) + "}"


def _request(req: WorkloadRequest) -> str:
    fields = [f"name = {lua_string(req.name)}", f"method = {lua_string(req.method)}", f"path = {lua_string(req.path)}",
              f"query = {_pairs(req.query)}", f"headers = {_pairs(req.headers)}", f"weight = {_lua_value(req.weight)}"]
    if req.body is not None:
        fields.append(f"body = {lua_string(req.body)}")
    extract = [f"{{var = {lua_string(e.variable)}, steps = {_json_steps(e.json_path)}}}"
               for e in req.extract if e.json_path is not None]
    fields.append("extract = {" + ", ".join(extract) + "}")
    c = req.checks
    if c is not None:
        check = [f"status = {{{', '.join(f'[{s}] = true' for s in c.status)}}}" if c.status else None,
                 f"contains = {lua_string(c.contains)}" if c.contains is not None else None,
                 f"max_bytes = {c.max_bytes}" if c.max_bytes is not None else None,
                 f"json = {_json_steps(c.json_path)}, equals = {_lua_value(c.json_equals)}"
                 if c.json_path is not None else None]
        fields.append("checks = {" + ", ".join(x for x in check if x) + "}")
    return "    {" + ", ".join(fields) + "},\n"


def script(cell: "Cell") -> str:
    """The whole script: the cell's workload as Lua data, toolbench's done(), and the runtime."""
    workload = cell.workload
    assert workload is not None
    think = workload.think
    data = workload.data
    head = ["-- made by toolbench for one cell: every value of the scenario below is a Lua string literal\n",
            "W = {\n", f"  order = {lua_string(workload.order)},\n", f"  close = {_lua_value(not cell.keepalive)},\n",
            f"  users = {cell.concurrency},\n"]
    if think is not None:
        head.append(f"  think = {{min_ms = {round(think.min_s * 1000)}, max_ms = {round(think.max_s * 1000)}}},\n")
    if data is not None:
        columns = ", ".join(lua_string(c) for c in data.columns)
        head.append(f"  data = {{file = {lua_string(DATA_FILE)}, per = {lua_string(data.per)}, "
                    f"columns = {{{columns}}}}},\n")
    head += ["  requests = {\n", *(_request(r) for r in workload.requests), "  },\n}\n"]
    return "".join(head) + _template("wrk_done.lua") + _template("wrk_workload.lua")


def _template(name: str) -> str:
    return resources.files("toolbench.adapters").joinpath("templates", name).read_text(encoding="utf-8")


def data_text(workload: Workload) -> str | None:
    """The data rows as the runtime reads them: a line each, fields by tab, `%`, tab, CR and LF
    percent-encoded."""
    if workload.data is None:
        return None
    rows = workload_requests.read_rows(workload.data)

    def field(value: str) -> str:
        return value.replace("%", "%25").replace("\t", "%09").replace("\r", "%0D").replace("\n", "%0A")
    return "".join("\t".join(field(row[c]) for c in workload.data.columns) + "\n" for row in rows)


def with_requests(m: Measurement, path: Path, num: Numbers) -> Measurement:
    """The cell's figures with those per name the runtime wrote; its ok and failed counts from them."""
    doc = num.loads(path.read_text(errors="replace"), "the workload script's JSON")
    entries = doc.get("by_request") if isinstance(doc, dict) and doc.get("toolbench_wrk_requests") == 1 else None
    if not isinstance(entries, list):
        raise num.error("the workload script's JSON", "not the document toolbench's wrk workload script writes")
    named: list[tuple[str, dict[str, int]]] = []
    for i, entry in enumerate(entries):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not REQUEST_NAME.match(name):
            raise num.error(f"by_request[{i}]", "no request name")
        named.append((name, {k: num.whole(entry.get(k), f"by_request[{i}].{k}") for k in _COUNTS}))
    complete = sum(c["total"] - c["unanswered"] for _, c in named)
    total = m.counts.requests_total
    if (complete != (m.counts.requests_ok or 0) + (m.counts.failures.http or 0)
            or total != sum(c["total"] for _, c in named)):
        why = (f"no figures per request name: the script counted {sum(c['total'] for _, c in named)} requests "
               f"({complete} answered), wrk {total}")
        return dataclasses.replace(m, notes=[*m.notes, why])
    duration = m.timing.duration_s
    figures = [RequestFigures(name, Counts(requests_total=c["total"], requests_ok=c["ok"],
                                           requests_failed=c["total"] - c["ok"],
                                           failures=Failures(http=c["http"], check=c["check"], other=c["unanswered"])),
                              rates=Rates(rps=c["total"] / duration if duration else None))
               for name, c in named]
    ok = sum(c["ok"] for _, c in named)
    counts = dataclasses.replace(
        m.counts, requests_ok=ok, requests_failed=total - ok,
        failures=dataclasses.replace(m.counts.failures, http=sum(c["http"] for _, c in named),
                                     check=sum(c["check"] for _, c in named)))
    return dataclasses.replace(m, counts=counts, by_request=figures,
                               notes=[*m.notes, "ok and failed counts from toolbench's workload script: its checks "
                                                "decide, per response"])
