"""h2load (nghttp2): builds its command, reads its text summary.

What h2load is, and what follows for its results:
- `-c` clients, each sending its next request when the last one ends (a closed model),
  for `-n` requests in all or `-D` seconds; its `-r` paces new clients, not requests, so a
  rate cell is unsupported;
- every protocol: HTTP/1.1 with `--h1` in clear (http1) or over TLS (https), HTTP/2 over TLS by
  ALPN with h2 alone offered (`--npn-list h2`: a server without it fails the cell, never a quiet
  fall back to HTTP/1.1), HTTP/2 in clear with prior knowledge (h2c, an http:// URL without
  `--h1`; `tools.h2load.h2: true` asks the same of an http1 cell, as scenarios did before the
  protocol axis). Over HTTP/2 a client sends all its requests on its one connection: a cell
  without keep-alive is not run. Over TLS it prints the TLS version, cipher, server temp key and
  application protocol of its first connection, read into a note. It never checks the server's
  certificate and has no option to trust a CA (`H2loadAdapter.TLS_TRUST`);
- it prints the min, max, mean and sd of the requests' times (whole µs below 1 ms, two
  decimals of ms or s above), no percentile; times run from the actual send (coordinated
  omission not corrected);
- its counts: "succeeded" are 2xx and 3xx responses, "failed" the rest of the total,
  "errored" those that got no response, "timeout" those of them that timed out;
- with `--log-file` it writes a row per request (toolbench.adapters.h2load_log): read beside
  the summary, its counts win and the rows give the percentiles; read alone, the rows give what
  they can. Output appended to by run after run holds several summaries: each is one run."""
from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING

from toolbench.adapters import appended, h2load_log, units, workload_single
from toolbench.contract.adapter import (SUPPORTED, Adapter, Detection, Found, Invocation, RawOutput, Support,
                                        found_by_version, option)
from toolbench.contract.recipe import TESTS, Apt, Install
from toolbench.errors import ParseError
from toolbench.record import failures
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Counts, Failures, Fidelity, Latency, Measurement, Omission, Rates, Timing, Transfer
from toolbench.record.timings import SecondTally

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Host

