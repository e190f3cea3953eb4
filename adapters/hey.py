"""hey: builds its command, reads its text summary, or its `-o csv` per-request rows.

What hey is, and what follows for its results:
- `-c` workers, each sending its next request when the last one ends (a closed model);
  `-q` caps each worker's rate with a ticker that drops the ticks a busy worker misses, so a
  rate cell is a closed model held under a ceiling: latency runs from the actual send
  (coordinated omission not corrected) and the rate reached may fall short;
- its times are seconds with four decimals (0.1 ms); it has no version flag;
- the text summary counts responses by status and failed requests by error message;
  `-o csv` prints one row per response instead of the summary, and a request that got no
  response has no row: from the rows alone, how many failed is unknown. toolbench runs the
  summary unless `tools.hey.per_request` asks for the rows;
- HTTP/1.1 in clear or over TLS (hey turns Go's HTTP/2 off unless `-h2`), and HTTP/2 over TLS
  with `-h2`, by ALPN: an h2 cell. Its `-h2` has no prior knowledge (over http:// Go speaks
  HTTP/1.1), so no h2c. Over HTTP/2 Go's transport puts every worker's requests on one connection
  (seen: one TLS handshake for -c 4), and `-disable-keepalive` does not make it one connection
  per request (seen: 23 for 200): an h2 cell without keep-alive is not run. Nothing in hey's
  output says what was spoken. It never checks the server's certificate (its transport sets
  InsecureSkipVerify) and has no option to trust a CA (`HeyAdapter.TLS_TRUST`)."""
from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from toolbench.adapters import workload_single
from toolbench.contract.adapter import (SUPPORTED, Adapter, Detection, Found, Invocation, Missing, RawOutput, Support,
                                        missing_program, option)
from toolbench.contract.recipe import TESTS, Apt, Install
from toolbench.errors import HostError, ParseError
from toolbench.record import failures, histogram
from toolbench.record.numbers import Numbers
from toolbench.record.schema import (Counts, Failures, Fidelity, Latency, Measurement, Omission, Percentiles, Rates,
                                     Timing, Transfer)

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Host

BODY_FILE = "body"
RESOLUTION_MS = 0.1  # four decimals of a second
METHODS = ("GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS")
CSV_HEADER = "response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset"
_USAGE = re.compile(r"^Usage: hey \[options\.\.\.\] <url>", re.MULTILINE)
# [^\S\n] is white space within a line: `\s` runs on across line ends, and from each of thousands
# of blank lines over all those after it (quadratic). No match here spans two lines.
_FIELD = re.compile(r"^[^\S\n]+(Total|Slowest|Fastest|Average|Requests/sec|Total data):[^\S\n]+(\S+)"
                    r"(?: secs| bytes)?[^\S\n]*$", re.MULTILINE)
_PCT = re.compile(r"^[^\S\n]+(\d+)% in (\S+) secs[^\S\n]*$", re.MULTILINE)
_STATUS = re.compile(r"^[^\S\n]+\[(\d+)\][^\S\n]+(\d+) responses[^\S\n]*$", re.MULTILINE)
_ERROR = re.compile(r"^\s+\[(\d+)\]\s+(\S.*)$")
# Details (average, fastest, slowest): the averages of a request's phases, in seconds.
_DETAIL = re.compile(r"^[^\S\n]+(DNS\+dialup|DNS-lookup|req write|resp wait|resp read):[^\S\n]+(\S+) secs,",
                     re.MULTILINE)
_SIZE_PER_REQUEST = re.compile(r"^[^\S\n]+Size/request:", re.MULTILINE)
_HISTOGRAM_HEAD = re.compile(r"^Response time histogram:[^\S\n]*\n[^\S\n]+\S", re.MULTILINE)
_PCT_NAMES = {50: "p50_ms", 75: "p75_ms", 90: "p90_ms", 95: "p95_ms", 99: "p99_ms"}
# Go's error texts to failure classes (toolbench.record.failures), first match wins.
FAILURE_TABLE: failures.Table = (
    ("timeout", ("timeout", "deadline exceeded")),
    ("connect", ("connection refused", "connect:", "no route to host", "dial tcp")),
    ("reset", ("connection reset",)),
    ("read", ("eof", "broken pipe", "malformed http")),
)


