"""ApacheBench (ab): builds its command, reads its stdout, -e CSV and -g TSV.

Protocols: ab sends HTTP/1.0 requests (with `Connection: Keep-Alive` under -k), in clear or over
TLS for an https:// URL (an `https` cell: HTTP/1.x over TLS); it offers no ALPN, so never HTTP/2.
Over TLS it prints `SSL/TLS Protocol: TLSv1.3,<cipher>,<bits>,<bits>` and `Server Temp Key:`,
read into a note. It never checks the server's certificate and has no option to trust a CA
file (`-E` is a client certificate): `AbAdapter.TLS_TRUST`."""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TypeVar

from toolbench.adapters import ab_gnuplot, workload_single
from toolbench.contract.adapter import (SUPPORTED, Adapter, Detection, Found, Invocation, RawOutput, Support, Threads,
                                        found_by_version, option)
from toolbench.contract.recipe import BOTH, Apt, Install
from toolbench.errors import ParseError
from toolbench.record import histogram
from toolbench.record.numbers import Numbers
from toolbench.record.schema import (PERCENTILES, ConnectionTimes, Counts, Failures, Fidelity, Latency, Measurement,
                                     Omission, Percentiles, Rates, TimesRow, Timing, Transfer)
from toolbench.record.timings import SecondTally

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Host

# ab allocates its per-request table up front and caps `-t` alone at 50,000
# requests; with -n it runs until either limit. This bounds the table for a run
# far faster than ab can go (about 70k requests/s on a loopback nginx).
MAX_RPS_FOR_TABLE = 200_000
AB_T_ALONE_CAP = 50_000

_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9 \-]*?):\s+(.*)$")
_CONN_ROW = re.compile(r"^(Connect|Processing|Waiting|Total):\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s*$")
_PCT_ROW = re.compile(r"^\s*(\d+)%\s+(\d+)")
_FAILED_BREAKDOWN = re.compile(r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)")
_BREAKDOWN_NAMES = ("Connect", "Receive", "Length", "Exceptions")
_VERSION = re.compile(r"This is ApacheBench, Version (\S+)")
# "SSL/TLS Protocol:       TLSv1.3,TLS_AES_256_GCM_SHA384,256,256": the version, cipher and its bits.
_TLS = re.compile(r"^SSL/TLS Protocol:[^\S\n]+([^\s,]{1,40}),([^\s,]{1,80})(?:,(\d{1,5}))?", re.MULTILINE)
_RESET = re.compile(r"Connection reset by peer", re.IGNORECASE)
# ab prints whole percents only: every schema percentile but p99.9.
_PCT_NAMES = {int(pct): name for name, pct in PERCENTILES if pct.is_integer()}
T = TypeVar("T")