BODY_FILE = "body"
_VERSION = re.compile(r"h2load nghttp2/(\S+)")
# [^\S\n] is white space within a line: `\s` runs on across line ends, and from each of thousands
# of blank lines over all those after it (quadratic). No match here spans two lines.
_FINISHED = re.compile(r"^finished in (\S+), (\S+) req/s, (\S+)/s[^\S\n]*$", re.MULTILINE)
_REQUESTS = re.compile(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                       r"(\d+) errored, (\d+) timeout[^\S\n]*$", re.MULTILINE)
_CODES = re.compile(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx[^\S\n]*$", re.MULTILINE)
_TRAFFIC = re.compile(r"^traffic: \S+ \((\d+)\) total,", re.MULTILINE)
_TIMES = re.compile(r"^time for (request|connect):[^\S\n]+(\S+)[^\S\n]+(\S+)[^\S\n]+(\S+)[^\S\n]+(\S+)"
                    r"[^\S\n]+\S+%[^\S\n]*$", re.MULTILINE)
_CLIENTS = re.compile(r"^spawning thread #\d+: (\d+) total client\(s\)", re.MULTILINE)
_PROTOCOL = re.compile(r"^Application protocol: (\S{1,40})", re.MULTILINE)
# What h2load prints of its first TLS connection (Client::report_tls_info), each once.
_TLS_LINES = {name: re.compile(rf"^{name}: ([^\n]{{1,80}}?)[^\S\n]*$", re.MULTILINE)
              for name in ("TLS Protocol", "Cipher", "Server Temp Key")}
# What it prints when ALPN settled nothing (Client::connection_made): the protocols it offered follow
# "Supported protocols were:", one a line.
_NO_ALPN = re.compile(r"^No protocol negotiated\. Fallback behaviour may be activated[^\S\n]*$", re.MULTILINE)
_NONE_SUPPORTED = re.compile(r"^No supported protocol was negotiated\. Supported protocols were:[^\S\n]*\n"
                             r"((?:[^\S\n]*[\w./-]{1,40}[^\S\n]*\n){0,10})", re.MULTILINE)
_WARM_UP = re.compile(r"^spawning thread #0: .*Timing-based test with (\S+) of warm-up time", re.MULTILINE)
_START = re.compile(r"^starting benchmark\.\.\.[^\S\n]*$", re.MULTILINE)
# h2load's own counters to failure classes (toolbench.record.failures): it names no cause beyond these.
FAILURE_TABLE: failures.Table = (("timeout", ("timeout",)),)


class H2loadAdapter(Adapter):
    name = "h2load"
    workload_features = workload_single.one_request(
        "h2load sends one method and body (-d) to all its URIs",
        mix="toolbench does not translate a mix for h2load: it takes several URIs, but each client uses them in "
            "turn, without weights",
        sequence="toolbench does not translate a sequence for h2load: its URIs are used in turn per client, one "
                 "method and body for all")
    install = Install((Apt(("nghttp2-client",), program="h2load"),), TESTS)
    # h2: HTTP/2 (cleartext, prior knowledge) instead of --h1; threads: -t; timeout_s: -N, idle time per connection.
    option_types = {"h2": bool, "threads": int, "timeout_s": int}
    protocols = frozenset({"http1", "https", "h2", "h2c"})
    # The contract's TLS_TRUST: a TLS cell of a tool that does not check the certificate says it in a note.
    TLS_TRUST = "h2load never checks the server's certificate: it has no option to trust a CA file"

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        return found_by_version(host, path or "h2load", ["--version"], _VERSION)

    def supports(self, cell: "Cell") -> Support:
        if cell.rate_rps is not None:
            return Support(False, "h2load has no fixed request rate: its -r paces new clients, not requests")
        req = cell.request
        if req.method not in ("GET", "POST") or (req.method == "POST") != (req.body is not None):
            return Support(False, "h2load sends a GET, or a POST with a body (-d); not this request")
        if cell.protocol == "https" and option(cell, "h2", False):
            return Support(False, "tools.h2load.h2 asks for HTTP/2 in clear, and this cell is HTTP/1.1 over TLS: "
                                  "the protocol axis says which (h2 or h2c)")
        if not cell.keepalive and _speaks_h2(cell):
            return Support(False, "HTTP/2 has no keep-alive off: every request shares the client's connection")
        if not cell.keepalive and cell.stop.duration_s is not None:
            # Seen here with 1.52.0 (-D 1 -H 'Connection: close'): "Stopped all clients", then it never exits.
            return Support(False, "h2load never exits after a timed run (-D) whose connections close after "
                                  "each request; a request count runs")
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        assert cell.url is not None, "the runner resolves the URL before building"
        # By default one thread per CPU the placement gave it (1 where it was not placed).
        threads = max(1, min(cell.concurrency, option(cell, "threads", cell.cpus or 1)))
        argv = [found.path, "-c", str(cell.concurrency), "-t", str(threads),
                "-N", str(option(cell, "timeout_s", 30))]
        if cell.protocol == "h2":
            argv += ["--npn-list", "h2"]  # h2 alone: without it, a server that lacks h2 gets HTTP/1.1
        elif not _speaks_h2(cell):
            argv.append("--h1")  # HTTP/1.1, in clear or over TLS; else an http:// URL is h2c
        total = cell.stop.total_requests(cell.concurrency)
        if total is not None:
            argv += ["-n", str(max(total, cell.concurrency))]
        else:
            assert cell.stop.duration_s is not None
            argv += ["-D", str(max(1, math.ceil(cell.stop.duration_s)))]
        headers = dict(cell.request.headers)
        if not cell.keepalive and "connection" not in {k.lower() for k in headers}:
            headers["Connection"] = "close"  # h2load --h1 connects again after a response that says so
        for key, value in headers.items():
            argv += ["-H", f"{key}: {value}"]
        files: dict[str, str] = {}
        if cell.request.body is not None:
            files[BODY_FILE] = cell.request.body
            argv += ["-d", BODY_FILE]
            if "content-type" not in {k.lower() for k in headers}:
                argv += ["-H", f"Content-Type: {cell.request.content_type or 'application/octet-stream'}"]
        argv.append(cell.url)
        return Invocation(argv=argv, files=files)

    def classify(self, path: Path, text: str) -> str:
        return "log" if h2load_log.looks_like(text) or (not text and path.suffix == ".log") else "stdout"

    def recognizes(self, path: Path, text: str) -> bool:
        return text.startswith("starting benchmark...\nspawning thread #") or h2load_log.looks_like(text)

    def parts(self, raw: RawOutput) -> list[str]:
        """Output appended to by run after run: one result per run."""
        return appended.names(appended.spans(raw.stdout, _START))

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)

    def timings(self, raw: RawOutput) -> SecondTally | None:
        """The log's times, when it is this run's: beside a summary, as many rows as it says done."""
        path = raw.files.get("log")
        if path is None or raw.part or len(appended.spans(raw.stdout, _START)) > 1:
            return None
        rows = h2load_log.read(path, Numbers("h2load", raw.source))
        said = _REQUESTS.search(raw.stdout)
        if said is not None and said.group(3) != str(len(rows.status)):
            return None
        return h2load_log.tally(rows)