class HeyAdapter(Adapter):
    name = "hey"
    workload_features = workload_single.one_request(
        "hey sends one URL with one method and body",
        think="hey's -q paces each worker at a fixed rate; it has no pause after a response")
    install = Install((Apt(("hey",), program="hey"),), TESTS)
    # per_request: `-o csv` rows (histogram, per-second series) instead of the summary's counts.
    option_types = {"per_request": bool, "timeout_s": int}
    protocols = frozenset({"http1", "https", "h2"})
    protocol_refusals = {"h2c": "hey's -h2 negotiates HTTP/2 over TLS only (ALPN): it has no HTTP/2 in clear "
                                "(prior knowledge), and over http:// speaks HTTP/1.1"}
    # The contract's TLS_TRUST: a TLS cell of a tool that does not check the certificate says it in a note.
    TLS_TRUST = ("hey never checks the server's certificate (its transport sets InsecureSkipVerify) and has no "
                 "option to trust a CA file")

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        """hey has no version flag; run bare, it prints its usage and exits 1. Debian's package
        says the version of its /usr/bin/hey; any other hey is "unknown"."""
        found = host.which(path or "hey")
        if found is None:
            return missing_program(host, path or "hey")
        try:
            captured = host.capture([found])
            if not _USAGE.search(captured.stdout + captured.stderr):
                return Missing(f"{host.label}: {found} run bare did not print hey's usage")
            package = host.capture(["dpkg-query", "-W", "-f=${Version}", "hey"]) if found == "/usr/bin/hey" else None
        except HostError as exc:
            return Missing(str(exc))
        version = re.match(r"(\d+\.\d+[\w.]*)", package.stdout.strip()) if package and package.exit_code == 0 else None
        return Found(found, version.group(1) if version else "unknown")

    def supports(self, cell: "Cell") -> Support:
        req = cell.request
        if req.method not in METHODS:
            return Support(False, f"hey sends only {', '.join(METHODS)}, not {req.method}")
        if cell.protocol == "h2" and not cell.keepalive:
            return Support(False, "hey -h2 -disable-keepalive still sends several requests on each HTTP/2 connection "
                                  "(Go's transport): HTTP/2 has no connection per request")
        if cell.stop.duration_s is None and (cell.stop.total_requests(cell.concurrency) or 0) < cell.concurrency:
            return Support(False, "hey sends at least one request per worker: the count is below the concurrency")
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        assert cell.url is not None, "the runner resolves the URL before building"
        argv = [found.path, "-c", str(cell.concurrency), "-t", str(option(cell, "timeout_s", 20))]
        total = cell.stop.total_requests(cell.concurrency)
        if total is not None:
            argv += ["-n", str(total)]
        else:
            assert cell.stop.duration_s is not None
            argv += ["-z", f"{max(1, math.ceil(cell.stop.duration_s))}s"]
        if cell.rate_rps is not None:
            argv += ["-q", f"{cell.rate_rps / cell.concurrency:g}"]  # hey's -q is per worker
        if not cell.keepalive:
            argv.append("-disable-keepalive")
        if cell.protocol == "h2":
            argv.append("-h2")  # without it hey turns HTTP/2 off, and speaks HTTP/1.1 over TLS
        if option(cell, "per_request", False):
            argv += ["-o", "csv"]
        req = cell.request
        files: dict[str, str] = {}
        if req.method != "GET":
            argv += ["-m", req.method]
        for key, value in req.headers.items():
            argv += ["-H", f"{key}: {value}"]
        if req.body is not None:
            files[BODY_FILE] = req.body
            argv += ["-D", BODY_FILE, "-T", req.content_type or "application/octet-stream"]
        argv.append(cell.url)
        return Invocation(argv=argv, files=files)

    def recognizes(self, path: Path, text: str) -> bool:
        return text.startswith("response-time,DNS+dialup,") or "\nSummary:\n  Total:\t" in text[:200]

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)


