"""bombardier (Go, `go install github.com/codesenberg/bombardier`): builds its command and
reads the JSON result it prints with `-o json -p r`.

What bombardier is, and what follows for its results:
- `-c` connections, each sending its next request when the last one ends (a closed model),
  for `-n` requests or `-d` a duration; `-r` caps the rate with a shared limiter (a whole
  number of requests a second): a rate cell is a closed model held under a ceiling, and
  latency runs from the actual send (coordinated omission not corrected);
- with `-l` it reports the mean, stddev, max and p50/75/90/95/99 of its requests' times, in
  microseconds, over every request: failed ones (refused, timed out) are timed too;
- it counts responses by status class and failed requests apart ("others"), with their error
  texts. Built by `go install`, it says its version is "unspecified": `toolbench install`
  puts it in .tools/go/bombardier-<version>/, and the folder's name says it;
- HTTP/1.1 in clear or over TLS through fasthttp (its default client), HTTP/2 over TLS by ALPN
  with `--http2`, which swaps fasthttp for Go's net/http (another client, with costs of its own;
  without keep-alive it is `-a`, one connection per request, where fasthttp takes a
  `Connection: close` header). No HTTP/2 in clear: net/http's HTTP/2 is by ALPN only. It cannot
  be told to trust a CA file, only to skip the check (`--insecure`): toolbench's TLS cells give it
  that, and the result says so. Its JSON names the client (`spec.client`), read into a note.

What it prints, and what toolbench reads of it: the JSON result (`-o json`, what toolbench's own
runs ask for) or the text one (its default; toolbench.adapters.bombardier_text), each with or
without its intro and progress bar before it (`-p r` prints the result alone). Output appended
to by run after run holds several results: each is one run (parts), never mixed with another."""
from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolbench.adapters import appended, bombardier_text, workload_single
from toolbench.contract.adapter import (SUPPORTED, Adapter, Detection, Found, Invocation, RawOutput, Support,
                                        found_go_tool, option)
from toolbench.contract.recipe import TESTS, GoModule, Install
from toolbench.errors import ParseError
from toolbench.record import failures
from toolbench.record.numbers import Numbers
from toolbench.record.schema import (Counts, Failures, Fidelity, Latency, Measurement, Omission, Percentiles, Rates,
                                     Timing, Transfer)

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Host

BODY_FILE = "body"
INSECURE = ("bombardier: certificate not verified (it has no option to trust a CA file; toolbench runs it "
            "with --insecure over TLS)")
# Its clients (spec.client of the JSON result), as a note says them.
CLIENTS = {"fasthttp": "fasthttp (its default client)", "net/http.v1": "Go's net/http, HTTP/1.x (--http1)",
           "net/http.v2": "Go's net/http with HTTP/2 (--http2)"}
RESOLUTION_MS = 0.001
_VERSION = re.compile(r"bombardier version (\S+)")
_PCT_NAMES = {"50": "p50_ms", "75": "p75_ms", "90": "p90_ms", "95": "p95_ms", "99": "p99_ms"}
# Where a result begins: a JSON document (its strings are %q-quoted, so `{"spec":` is never inside
# one) or the text result's table header.
_RESULT = re.compile(r'\{"spec":|^Statistics +Avg +Stdev +Max[^\S\n]*$', re.MULTILINE)
# Go's and fasthttp's error texts to failure classes (toolbench.record.failures), first match wins.
FAILURE_TABLE: failures.Table = (
    ("timeout", ("timeout", "deadline exceeded")),
    ("connect", ("connection refused", "connect:", "no route to host", "dial tcp")),
    ("reset", ("connection reset",)),
    ("read", ("eof", "broken pipe", "closed the connection")),
)