def _speaks_h2(cell: "Cell") -> bool:
    return cell.protocol in ("h2", "h2c") or (cell.protocol == "http1" and bool(option(cell, "h2", False)))


def parse(raw: RawOutput) -> Measurement:
    num = Numbers("h2load", raw.source)
    runs = appended.spans(raw.stdout, _START)
    text = appended.chosen("h2load", runs, raw)
    log = raw.files.get("log")
    if _FINISHED.search(text) is None and log is not None and not raw.stdout.strip():
        return h2load_log.alone(h2load_log.read(log, num), num)
    summary, done = _summary(text, raw.stderr, num)
    if log is None:
        return summary
    if len(runs) > 1:
        return dataclasses.replace(summary, notes=[*summary.notes, "the per-request log beside several runs is "
                                                   "not read: which run it is of cannot be told"])
    return h2load_log.beside(summary, h2load_log.read(log, num), done, num)


def _summary(text: str, stderr: str, num: Numbers) -> tuple[Measurement, int]:
    """The summary's figures and its count of requests done."""
    finished, requests = _FINISHED.search(text), _REQUESTS.search(text)
    if finished is None or requests is None:
        said = stderr.strip().splitlines()[-1:] or ["nothing on stderr"]
        raise ParseError("h2load", f"no summary in the output; h2load said: {said[0][:200]}", num.source)
    names = ("total", "started", "done", "succeeded", "failed", "errored", "timeout")
    c = {name: num.integer(v, f"requests {name}") for name, v in zip(names, requests.groups())}
    notes = ["figures from h2load's summary; it reports no percentile",
             "its time to 1st byte (per connection, from its connect), its req/s per client and its traffic's "
             "split into headers and data are not read"]
    fidelity: dict[str, Fidelity] = {}
    if c["succeeded"] > c["total"] or c["errored"] > c["failed"] or c["timeout"] > c["errored"]:
        raise num.error("requests", f"counts out of order: {requests.group(0).strip()}")
    failed = c["failed"]
    if c["succeeded"] + failed != c["total"]:
        failed = c["total"] - c["succeeded"]
        fidelity["counts.requests_failed"] = Fidelity.DERIVED
        notes.append(f"h2load's failed ({c['failed']}) and succeeded do not add up to its total; "
                     f"{failed} failed is total less succeeded")
    codes = [0, 0, 0, 0]
    if m := _CODES.search(text):
        codes = [num.integer(v, f"status codes {k}xx") for v, k in zip(m.groups(), "2345")]
    by_class = failures.tally({"timeout": c["timeout"], "errored": c["errored"] - c["timeout"]}, FAILURE_TABLE)
    times = {m.group(1): m.groups()[1:] for m in _TIMES.finditer(text)}
    traffic = _TRAFFIC.search(text)
    notes += _protocol_notes(text)
    measurement = Measurement(
        tool="h2load",
        timing=Timing(duration_s=_duration_s(text, finished.group(1), num, fidelity, notes)),
        counts=Counts(requests_total=c["total"], requests_ok=c["succeeded"], requests_failed=failed,
                      failures=Failures(timeout=by_class["timeout"], other=by_class["other"],
                                        http_4xx=codes[2], http_5xx=codes[3])),
        rates=Rates(rps=num.decimal(finished.group(2), "req/s")),
        transfer=Transfer(received_bytes=num.integer(traffic.group(1), "traffic") if traffic else None),
        latency=_latency(times, c["done"], num),
        coordinated_omission=Omission.NOT_CORRECTED,
        fidelity=fidelity,
        notes=notes,
        concurrency=sum(num.integer(n, "clients") for n in _CLIENTS.findall(text)) or None,
    )
    return measurement, c["done"]