def parse(raw: RawOutput) -> Measurement:
    num = Numbers("hey", raw.source)
    if raw.stdout.lstrip().startswith(CSV_HEADER):
        return _from_rows(raw.stdout.lstrip(), num)
    if "Summary:" not in raw.stdout or "Total:" not in raw.stdout:
        said = raw.stderr.strip().splitlines()[-1:] or ["nothing on stderr"]
        raise ParseError("hey", f"no summary and no CSV rows in the output; hey said: {said[0][:200]}", raw.source)
    return _from_summary(raw.stdout, num)


def _from_summary(text: str, num: Numbers) -> Measurement:
    fields = {m.group(1): m.group(2) for m in _FIELD.finditer(text)}
    codes = {num.integer(c, "status code"): num.integer(n, f"[{c}] responses") for c, n in _STATUS.findall(text)}
    errors = _errors(text, num)
    answered = sum(codes.values())
    by_class = failures.tally(errors, FAILURE_TABLE)
    http_4xx = sum(n for c, n in codes.items() if 400 <= c < 500)
    http_5xx = sum(n for c, n in codes.items() if c >= 500)
    ok = answered - http_4xx - http_5xx
    unanswered = sum(errors.values())
    latency = Latency()
    notes = ["figures from hey's summary: times in seconds with four decimals; its percentiles are its own"]
    if answered:
        latency = _summary_latency(text, fields, num, notes)
    elif "NaN" in text:
        notes.append("hey printed NaN and zeros for its times: no request got a response, so no time was measured")
    fidelity = {name: Fidelity.DERIVED for name in ("counts.requests_total", "counts.requests_ok",
                                                     "counts.requests_failed")}
    return Measurement(
        tool="hey",
        timing=Timing(duration_s=_seconds(fields, "Total", num)),
        counts=Counts(requests_total=answered + unanswered, requests_ok=ok,
                      requests_failed=http_4xx + http_5xx + unanswered, status_codes=codes,
                      failures=Failures(connect=by_class["connect"], timeout=by_class["timeout"],
                                        read=by_class["read"], reset=by_class["reset"], other=by_class["other"],
                                        http_4xx=http_4xx, http_5xx=http_5xx)),
        rates=Rates(rps=_seconds(fields, "Requests/sec", num)),
        transfer=Transfer(received_bytes=num.integer(fields["Total data"], "Total data")
                          if "Total data" in fields else None),
        latency=latency,
        coordinated_omission=Omission.NOT_CORRECTED,
        fidelity=fidelity,
        notes=notes,
    )


def _summary_latency(text: str, fields: dict[str, str], num: Numbers, notes: list[str]) -> Latency:
    """The summary's times: its extremes and mean, its percentiles that have a field here, and
    the means of two phases (connect: DNS+dialup; time to first byte: resp wait)."""
    rows = [(num.integer(p, "percent"), v) for p, v in _PCT.findall(text)]
    pcts = {_PCT_NAMES[p]: num.decimal(v, f"{p}% latency") * 1000.0 for p, v in rows if p in _PCT_NAMES}
    details = {name: num.decimal(v, f"{name} average") * 1000.0 for name, v in _DETAIL.findall(text)}
    unread = [f"the {', '.join(f'{p}%' for p, _ in rows if p not in _PCT_NAMES)} latency rows"] \
        if any(p not in _PCT_NAMES for p, _ in rows) else []
    if _HISTOGRAM_HEAD.search(text):
        unread.append("the response time histogram (its buckets: the percentiles are read instead)")
    if _SIZE_PER_REQUEST.search(text):
        unread.append("Size/request (Total data over the responses)")
    unread += [f"the {name} average" for name in ("DNS-lookup", "req write", "resp read") if name in details]
    if details:
        unread.append("the fastest and slowest of each phase in Details")
    if unread:
        notes.append(f"not read (no field here): {'; '.join(unread)}")
    return Latency(min_ms=_ms(fields, "Fastest", num), mean_ms=_ms(fields, "Average", num),
                   max_ms=_ms(fields, "Slowest", num), percentiles=Percentiles(**pcts),
                   connect_mean_ms=details.get("DNS+dialup"), ttfb_mean_ms=details.get("resp wait"),
                   resolution_ms=RESOLUTION_MS)