class BombardierAdapter(Adapter):
    name = "bombardier"
    workload_features = workload_single.one_request("bombardier sends one URL with one method and body")
    install = Install((GoModule("github.com/codesenberg/bombardier", "1.2.6", "bombardier"),), TESTS)
    option_types = {"timeout_s": int}
    protocols = frozenset({"http1", "https", "h2"})
    protocol_refusals = {"h2c": "bombardier has no HTTP/2 in clear: its --http2 client (Go's net/http) negotiates "
                                "HTTP/2 by ALPN over TLS only, and over http:// speaks HTTP/1.1"}
    # The contract's TLS_TRUST: a TLS cell of a tool that does not check the certificate says it in a note.
    TLS_TRUST = INSECURE

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        return found_go_tool(host, path, "bombardier", ["--version"], _VERSION)

    def supports(self, cell: "Cell") -> Support:
        if cell.rate_rps is not None and (cell.rate_rps != int(cell.rate_rps) or cell.rate_rps < 1):
            return Support(False, f"bombardier's -r takes a whole number of requests a second, not {cell.rate_rps:g}")
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        assert cell.url is not None, "the runner resolves the URL before building"
        argv = [found.path, "-c", str(cell.concurrency), "-l", "-o", "json", "-p", "r",
                "-t", f"{option(cell, 'timeout_s', 30)}s"]
        total = cell.stop.total_requests(cell.concurrency)
        if total is not None:
            argv += ["-n", str(total)]
        else:
            assert cell.stop.duration_s is not None
            argv += ["-d", f"{max(1, math.ceil(cell.stop.duration_s))}s"]
        if cell.rate_rps is not None:
            argv += ["-r", str(int(cell.rate_rps))]
        if cell.tls:
            argv.append("--insecure")  # the only way it takes a certificate it cannot check (INSECURE)
        if cell.protocol == "h2":
            argv.append("--http2")  # Go's net/http instead of fasthttp: HTTP/2 when ALPN offers it
        req = cell.request
        headers = dict(req.headers)
        if not cell.keepalive and cell.protocol == "h2":
            argv.append("-a")  # net/http's own; HTTP/2 has no Connection header
        elif not cell.keepalive and "connection" not in {k.lower() for k in headers}:
            headers["Connection"] = "close"  # its help: "-a ... For fasthttp use -H"
        if req.method != "GET":
            argv += ["-m", req.method]
        for key, value in headers.items():
            argv += ["-H", f"{key}: {value}"]
        files: dict[str, str] = {}
        if req.body is not None:
            files[BODY_FILE] = req.body
            argv += ["-f", BODY_FILE]
            if "content-type" not in {k.lower() for k in headers}:
                argv += ["-H", f"Content-Type: {req.content_type or 'application/octet-stream'}"]
        argv.append(cell.url)
        return Invocation(argv=argv, files=files)

    def recognizes(self, path: Path, text: str) -> bool:
        head = text.lstrip()
        return (head.startswith('{"spec":{"numberOfConnections"') or bombardier_text.INTRO.match(head) is not None
                or bombardier_text.HEADER.match(head) is not None)

    def parts(self, raw: RawOutput) -> list[str]:
        """Output appended to by run after run: one result per run."""
        return appended.names(run_spans(raw.stdout))

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)


def run_spans(text: str) -> list[tuple[int, int]]:
    """Where each run's output lies: from its intro (or its result, printed alone with `-p r`)
    to the next run's."""
    anchors = [m.start() for m in _RESULT.finditer(text)]
    starts = [0]
    for before, here in zip(anchors, anchors[1:]):
        intro = text.rfind("\nBombarding ", before, here)
        starts.append(intro + 1 if intro >= 0 else here)
    return list(zip(starts, starts[1:] + [len(text)]))


def parse(raw: RawOutput) -> Measurement:
    num = Numbers("bombardier", raw.source)
    text = appended.chosen("bombardier", run_spans(raw.stdout), raw)
    if _RESULT.search(text) is None:
        raise bombardier_text.no_result(text, raw.stderr, raw.source)
    if '{"spec":' not in text:
        m = bombardier_text.parse_text(text, num, FAILURE_TABLE)
        return dataclasses.replace(m, notes=[*m.notes, INSECURE]) if (m.url or "").startswith("https://") else m
    return _parse_json(text, raw.stderr, num)