def _protocol_notes(text: str) -> list[str]:
    """What h2load said it spoke: "h2load negotiated h2 over TLSv1.3 (TLS_AES_128_GCM_SHA256, server
    temp key X25519 253 bits)", or h2c in clear; or that ALPN settled nothing."""
    tls = {name: m.group(1) for name, pattern in _TLS_LINES.items() if (m := pattern.search(text))}
    protocol = _PROTOCOL.search(text)
    refused = _NONE_SUPPORTED.search(text)
    if protocol is None and refused is None and not tls:
        return []
    where = "in clear"
    if "TLS Protocol" in tls:
        details = [tls["Cipher"]] if "Cipher" in tls else []
        details += [f"server temp key {tls['Server Temp Key']}"] if "Server Temp Key" in tls else []
        where = f"over {tls['TLS Protocol']}" + (f" ({', '.join(details)})" if details else "")
    trust = "; it does not check the server's certificate" if "TLS Protocol" in tls else ""
    if refused is not None:
        offered = ", ".join(refused.group(1).split()) or "none"
        return [f"h2load agreed on none of the protocols it offered ({offered}) with the server, {where}: it sent "
                f"no request{trust}"]
    if protocol is None:
        said = "; it said: no protocol negotiated by ALPN" if _NO_ALPN.search(text) else ""
        return [f"h2load named no application protocol {where}{said}{trust}"]
    verb = "negotiated" if "TLS Protocol" in tls else "spoke"
    return [f"h2load {verb} {protocol.group(1)} {where}{trust}"]


def _duration_s(text: str, finished: str, num: Numbers, fidelity: dict[str, Fidelity], notes: list[str]) -> float:
    """`finished in` counts a warm-up (--warm-up-time) too, which its counts and req/s leave out:
    the measured time is what follows it."""
    duration = units.time_ms(num, finished, "finished in") / 1000.0
    warm = _WARM_UP.search(text)
    if warm is None:
        return duration
    warm_s = units.time_ms(num, warm.group(1), "warm-up time") / 1000.0
    if not warm_s:
        return duration
    if warm_s > duration:
        raise num.error("warm-up time", f"{warm.group(1)} is longer than the whole run, {finished}")
    fidelity["timing.duration_s"] = Fidelity.DERIVED
    notes.append(f"duration: h2load's `finished in` {finished} less its {warm.group(1)} warm-up, which its counts "
                 "leave out")
    return duration - warm_s


def _latency(times: dict[str, tuple[str, ...]], done: int, num: Numbers) -> Latency:
    """min, max, mean, sd per row; all zeros when no request was done: then none is a time."""
    if not done or "request" not in times:
        return Latency()
    low, high, mean, sd = (units.time_ms(num, v, f"time for request {what}")
                           for v, what in zip(times["request"], ("min", "max", "mean", "sd")))
    connect = units.time_ms(num, times["connect"][2], "time for connect mean") if "connect" in times else None
    if "connect" in times and all(units.time_ms(num, v, "time for connect") == 0 for v in times["connect"]):
        connect = None  # all zeros: no connect was timed (each was made in a warm-up)
    printed = times["request"]
    # Whole µs below 1 ms, two decimals of ms below 1 s, of s above: the coarsest step printed.
    step = 10.0 if any(re.fullmatch(r"[\d.]+s", v) for v in printed) else (
        0.01 if any(v.endswith("ms") for v in printed) else 0.001)
    return Latency(min_ms=low, mean_ms=mean, max_ms=high, stdev_ms=sd, connect_mean_ms=connect, resolution_ms=step)


ADAPTER = H2loadAdapter()