def _errors(text: str, num: Numbers) -> dict[str, int]:
    _, _, tail = text.partition("Error distribution:")
    found: dict[str, int] = {}
    for line in tail.splitlines():
        if m := _ERROR.match(line):
            message = m.group(2).strip()
            found[message] = found.get(message, 0) + num.integer(m.group(1), "error count")
    return found


def _seconds(fields: dict[str, str], key: str, num: Numbers) -> float | None:
    return num.decimal(fields[key], key) if key in fields else None


def _ms(fields: dict[str, str], key: str, num: Numbers) -> float | None:
    value = _seconds(fields, key, num)
    return value * 1000.0 if value is not None else None


def _from_rows(text: str, num: Numbers) -> Measurement:
    """One row per response: its time and phases (s), status and start offset (s)."""
    try:
        rows = list(csv.reader(io.StringIO(text)))[1:]
    except csv.Error as exc:  # a field over the csv module's limit (128 KiB), a NUL byte: no row of hey's
        raise num.error("CSV", str(exc)) from None
    times = np.zeros(len(rows), np.int64)  # tenths of a millisecond
    starts = np.zeros(len(rows), np.int64)
    failed = np.zeros(len(rows), bool)
    codes: dict[int, int] = {}
    end_s = 0.0
    connect_s = wait_s = 0.0  # sums of the DNS+dialup and Response-delay phases
    for i, row in enumerate(rows):
        if len(row) != 8:
            raise num.error(f"CSV row {i + 2}", f"expected 8 fields, got {len(row)}")
        took, code, offset = (num.decimal(row[0], f"row {i + 2} response-time"),
                              num.integer(row[6], f"row {i + 2} status-code"),
                              num.decimal(row[7], f"row {i + 2} offset"))
        connect_s += num.decimal(row[1], f"row {i + 2} DNS+dialup")
        wait_s += num.decimal(row[4], f"row {i + 2} Response-delay")
        if not 100 <= code <= 999:
            raise num.error(f"row {i + 2} status-code", f"{code} is not an HTTP status")
        times[i], starts[i], failed[i] = round(took * 10_000), math.floor(offset), code >= 400
        codes[code] = codes.get(code, 0) + 1
        end_s = max(end_s, offset + took)
    per = histogram.PerRequest("hey", None, unit_ms=RESOLUTION_MS, seconds_field="offset")
    per.add(starts, times, failed)
    hist = histogram.new()
    for value, count in zip(*np.unique(times, return_counts=True)):
        histogram.record_ms(hist, int(value) * RESOLUTION_MS, int(count))
    per.add_histogram(hist)
    http_4xx = sum(n for c, n in codes.items() if 400 <= c < 500)
    http_5xx = sum(n for c, n in codes.items() if c >= 500)
    notes = ["figures from hey's -o csv rows, one per response (times to 0.1 ms): a request that got no "
             "response has no row, so how many failed without one is unknown",
             "not read (no field here): the DNS, Request-write and Response-read columns"]
    return Measurement(
        tool="hey",
        timing=Timing(duration_s=end_s if rows else None),
        counts=Counts(requests_ok=len(rows) - http_4xx - http_5xx, status_codes=codes,
                      failures=Failures(http_4xx=http_4xx, http_5xx=http_5xx)),
        latency=Latency(connect_mean_ms=connect_s * 1000.0 / len(rows), ttfb_mean_ms=wait_s * 1000.0 / len(rows))
        if rows else Latency(),
        histogram=per.encoded(),
        histogram_resolution_ms=RESOLUTION_MS,
        series=per.series(first=0) if rows else [],
        coordinated_omission=Omission.NOT_CORRECTED,
        fidelity={"timing.duration_s": Fidelity.DERIVED, "counts.requests_ok": Fidelity.DERIVED,
                  "histogram": Fidelity.DERIVED, "series": Fidelity.DERIVED,
                  "latency.connect_mean_ms": Fidelity.DERIVED, "latency.ttfb_mean_ms": Fidelity.DERIVED},
        notes=notes,
    )


ADAPTER = HeyAdapter()