class AbAdapter(Adapter):
    name = "ab"
    workload_features = workload_single.one_request("ab sends one URL with one method and body")
    install = Install((Apt(("apache2-utils",), program="ab"),), BOTH)
    threads = Threads.ONE  # one select/poll loop
    option_types = {"gnuplot": bool, "timeout_s": int, "continue_on_error": bool}
    protocols = frozenset({"http1", "https"})
    protocol_refusals = {protocol: "ab speaks HTTP/1.0 (over TLS too, without ALPN): no HTTP/2"
                         for protocol in ("h2", "h2c")}
    # The contract's TLS_TRUST: a TLS cell of a tool that does not check the certificate says it in a note.
    TLS_TRUST = ("ab never checks the server's certificate: it has no option to trust a CA file, "
                 "so the target's certificate is not verified")

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        return found_by_version(host, path or "ab", ["-V"], _VERSION)

    def supports(self, cell: "Cell") -> Support:
        if cell.rate_rps is not None:
            return Support(False, "ab has no fixed-rate (open model) mode")
        if cell.request.body is not None and cell.request.method not in ("POST", "PUT"):
            return Support(False, f"ab sends a body only with POST or PUT, not {cell.request.method}")
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        assert cell.url is not None, "the runner resolves the URL before building"
        argv = [found.path, "-c", str(cell.concurrency), "-e", "percentiles.csv",
                "-s", str(option(cell, "timeout_s", 30))]
        if option(cell, "continue_on_error", True):
            argv.insert(3, "-r")  # without it, ab ends at the first failed read (a reset), as study 003's did
        outputs = {"csv": "percentiles.csv"}
        files: dict[str, str] = {}
        if option(cell, "gnuplot", True):
            argv += ["-g", "requests.tsv"]
            outputs["tsv"] = "requests.tsv"
        if cell.keepalive:
            argv.append("-k")
        total = cell.stop.total_requests(cell.concurrency)  # per connection: ab's -n is c x N
        if total is not None:
            argv += ["-n", str(total)]
        else:
            assert cell.stop.duration_s is not None
            cap = max(AB_T_ALONE_CAP, int(cell.stop.duration_s * MAX_RPS_FOR_TABLE))
            argv += ["-t", f"{cell.stop.duration_s:g}", "-n", str(cap)]
        argv += _request_args(cell, files)
        argv.append(cell.url)
        return Invocation(argv=argv, files=files, outputs=outputs)

    def classify(self, path: Path, text: str) -> str:
        if text.startswith("Percentage served,"):
            return "csv"
        if text.startswith(ab_gnuplot.HEADER):
            return "tsv"
        return "stdout"

    def recognizes(self, path: Path, text: str) -> bool:
        return "This is ApacheBench" in text[:500] or self.classify(path, text) != "stdout"

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)

    def timings(self, raw: RawOutput) -> SecondTally | None:
        read = ab_gnuplot.read_rows(raw)  # -g: every request's epoch second and total time in whole ms
        if read is None:
            return None
        tally = SecondTally()
        try:
            tally.add(*read)
        except ValueError as exc:
            raise ParseError("ab", f"the -g file: {exc}", str(raw.files["tsv"])) from None
        return tally


def _request_args(cell: "Cell", files: dict[str, str]) -> list[str]:
    req = cell.request
    args: list[str] = []
    for key, value in req.headers.items():
        args += ["-H", f"{key}: {value}"]
    if req.body is not None:
        files["body"] = req.body
        args += ["-p" if req.method == "POST" else "-u", "body"]
        args += ["-T", req.content_type or "application/octet-stream"]
    elif req.method != "GET":
        args += ["-m", req.method]
    return args


