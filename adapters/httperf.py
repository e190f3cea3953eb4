"""httperf: builds its command, reads its text summary.

What httperf is, and what follows for its results:
- an open model: `--rate` starts connections on a schedule whatever the responses do;
  toolbench sends one request per connection, so the connection rate is the request rate.
  A closed cell, or keep-alive (several calls on a connection, which turns the rate into
  one of connections), is unsupported; the cell's concurrency does not apply;
- it times a connection from its actual start, not its scheduled one: a request is not held
  back by a slow response, but when httperf lags its own schedule the lag is not counted
  (coordinated omission not corrected);
- it prints times in ms with one decimal: per connection min, mean, max, median and stddev
  (connect, request and reply: with one call each, the whole request), the mean time to
  the reply's first byte and the mean connect time; no other percentile;
- its errors are counted by cause; a reply is counted by status class only."""
from __future__ import annotations

import math
import re
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

from toolbench.contract.adapter import (SUPPORTED, Adapter, Detection, Found, Invocation, RawOutput, Support,
                                        found_by_version, option)
from toolbench.contract.recipe import TESTS, Apt, Install
from toolbench.errors import ParseError
from toolbench.record import failures
from toolbench.record.numbers import Numbers
from toolbench.record.schema import (Counts, Failures, Fidelity, Latency, Measurement, Omission, Percentiles, Rates,
                                     Timing)

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Host

RESOLUTION_MS = 0.1
_VERSION = re.compile(r"httperf-(\d[\w.]*)")
# [^\S\n] is white space within a line: `\s` runs on across line ends, and from each of thousands
# of blank lines over all those after it (quadratic). No match here spans two lines.
_TOTAL = re.compile(r"^Total: connections (\d+) requests (\d+) replies (\d+) test-duration (\S+) s[^\S\n]*$",
                    re.MULTILINE)
_CONN_TIME = re.compile(r"^Connection time \[ms\]: min (\S+) avg (\S+) max (\S+) median (\S+) stddev (\S+)[^\S\n]*$",
                        re.MULTILINE)
_CONNECT = re.compile(r"^Connection time \[ms\]: connect (\S+)[^\S\n]*$", re.MULTILINE)
_REQ_RATE = re.compile(r"^Request rate: (\S+) req/s", re.MULTILINE)
_REPLY_TIME = re.compile(r"^Reply time \[ms\]: response (\S+) transfer (\S+)[^\S\n]*$", re.MULTILINE)
_STATUS = re.compile(r"^Reply status: 1xx=(\d+) 2xx=(\d+) 3xx=(\d+) 4xx=(\d+) 5xx=(\d+)[^\S\n]*$", re.MULTILINE)
_ERRORS = re.compile(r"^Errors: (.*)$", re.MULTILINE)
# A name begins after a space, never inside a word: tried from each letter of a long word, the
# name would run to its end each time (quadratic).
_ERROR_PAIR = re.compile(r"(?<![\w-])([a-z][\w-]*) (\d+)")
# httperf's error counters to failure classes (toolbench.record.failures), first match wins.
FAILURE_TABLE: failures.Table = (
    ("timeout", ("client-timo", "socket-timo")),
    ("connect", ("connrefused", "addrunavail")),
    ("reset", ("connreset",)),
)


class HttperfAdapter(Adapter):
    name = "httperf"
    install = Install((Apt(("httperf",), program="httperf"),), TESTS)
    option_types = {"timeout_s": int}

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        # -V prints the version and goes on to run a test; the bad count after it ends it first.
        return found_by_version(host, path or "httperf", ["-V", "--num-conns=x"], _VERSION)

    def supports(self, cell: "Cell") -> Support:
        if cell.rate_rps is None:
            return Support(False, "httperf has no closed model: it starts connections at a fixed rate (--rate)")
        if cell.keepalive:
            return Support(False, "httperf's --rate starts connections: toolbench sends one request on each, "
                                  "so keep-alive is not run")
        req = cell.request
        if req.body is not None:
            return Support(False, "httperf sends a body only from a session log file (--wsesslog)")
        if any("\\" in text for pair in req.headers.items() for text in pair):
            return Support(False, "httperf reads escape sequences in --add-header: a backslash would not be sent "
                                  "as given")
        if cell.stop.duration_s is None and cell.stop.requests_per_connection is not None:
            return Support(False, "httperf's connections each send one request here: no count per connection")
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        assert cell.url is not None and cell.rate_rps is not None, "supports() and the runner see to both"
        url = urllib.parse.urlsplit(cell.url)
        if cell.stop.duration_s is not None:
            conns = max(1, math.ceil(cell.rate_rps * cell.stop.duration_s))
        else:
            conns = cell.stop.requests or 1
        uri = url.path or "/"
        if url.query:
            uri += "?" + url.query
        argv = [found.path, "--hog", "--server", url.hostname or "127.0.0.1",
                "--port", str(url.port or (443 if url.scheme == "https" else 80)), "--uri", uri,
                "--rate", f"{cell.rate_rps:g}", "--num-conns", str(conns), "--num-calls", "1",
                "--timeout", str(option(cell, "timeout_s", 30))]
        if url.scheme == "https":
            argv.append("--ssl")
        if cell.request.method != "GET":
            argv += ["--method", cell.request.method]
        for key, value in cell.request.headers.items():
            argv += ["--add-header", f"{key}: {value}\\n"]  # httperf turns the two characters \n into a newline
        return Invocation(argv=argv)

    def recognizes(self, path: Path, text: str) -> bool:
        return text.startswith("httperf --")

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)


