"""A workload (toolbench.scenario.workload) for httperf: its session file (`--wsesslog=N,X,FILE`),
one session per data row (or one without data), each the requests in order, one line a request.

What httperf does with a session file (httperf 0.9.0, seen against a real server):
- sessions start at `--rate` a second whatever the responses do (the open model), N in all, taken
  from the file in turn (round-robin); a session sends its lines in order, each after the last
  one's reply, on a persistent connection, and ends after its last: a user is a session, and it
  runs the sequence once. The session rate is the cell's request rate over the requests of a
  session, so that the request rate is the asked one on average;
- X, the think time, is waited between a session's requests (between bursts: each line of the
  file is a burst of its own), not before its first: a constant think time is X, a uniform one
  its mean (httperf has no random think time);
- `method=M contents="..."` per line: the body between double quotes, with `\\"`, `\\\\` and `\\n`
  read as `"`, `\\` and a line break (any other byte as it is: body_text); the URI is the line's
  first word, so a path with white space cannot be sent;
- one set of headers for every request (`--add-header`, whose `\\n` ends a header), so the
  requests' headers must be the same and hold no variable; it reads nothing of a response but
  its status (no extract, no checks), counts all requests together (no figures per name), and
  has one rate (no stages);
- data rows become literal sessions (adapters/workload_requests.py): each session takes the next
  row, and after the last the rows start again (recycle), or no session is started beyond them
  (stop): per user and per iteration alike, as a session is a user's one iteration."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from toolbench.adapters import workload_requests
from toolbench.contract.adapter import Support
from toolbench.contract.workload import approximated, honoured, unsupported
from toolbench.errors import AdapterError

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell

SESSIONS_FILE = "sessions.txt"
MAX_BODY = 8192  # bytes of a body on one line of the session file (9000 were seen read whole)
MAX_LINES = 100_000  # requests written into the session file

FEATURES = {
    "sequence": honoured(),  # a session's lines, in order, each after the last's reply
    "think": approximated("httperf waits the session file's think time (--wsesslog's X) between a session's "
                          "requests: a constant one as given, a uniform one as its mean (no random think time)"),
    "data": honoured(),  # a session per row, round-robin (recycle) or no more sessions than rows (stop)
    "mix": unsupported("httperf's sessions send their requests in order, taken from the session file in turn: "
                       "no request is picked by weight"),
    "extract": unsupported("httperf reads nothing from a response to send later"),
    "checks": unsupported("httperf judges a response by its status only"),
    "stages": unsupported("httperf starts sessions at one constant --rate"),
    "per_request": unsupported("httperf's summary counts every request of its sessions together: no figures "
                               "per request"),
}


def supports(cell: "Cell") -> Support | None:
    """Why httperf cannot run this cell's workload; None: it can."""
    workload = cell.workload
    assert workload is not None
    if cell.rate_rps is None:
        return Support(False, "httperf has no closed model: it starts sessions at a fixed rate (--rate)")
    if cell.stop.duration_s is None:
        return Support(False, "an httperf workload runs for a duration: its sessions are counted from the rate")
    if not cell.keepalive:
        return Support(False, "an httperf session sends its requests on a persistent connection: keep-alive "
                              "cannot be turned off")
    headers = workload_requests.common_headers(workload)
    if headers is None:
        return Support(False, "httperf sends one set of headers (--add-header) with every request: the requests' "
                              "headers differ")
    for key, value in headers.items():
        if "\\" in key + value or "${" in value:
            return Support(False, "httperf's --add-header reads escape sequences and fills no variable: a header "
                                  "with a backslash or a ${variable} would not be sent as given")
    for req in workload.requests:
        if req.body is not None and len(req.body.encode()) > MAX_BODY:
            return Support(False, f"a body of more than {MAX_BODY} bytes on one line of httperf's session file "
                                  f"({req.name})")
        if req.body is not None and "\0" in req.body:
            return Support(False, f"httperf's session file is read as C strings: {req.name}'s body has a NUL byte")
        if any(ch.isspace() for ch in req.path):
            return Support(False, f"httperf reads a session line's URI up to white space: {req.name}'s path has some")
    return None


def body_text(body: str) -> str:
    """A body as httperf's session file reads it back: between double quotes, `\\`, `"` and a line
    break escaped (httperf reads `\\n` as the line break; every other byte is taken as it is)."""
    return '"' + body.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def session_file(cell: "Cell") -> tuple[str, int]:
    """The session file's text, and its sessions (one per data row, or one)."""
    workload = cell.workload
    assert workload is not None and cell.base_url is not None
    refused = supports(cell)
    if refused is not None:
        raise AdapterError(f"httperf: {refused.reason}")
    per_session = len(workload.requests)
    sessions = []
    literals = workload_requests.literals(workload, cell.base_url, MAX_LINES)
    for at in range(0, len(literals), per_session):
        lines = []
        for lit in literals[at:at + per_session]:
            uri = lit.url[len(cell.base_url.rstrip("/")):] or "/"
            if any(ch.isspace() for ch in uri):
                raise AdapterError(f"httperf: a URI with white space would not be one word of its session file: "
                                   f"{uri[:80]!r}")
            line = uri + ("" if lit.method == "GET" else f" method={lit.method}")
            if lit.body is not None:
                line += f" contents={body_text(lit.body)}"
            lines.append(line)
        sessions.append("\n".join(lines))
    head = f"# Written by toolbench: {len(sessions)} session(s) of {per_session} request(s), one line a request.\n"
    return head + "\n\n".join(sessions) + "\n", len(sessions)


def args(cell: "Cell", sessions_in_file: int) -> list[str]:
    """httperf's arguments for the workload: the session rate and count, the think time, the headers."""
    workload = cell.workload
    assert workload is not None and cell.rate_rps is not None and cell.stop.duration_s is not None
    rate = cell.rate_rps / len(workload.requests)
    count = max(1, math.ceil(rate * cell.stop.duration_s))
    if workload.data is not None and workload.data.at_end == "stop":
        count = min(count, sessions_in_file)
    think = (workload.think.min_s + workload.think.max_s) / 2 if workload.think is not None else 0.0
    out = ["--rate", f"{rate:g}", f"--wsesslog={count},{think:g},{SESSIONS_FILE}"]
    for key, value in (workload_requests.common_headers(workload) or {}).items():
        out += ["--add-header", f"{key}: {value}\\n"]  # httperf turns the two characters \n into a newline
    return out