def parse(raw: RawOutput) -> Measurement:
    num = Numbers("ab", raw.source)
    fields, conn, pcts = _scan_stdout(raw.stdout, num)
    version = _VERSION.search(raw.stdout)
    if version is None and not raw.files:
        raise ParseError("ab", "no ApacheBench banner in the output", raw.source)
    notes: list[str] = []
    tls = _TLS.search(raw.stdout)
    if tls is not None:
        notes.append(_tls_note(tls, fields.get("Server Temp Key")))
    fidelity: dict[str, Fidelity] = {}
    received = _lead(fields, "Total transferred", num.integer)
    counts = _counts(fields, received, num, notes, fidelity)
    latency = _latency(fields, conn, pcts, raw, num, notes, fidelity)
    per = ab_gnuplot.read(raw)
    hist, series = (per.histogram, per.series) if per else (None, [])
    if per is not None:
        from_curve = fidelity.get("latency.mean_ms") is Fidelity.DERIVED  # the -e file's curve gave it
        latency = ab_gnuplot.finer(latency, per, from_curve, fidelity, notes)
        if counts.requests_total is None and not fields:
            counts = ab_gnuplot.counts_alone(per, fidelity, notes)
    if counts.requests_total is None and not fields and raw.files:
        notes.append("ab's -e file alone: request times without the counts (ab prints those on stdout)")
    if hist is not None:
        fidelity["histogram"] = Fidelity.DERIVED
        fidelity["series"] = Fidelity.DERIVED
        notes.append("histogram and series come from ab -g, whose times are whole milliseconds")
    if counts.requests_total == AB_T_ALONE_CAP:
        notes.append("ab stopped at 50,000 requests, its cap for -t without -n: the run may be shorter than asked")
    error = _error_line(raw.stderr)
    if error:
        notes.append(f"ab: {error}")
    if counts.requests_total is None and error and _RESET.search(error):
        # Without -r ab ends at the first reset and prints no counts: that one is all it tells.
        counts = Counts(failures=Failures(reset=1))
        notes.append("ab ended at a connection reset (run without -r): it reported no counts")
    rate = _lead(fields, "Transfer rate", num.decimal)
    return Measurement(
        tool="ab",
        coordinated_omission=Omission.NOT_CORRECTED,  # each request timed from its actual send
        timing=Timing(duration_s=_lead(fields, "Time taken for tests", num.decimal)),
        counts=counts,
        rates=Rates(rps=_lead(fields, "Requests per second", num.decimal)),
        transfer=Transfer(
            received_bytes=received,
            sent_bytes=_lead(fields, "Total body sent", num.integer),
            received_bytes_per_s=rate * 1024 if rate is not None else None,
        ),
        latency=latency,
        histogram=histogram.encode(hist) if hist is not None else None,
        histogram_resolution_ms=1.0 if hist is not None else None,  # -g times are whole ms
        series=series,
        fidelity=fidelity,
        notes=notes,
        url=_url(fields, tls is not None),
        concurrency=_lead(fields, "Concurrency Level", num.integer),
        tool_version=version.group(1) if version else None,
    )


def _scan_stdout(text: str, num: Numbers) -> tuple[dict[str, str], dict[str, list[float]], dict[int, float]]:
    fields: dict[str, str] = {}
    conn: dict[str, list[float]] = {}
    pcts: dict[int, float] = {}
    for line in text.splitlines():
        if m := _CONN_ROW.match(line):
            conn[m.group(1)] = [num.decimal(v, f"{m.group(1)} row of Connection Times") for v in m.groups()[1:]]
        elif m := _PCT_ROW.match(line):
            pcts[num.integer(m.group(1), "percentage served")] = num.decimal(m.group(2), f"{m.group(1)}% served")
        elif m := _FAILED_BREAKDOWN.search(line):
            fields["breakdown"] = line
        elif m := _FIELD.match(line):
            # "Time per request" appears twice; the first is per request, the second per concurrency slot.
            fields.setdefault(m.group(1).strip(), m.group(2).strip())
    return fields, conn, pcts


def _counts(fields: dict[str, str], received: int | None, num: Numbers, notes: list[str],
            fidelity: dict[str, Fidelity]) -> Counts:
    """ab's "Failed requests" counts error events, not requests (ab.c adds one to it with
    each of err_conn, err_recv, err_length and err_except): a connection reset is both a
    receive error and an exception (a poll error) on the one request, so 100 resets are
    "200 failed" of 100; a connect error or an exception alone starts the request again
    on a new connection, outside the complete requests. A complete request failed when
    its read failed or its status was not 2xx; length "errors" are not failures here."""
    complete = _lead(fields, "Complete requests", num.integer)
    if complete is None:
        return Counts()
    connect = receive = length = exceptions = 0
    if (m := _FAILED_BREAKDOWN.search(fields.get("breakdown", ""))) is not None:
        connect, receive, length, exceptions = (num.integer(v, f"failed requests ({name})")
                                                for v, name in zip(m.groups(), _BREAKDOWN_NAMES))
    events = _lead(fields, "Failed requests", num.integer) or 0
    non2xx = _lead(fields, "Non-2xx responses", num.integer) or 0
    if length:
        # ab compares every body's length with the first one's: a dynamic page "fails".
        notes.append(f"ab counted {length} responses as failed because their length differed from the "
                     "first response's; toolbench does not count those as failures")
    read = min(receive, complete)
    if complete and received == 0 and read < complete:
        # ab counts a connection closed before any byte as a good request; no byte came back at all.
        notes.append(f"ab received no byte in {complete} requests and called them complete: each is counted "
                     "as a failed read here")
        read = complete
    failed = min(complete, read + non2xx)
    if events > length and connect + exceptions:
        notes.append(f"ab reported {events} failed requests (Connect: {connect}, Receive: {receive}, Length: "
                     f"{length}, Exceptions: {exceptions}): it counts error events, and a reset request is both a "
                     f"receive error and an exception; {failed} of its {complete} complete requests failed")
    for name in ("counts.requests_ok", "counts.requests_failed"):
        fidelity[name] = Fidelity.DERIVED
    return Counts(
        requests_total=complete,
        requests_ok=complete - failed,
        requests_failed=failed,
        # ab tells 2xx from the rest only: a 3xx, 4xx or 5xx all count as Non-2xx. Its connect
        # errors are attempts it made again, outside the complete requests.
        failures=Failures(connect=connect, read=read, http=min(non2xx, complete)),
    )


