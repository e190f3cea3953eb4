"""A workload (toolbench.scenario.workload) for siege: its URL file (`-f`), one line a request in
siege's form (`URL`, `URL METHOD`, `URL METHOD <file` with the body in a file of its own).

What siege does with a URL file (seen against nginx's access log, siege 4.0.7):
- without `-i`, each user walks the file in order, looping, but starts at a line of its own
  (siege spreads the users over the file), not at the first: a sequence, shifted per user;
- with `-i` (internet mode) each request is a line drawn at random: a mix, the weights as lines
  repeated in proportion;
- `-d D` waits a random time between 0 and D before each request, and only without `-b`: think
  time with its mean kept (D twice the mean), not its spread;
- one set of headers (`-H`) and one Content-Type (`--content-type`) for every line; it reads no
  response (no extract, no checks), has no data rows of its own (its URL file's variables are
  fixed), no stages, and counts all requests together: no figures per name."""
from __future__ import annotations

from typing import TYPE_CHECKING

from toolbench.adapters import workload_requests
from toolbench.contract.adapter import Support
from toolbench.contract.workload import approximated, honoured, unsupported
from toolbench.errors import AdapterError

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell

URLS_FILE = "urls.txt"
MAX_LINES = workload_requests.MAX_CYCLE

FEATURES = {
    "mix": honoured(),
    "sequence": approximated("each user walks the URL file in order, looping, but siege starts each user at a line "
                             "of its own, spread over the file, not at the first"),
    "think": approximated("siege's -d waits a random 0..D s before each request, D twice the think time's mean: "
                          "the mean is kept, not the bounds"),
    "data": unsupported("siege's URL file has fixed variables, not rows of a data file per user"),
    "extract": unsupported("siege reads nothing from a response to send later"),
    "checks": unsupported("siege judges a response by its status only"),
    "stages": unsupported("siege starts all its users at once and keeps them to the end"),
    "per_request": unsupported("siege counts every request of the URL file together: no figures per URL"),
}


def supports(cell: "Cell") -> Support | None:
    """Why siege cannot run this cell's workload; None: it can."""
    workload = cell.workload
    assert workload is not None
    if workload_requests.common_headers(workload) is None:
        return Support(False, "siege sends one set of headers (-H) with every URL: the requests' headers differ")
    for req in workload.requests:
        if req.body is not None and req.method not in ("POST", "PUT", "PATCH"):
            return Support(False, f"siege sends a body only with POST, PUT or PATCH, not {req.method} ({req.name})")
        if req.body is not None and (req.body != req.body.strip(" \t\n\r\f\v") or "\0" in req.body):
            return Support(False, f"siege trims a body's leading and trailing whitespace and stops at a NUL byte: "
                                  f"{req.name}'s would not be sent as given")
        if "$" in req.path or req.variables():
            return Support(False, "siege expands $(NAME) in its URL file, and fills no ${variable}: "
                                  f"{req.name}'s path or values would not be sent as given")
    if workload.order == "mix" and workload_requests.cycle(workload.requests, MAX_LINES) is None:
        return Support(False, f"the mix's weights are not in proportion within {MAX_LINES} lines of siege's URL file")
    return None


def files(cell: "Cell") -> dict[str, str]:
    """The URL file and each body's file (`body-<name>`)."""
    workload = cell.workload
    assert workload is not None and cell.base_url is not None
    refused = supports(cell)
    if refused is not None:
        raise AdapterError(f"siege: {refused.reason}")
    out: dict[str, str] = {}
    lines = []
    for lit in workload_requests.literals(workload, cell.base_url, MAX_LINES):
        if any(ch.isspace() for ch in lit.url):
            raise AdapterError(f"siege: a URL with white space would not be one URL in its file: {lit.url[:80]!r}")
        if lit.body is not None:
            out[f"body-{lit.name}"] = lit.body
            lines.append(f"{lit.url} {lit.method} <body-{lit.name}")
        else:
            lines.append(lit.url if lit.method == "GET" else f"{lit.url} {lit.method}")
    out[URLS_FILE] = "\n".join(lines) + "\n"
    return out


def args(cell: "Cell") -> list[str]:
    """siege's arguments for the workload: the URL file, random lines for a mix, the headers, and
    the delay for think time (which siege takes only outside benchmark mode)."""
    workload = cell.workload
    assert workload is not None
    headers = workload_requests.common_headers(workload) or {}
    out = ["-f", URLS_FILE] + (["-i"] if workload.order == "mix" else [])
    content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
    if content_type is not None:
        out += ["--content-type", content_type]
    for key, value in headers.items():
        if key.lower() != "content-type":
            out += ["-H", f"{key}: {value}"]
    if workload.think is not None:
        out += ["-d", f"{workload.think.min_s + workload.think.max_s:g}"]
    return out