def parse(raw: RawOutput) -> Measurement:
    num = Numbers("httperf", raw.source)
    total = _TOTAL.search(raw.stdout)
    if total is None:
        said = [line for line in raw.stderr.strip().splitlines() if "warning" not in line][-1:] or ["nothing"]
        raise ParseError("httperf", f"no summary in the output; httperf said: {said[0][:200]}", raw.source)
    conns, _, replies = (num.integer(v, name) for v, name in zip(total.groups(), ("connections", "requests", "replies")))
    status = [0] * 5
    if m := _STATUS.search(raw.stdout):
        status = [num.integer(v, f"reply status {k}xx") for v, k in zip(m.groups(), "12345")]
    errors = {name: num.integer(n, f"errors {name}") for line in _ERRORS.findall(raw.stdout)
              for name, n in _ERROR_PAIR.findall(line)}
    errors.pop("total", None)
    notes = ["figures from httperf's summary (ms with one decimal); one request per connection, so the "
             "connection times are the requests' times, connect included"]
    ok = status[1] + status[2]
    if sum(status) > replies or ok > conns:
        raise num.error("reply status", f"{sum(status)} replies by status of {replies}, {conns} connections")
    by_class = failures.tally(errors, FAILURE_TABLE)
    unexplained = conns - ok - status[3] - status[4] - sum(errors.values()) - status[0]
    if unexplained:
        notes.append(f"httperf's errors and statuses explain {conns - unexplained} of its {conns} connections")
    return Measurement(
        tool="httperf",
        timing=Timing(duration_s=num.decimal(total.group(4), "test-duration")),
        counts=Counts(requests_total=conns, requests_ok=ok, requests_failed=conns - ok,
                      failures=Failures(connect=by_class["connect"], timeout=by_class["timeout"],
                                        reset=by_class["reset"], other=by_class["other"],
                                        http_4xx=status[3], http_5xx=status[4])),
        rates=Rates(rps=num.decimal(m.group(1), "request rate") if (m := _REQ_RATE.search(raw.stdout)) else None),
        latency=_latency(raw.stdout, replies, num, notes),
        coordinated_omission=Omission.NOT_CORRECTED,
        fidelity={name: Fidelity.DERIVED for name in ("counts.requests_ok", "counts.requests_failed")},
        notes=notes,
    )


def _latency(text: str, replies: int, num: Numbers, notes: list[str]) -> Latency:
    """No reply: httperf prints zeros, which time nothing. Its median is not a time it measured
    but the middle of the 1 ms histogram bin holding it (stat/basic.c): with sub-millisecond
    times it can lie above the maximum, and is then left out, said in a note."""
    row = _CONN_TIME.search(text)
    if not replies or row is None:
        return Latency()
    low, mean, high, median, sd = (num.decimal(v, f"connection time {what}")
                                   for v, what in zip(row.groups(), ("min", "avg", "max", "median", "stddev")))
    if not low <= median <= high:
        notes.append(f"httperf's median, {median:g} ms, is the middle of its 1 ms histogram bin and lies outside "
                     f"its min..max ({low:g}..{high:g} ms): left out")
        median = None
    connect = _CONNECT.search(text)
    reply = _REPLY_TIME.search(text)
    return Latency(min_ms=low, mean_ms=mean, max_ms=high, stdev_ms=sd, percentiles=Percentiles(p50_ms=median),
                   connect_mean_ms=num.decimal(connect.group(1), "connect") if connect else None,
                   ttfb_mean_ms=num.decimal(reply.group(1), "reply time response") if reply else None,
                   resolution_ms=RESOLUTION_MS)


ADAPTER = HttperfAdapter()