def _parse_json(text: str, stderr: str, num: Numbers) -> Measurement:
    data = num.loads(text[text.find('{"spec":'):], "the JSON result", or_none=True)
    if not isinstance(data, dict) or not isinstance(data.get("result"), dict):
        said = stderr.strip().splitlines()[-1:] or ["nothing on stderr"]
        raise ParseError("bombardier", f"no JSON result in the output; bombardier said: {said[0][:200]}", num.source)
    r = data["result"]
    classes = [num.whole(r.get(f"req{k}xx"), f"req{k}xx") for k in "12345"]
    others = num.whole(r.get("others"), "others")
    errors = _errors(r.get("errors"), num)
    by_class = failures.tally(errors, FAILURE_TABLE)
    if sum(errors.values()) != others:
        by_class = dict.fromkeys(failures.CLASSES, 0) | {"other": others}  # texts that do not add up: unclassified
    ok = classes[0] + classes[1] + classes[2]
    total = ok + classes[3] + classes[4] + others
    duration = num.real(r.get("timeTakenSeconds"), "timeTakenSeconds")
    spec = data.get("spec") if isinstance(data.get("spec"), dict) else {}
    notes = ["figures from bombardier's JSON result; its latency times every request, failed ones too",
             "its rps figures (mean, stddev, max, percentiles) are over its rate samples of a few milliseconds, "
             "not the run's rate: the rate is derived from its counts and time", *_spec_notes(spec)]
    return Measurement(
        tool="bombardier",
        timing=Timing(duration_s=duration),
        counts=Counts(requests_total=total, requests_ok=ok, requests_failed=total - ok,
                      failures=Failures(connect=by_class["connect"], timeout=by_class["timeout"],
                                        read=by_class["read"], reset=by_class["reset"], other=by_class["other"],
                                        http_4xx=classes[3], http_5xx=classes[4])),
        transfer=Transfer(received_bytes=num.whole(r.get("bytesRead"), "bytesRead"),
                          sent_bytes=num.whole(r.get("bytesWritten"), "bytesWritten")),
        rates=Rates(),  # its rps figures are of short samples, not the run's rate: derived from the counts
        latency=_latency(r.get("latency"), total, num),
        coordinated_omission=Omission.NOT_CORRECTED,
        fidelity={name: Fidelity.DERIVED for name in ("counts.requests_total", "counts.requests_ok",
                                                       "counts.requests_failed")},
        notes=notes,
        url=spec.get("url") if isinstance(spec.get("url"), str) else None,
        concurrency=num.whole(spec["numberOfConnections"], "numberOfConnections")
        if "numberOfConnections" in spec else None,
    )


def _spec_notes(spec: dict[str, Any]) -> list[str]:
    """The client it ran (when not its default) and, over TLS, that the certificate was not checked."""
    client, url = spec.get("client"), spec.get("url")
    named = isinstance(client, str) and client in CLIENTS and client != "fasthttp"
    notes = [f"client: {CLIENTS[client]}"] if named else []
    return notes + ([INSECURE] if isinstance(url, str) and url.startswith("https://") else [])


def _errors(value: Any, num: Numbers) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, list):
        raise num.error("errors", "expected a list")
    found: dict[str, int] = {}
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("description"), str):
            raise num.error(f"errors[{i}]", "expected a description and a count")
        found[item["description"]] = found.get(item["description"], 0) + num.whole(item.get("count"), f"errors[{i}]")
    return found


def _latency(value: Any, total: int, num: Numbers) -> Latency:
    if not total or not isinstance(value, dict):
        return Latency()
    pcts_in = value.get("percentiles") if isinstance(value.get("percentiles"), dict) else {}
    pcts = {name: num.real(pcts_in[key], f"latency.percentiles.{key}") / 1000.0
            for key, name in _PCT_NAMES.items() if key in pcts_in}
    return Latency(mean_ms=num.real(value.get("mean"), "latency.mean") / 1000.0,
                   stdev_ms=num.real(value.get("stddev"), "latency.stddev") / 1000.0,
                   max_ms=num.real(value.get("max"), "latency.max") / 1000.0,
                   percentiles=Percentiles(**pcts), resolution_ms=RESOLUTION_MS)


ADAPTER = BombardierAdapter()