def _latency(fields: dict[str, str], conn: dict[str, list[float]], pcts: dict[int, float],
             raw: RawOutput, num: Numbers, notes: list[str], fidelity: dict[str, Fidelity]) -> Latency:
    csv_pcts = _past_the_table(_read_csv(raw.files.get("csv")), _lead(fields, "Complete requests", num.integer),
                               notes)
    if csv_pcts:
        percentiles = Percentiles(**{name: csv_pcts[p] for p, name in _PCT_NAMES.items() if p in csv_pcts})
        resolution = 0.001
    else:
        percentiles = Percentiles(**{name: pcts[p] for p, name in _PCT_NAMES.items() if p in pcts})
        resolution = 1.0
    total = conn.get("Total")
    table_min, table_max = (total[0], total[4]) if total else (None, None)
    # The -e file's 0% and 100% rows are the shortest and longest requests to the
    # microsecond; the table's are whole ms.
    min_ms = csv_pcts.get(0, table_min) if csv_pcts else table_min
    max_ms = csv_pcts.get(100, table_max) if csv_pcts else pcts.get(100, table_max)
    # The mean of the requests' own times: never ab's "Time per request", which is concurrency x
    # time taken / requests, its own rate turned over, so no check against the rate could fail.
    # The -e file's curve gives it to the microsecond; else the table's Total mean, whole ms.
    mean_ms = _curve_mean(csv_pcts)
    if mean_ms is not None:
        fidelity["latency.mean_ms"] = Fidelity.DERIVED
    elif total and max_ms is not None:
        # Rounded, it may fall outside the exact min and max, where no mean lies.
        mean_ms = min(max(total[1], min_ms if min_ms is not None else 0.0), max_ms)
    per_slot = _lead(fields, "Time per request", num.decimal)
    if per_slot is not None and max_ms is not None and per_slot > max_ms + 1.0:
        notes.append(f"ab's Time per request, {per_slot:g} ms, is above its longest request, {max_ms:g} ms: it "
                     "counts time outside the requests")
    return Latency(
        min_ms=min_ms,
        mean_ms=mean_ms,
        max_ms=max_ms,
        stdev_ms=total[2] if total else None,
        percentiles=percentiles,
        connect_mean_ms=conn["Connect"][1] if "Connect" in conn else None,
        ttfb_mean_ms=conn["Waiting"][1] if "Waiting" in conn else None,
        resolution_ms=resolution if (total or csv_pcts) else None,
        connection_times=_connection_times(conn),
    )


def _curve_mean(csv_pcts: dict[int, float]) -> float | None:
    """The mean of the requests' times from the -e file's 101 rows (0% to 100%): the mean is
    the area under that curve, taken between each row and the next."""
    if any(i not in csv_pcts for i in range(101)):
        return None
    return sum(csv_pcts[i] + csv_pcts[i + 1] for i in range(100)) / 200.0


def _connection_times(conn: dict[str, list[float]]) -> ConnectionTimes | None:
    """ab's whole Connection Times table (min, mean, sd, median, max per row)."""
    if not conn:
        return None
    rows = {name.lower(): TimesRow(*conn[name]) for name in ("Connect", "Processing", "Waiting", "Total")
            if name in conn}
    return ConnectionTimes(**rows)


def _read_csv(path: Path | None) -> dict[int, float]:
    if path is None:
        return {}
    result = {}
    lines = path.read_text(errors="replace").splitlines()
    if not lines or not lines[0].startswith("Percentage served"):
        raise ParseError("ab", "the -e file has no 'Percentage served' header", str(path))
    at = Numbers("ab", str(path))
    for number, line in enumerate(lines[1:], 2):
        parts = line.split(",")
        if len(parts) != 2:
            raise ParseError("ab", f"line {number}: expected 'percent,ms', got {line!r:.80}", str(path))
        pct = at.integer(parts[0], f"line {number}: percent")
        if pct > 100:
            raise ParseError("ab", f"line {number}: {pct} is not a percent", str(path))
        result[pct] = at.decimal(parts[1], f"line {number}: ms")
    return result


def _past_the_table(csv_pcts: dict[int, float], done: int | None, notes: list[str]) -> dict[int, float]:
    """ab writes the -e file's row i from stats[(int)(0.5 + done * i / 100.0)]: for the top
    rows of a short run (99% of 50 requests) that index is `done`, one past its table, and
    the row holds whatever memory lies there (0.257 ms beside a 98% of 4.966). The rank
    meant is the last one, the longest request: its 100% row. Without ab's stdout the count
    is unknown: a row below an earlier one can only be such a row."""
    if 100 not in csv_pcts:
        return csv_pcts
    if done:
        past = [i for i in csv_pcts if 0 < i < 100 and int(0.5 + done * i / 100.0) >= done]
    else:
        rows = sorted(i for i in csv_pcts if 0 < i < 100)
        past = [i for n, i in enumerate(rows) if any(csv_pcts[i] < csv_pcts[j] for j in rows[:n])]
    if not past:
        return csv_pcts
    notes.append(f"ab's -e file reads past its table for the {', '.join(f'{i}%' for i in sorted(past))} row "
                 f"of {done or 'a few'} requests: the longest request is taken for it")
    return {**csv_pcts, **{i: csv_pcts[100] for i in past}}


def _error_line(stderr: str) -> str | None:
    for line in reversed(stderr.strip().splitlines()):
        line = line.strip()
        if line and not line.startswith(("Completed", "Finished")):
            return line
    return None


def _url(fields: dict[str, str], tls: bool) -> str | None:
    host, port, path = fields.get("Server Hostname"), fields.get("Server Port"), fields.get("Document Path")
    if host is None or path is None:
        return None
    return f"https://{host}:{port or 443}{path}" if tls else f"http://{host}:{port or 80}{path}"


def _tls_note(tls: re.Match[str], temp_key: str | None) -> str:
    """What ab said of its TLS sessions: it prints the version and cipher of its first handshake."""
    bits = f", {tls.group(3)}-bit" if tls.group(3) else ""
    key = f"; server temp key {temp_key[:60]}" if temp_key else ""
    return (f"ab spoke HTTP/1.0 over {tls.group(1)} ({tls.group(2)}{bits}{key}); it does not check the "
            "server's certificate")


def _lead(fields: dict[str, str], name: str, read: Callable[[str, str], T]) -> T | None:
    """The number a summary line starts with (`0.293 seconds`, `68280.13 [#/sec] (mean)`)."""
    text = fields.get(name)
    if text is None:
        return None
    words = text.split()
    return read(words[0] if words else "", name)


ADAPTER = AbAdapter()
