"""siege: builds its command and its own siegerc, reads its text summary, its
JSON summary (-j) and its log line (--log).

Protocols: HTTP/1.1 (the siegerc's `protocol`), in clear or over TLS for an https:// URL; no
HTTP/2. Its summary says nothing of TLS. It never checks the server's certificate: its siegerc
has a client certificate, key, ciphers and a timeout for TLS, no CA to trust
(`SiegeAdapter.TLS_TRUST`)."""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING

from toolbench.adapters import siege_workload
from toolbench.contract.adapter import (SUPPORTED, Adapter, Detection, Found, Invocation, RawOutput, Support, Threads,
                                        found_by_version, option)
from toolbench.contract.recipe import BOTH, Apt, Install
from toolbench.errors import ParseError
from toolbench.record import failures
from toolbench.record.exits import signal_name
from toolbench.record.numbers import Numbers
from toolbench.record.schema import (Counts, Failures, Fidelity, Latency, Measurement, Omission, Rates, SiegeFigures,
                                     Timing, Transfer)

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Host

MIB = 1024 * 1024
RESOLUTION_MS = 10.0  # siege prints times in hundredths of a second
DEFAULT_FAILURES = 1024  # siege's own default: socket failures (5xx included) before it gives up
BODY_FILE = "body"

# Written for every run: Debian's /etc/siege/siegerc turns JSON output on, and a
# user's ~/.siege/siege.conf could change anything else, so no run depends on either.
# Logging stays off: with it on, siege 4.0.7 often hangs after a timed (-t) run
# (3 runs in 8 at -c 50 here; none in 8 with it off). The JSON summary has every
# figure the log line has.
#
# `failures` stays finite (siege's own default, 1024, as in study 000). A timed run (-t) ends
# by cancelling siege's threads (pthread_cancel from its timer), and a thread cancelled while
# glibc's malloc lock is held leaves the others deadlocked in free() as they exit, main waiting
# in pthread_join forever with SIGTERM blocked (gdb on a hung siege 4.0.7). Against a server
# answering mostly 503 each thread fails fast and over and over (browser.c returns FALSE for
# any 5xx, and __increment_failures() ends in pthread_testcancel()), so the cancel lands there
# often: 2 hangs in 5 runs of -c 100 -t 2S here with failures = 2147483647. With a finite
# bound each thread leaves its loop by itself once siege has counted that many failures
# (browser.c: `if (my.failures > 0 && my.failed >= my.failures) break;`), before any cancel.
SIEGERC = """\
verbose = false
color = off
quiet = false
json_output = true
show-logfile = false
logging = false
protocol = HTTP/1.1
connection = {connection}
concurrent = {concurrency}
limit = {limit}
benchmark = true
timeout = {timeout}
failures = {failures}
internet = false
accept-encoding =
chunked = true
cache = false
parser = false
spinner = false
"""

# The summary's labels, in the text form and the JSON form, to one name each.
_KEYS = {
    "transactions": "transactions", "availability": "availability", "elapsed time": "elapsed_time",
    "data transferred": "data_transferred", "response time": "response_time",
    "transaction rate": "transaction_rate", "throughput": "throughput", "concurrency": "concurrency",
    "successful transactions": "successful_transactions", "failed transactions": "failed_transactions",
    "longest transaction": "longest_transaction", "shortest transaction": "shortest_transaction",
}
_TEXT_LINE = re.compile(r"^([A-Z][a-z ]+):\s+([\d.]+)")
# Summary figures that count transactions: whole numbers.
_COUNTS = ("transactions", "successful_transactions", "failed_transactions")
_LOG_HEADER = re.compile(r"^\s*Date & Time,\s*Trans,")
_VERSION = re.compile(r"SIEGE (\d[\w.\-]*)")
_ERROR = re.compile(r"\[error\]\s*(.*)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # siege colours "[error]" unless told not to
# siege's [error] lines to failure classes (toolbench.record.failures), first match wins.
FAILURE_TABLE: failures.Table = (
    ("connect", ("refused", "unable to connect")),
    ("timeout", ("timed out", "timeout")),
    ("reset", ("reset",)),
    ("read", ("socket read", "read error")),
)
_VERBOSE = re.compile(r"^HTTP/\d\.\d\s+(\d{3})\s")


class SiegeAdapter(Adapter):
    name = "siege"
    install = Install((Apt(("siege",), program="siege"),), BOTH)
    threads = Threads.ALL  # a pthread per simulated user
    option_types = {"timeout_s": int, "failures": int}
    protocols = frozenset({"http1", "https"})
    protocol_refusals = {protocol: "siege speaks HTTP/1.1 (over TLS too): no HTTP/2" for protocol in ("h2", "h2c")}
    # The contract's TLS_TRUST: a TLS cell of a tool that does not check the certificate says it in a note.
    TLS_TRUST = ("siege never checks the server's certificate: its siegerc can name a client certificate, "
                 "not a CA to trust")
    # siege 4.0.7 sometimes never exits after a timed run (a thread cancelled while it
    # holds a glibc lock; upstream issues #4 and #66): such a run is killed at the hard
    # limit, kept, noted, and run again, at most this many more times.
    retries_on_hang = 2
    workload_features = siege_workload.FEATURES

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        return found_by_version(host, path or "siege", ["--version"], _VERSION)

    def supports(self, cell: "Cell") -> Support:
        if cell.rate_rps is not None:
            return Support(False, "siege has no fixed-rate (open model) mode")
        if cell.workload is not None:
            return siege_workload.supports(cell) or SUPPORTED
        if cell.request.body is not None and cell.request.method not in ("POST", "PUT", "PATCH"):
            return Support(False, f"siege sends a body only with POST, PUT or PATCH, not {cell.request.method}")
        body = cell.request.body
        if body is not None and (body != body.strip(" \t\n\r\f\v") or "\0" in body):
            return Support(False, "siege trims leading and trailing whitespace from a body and stops at a NUL "
                                  "byte: this body would not be sent as given")
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        assert cell.url is not None, "the runner resolves the URL before building"
        rc = SIEGERC.format(connection="keep-alive" if cell.keepalive else "close",
                            concurrency=cell.concurrency, limit=max(255, cell.concurrency),
                            timeout=option(cell, "timeout_s", 30),
                            failures=max(1, option(cell, "failures", DEFAULT_FAILURES)))
        # Never -g: with keep-alive it hangs. -R makes siege ignore every other siegerc.
        argv = [found.path, "-R", "siegerc", "-b", "-j", "-c", str(cell.concurrency)]
        if cell.stop.requests_per_connection is not None:
            argv += ["-r", str(cell.stop.requests_per_connection)]  # siege's own: each user N times
        elif cell.stop.requests is not None:
            argv += ["-r", str(math.ceil(cell.stop.requests / cell.concurrency))]
        else:
            assert cell.stop.duration_s is not None
            argv += ["-t", f"{max(1, math.ceil(cell.stop.duration_s))}S"]
        if cell.workload is not None:
            if cell.workload.think is not None:  # siege's delay applies only outside benchmark mode
                argv.remove("-b")
                rc = rc.replace("benchmark = true", "benchmark = false")
            files = {"siegerc": rc, **siege_workload.files(cell)}
            return Invocation(argv=argv + siege_workload.args(cell), files=files)
        req = cell.request
        for key, value in req.headers.items():
            argv += ["-H", f"{key}: {value}"]
        files = {"siegerc": rc}
        target = cell.url
        if req.body is not None:
            # Always from a file toolbench wrote (`URL POST <file`): a body given inline
            # would be read by siege as a file name when it starts with '<', and a large one
            # would not fit in argv.
            files[BODY_FILE] = req.body
            argv += ["--content-type", req.content_type or "application/octet-stream"]
            target = f"{cell.url} {req.method} <{BODY_FILE}"
        elif req.method != "GET":
            target = f"{cell.url} {req.method}"
        argv.append(target)
        return Invocation(argv=argv, files=files)

    def classify(self, path: Path, text: str) -> str:
        stripped = text.lstrip()
        if stripped.startswith("{"):
            return "stdout"
        if _LOG_HEADER.match(text) or re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\s*\d+,\s*[\d.]+,", stripped):
            return "log"
        return "stderr" if "Transactions:" in text else "stdout"

    def recognizes(self, path: Path, text: str) -> bool:
        if text.lstrip().startswith("{"):
            return '"transactions":' in text and '"availability":' in text
        return (self.classify(path, text) == "log" or "** SIEGE " in text
                or ("Transactions:" in text and "Availability:" in text))

    def parts(self, raw: RawOutput) -> list[str]:
        """A log appended to by run after run, read without any run's own summary: one
        result per line."""
        if "log" not in raw.files or _summary(raw) is not None:
            return []
        rows = _log_rows(raw.files["log"])
        return [f"run{n}" for n in range(1, len(rows) + 1)] if len(rows) > 1 else []

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)


def parse(raw: RawOutput) -> Measurement:
    num = Numbers("siege", raw.source)
    summary = None if raw.part else _summary(raw)
    source, notes = "summary", []
    if summary is None and "log" in raw.files and (logged := _log_summary(raw.files["log"], raw.part)):
        (summary, notes), source = logged, "log line"
    if summary is None:
        if raw.exit_code is not None and raw.exit_code < 0:
            # siege 4.0.7 sometimes crashes in libc as its threads leave after hitting
            # `failures` (SIGSEGV in 3 of 12 runs of -c 100 against a server answering 503).
            raise ParseError("siege", f"siege was killed by {signal_name(-raw.exit_code)} before it printed "
                             "a summary", raw.source)
        if _errors(raw.stderr):
            raise ParseError("siege", "no summary; siege said: " + _errors(raw.stderr)[-1], raw.source)
        raise ParseError("siege", "no summary (text, JSON or log line) in the output", raw.source)
    for name in _COUNTS:
        if name in summary and not float(summary[name]).is_integer():
            raise num.error(name, f"{summary[name]!r} is not a whole number")
    return _measurement(summary, raw, source, notes)


def _measurement(s: dict[str, float], raw: RawOutput, source: str, read: list[str]) -> Measurement:
    notes = [f"figures from siege's {source}",
             "siege reports times in hundredths of a second and data in MB with two decimals", *read]
    if "aborted due to excessive socket failure" in raw.stderr:
        notes.append("siege stopped early: it counted as many failures as its siegerc's `failures` allows "
                     "(tools.siege.failures)")
    fidelity: dict[str, Fidelity] = {}
    transactions = int(s["transactions"])
    failed = int(s.get("failed_transactions", 0))
    ok = s.get("successful_transactions")
    http_errors = None
    if ok is not None:
        # siege counts every HTTP response as a transaction, a 404 included, and calls
        # that 100% available; only "successful" ones have a status below 400.
        # siege has been seen to report one more successful transaction than transactions;
        # keep its figures, but never a negative count of errors.
        http_errors = max(0, transactions - int(ok))
        if int(ok) > transactions:
            # A success is a transaction: the successes counted here are at most the transactions.
            notes.append(f"siege reported {int(ok)} successful transactions out of {transactions}; "
                         f"{transactions} are counted")
            ok = float(transactions)
        if http_errors:
            notes.append(f"{http_errors} responses had a status of 400 or more; siege counted them as "
                         "transactions and as available")
    for name in ("counts.requests_total", "counts.failures.http", "transfer.received_bytes"):
        fidelity[name] = Fidelity.DERIVED
    mean_ms = _mean_ms(s, notes)
    return Measurement(
        tool="siege",
        coordinated_omission=Omission.NOT_CORRECTED,  # each request timed from its actual send
        timing=Timing(duration_s=s.get("elapsed_time")),
        counts=Counts(requests_total=transactions + failed, requests_ok=int(ok) if ok is not None else None,
                      requests_failed=failed + (http_errors or 0) if ok is not None else None,
                      failures=_failure_classes(failed, raw.stderr, http_errors),
                      status_codes=_verbose_codes(raw.stdout)),
        rates=Rates(rps=s.get("transaction_rate")),
        transfer=Transfer(
            received_bytes=round(s["data_transferred"] * MIB) if "data_transferred" in s else None,
            received_bytes_per_s=s["throughput"] * MIB if "throughput" in s else None),
        latency=Latency(min_ms=_ms(s.get("shortest_transaction")), mean_ms=mean_ms,
                        max_ms=_ms(s.get("longest_transaction")), resolution_ms=RESOLUTION_MS),
        fidelity=fidelity,
        notes=notes,
        tool_version=_version(raw.stderr + raw.stdout),
        siege=SiegeFigures(concurrency=s.get("concurrency"), availability_pct=s.get("availability")),
    )


def _mean_ms(s: dict[str, float], notes: list[str]) -> float | None:
    """siege's response time, unless it is no mean: siege divides the time of every transaction,
    failed ones included, by the successful ones only, so with many failures it rises above its
    own longest transaction (recorded: 1.21 s beside 0.36 s with 1914 of 2000 answered 503)."""
    mean, longest = _ms(s.get("response_time")), _ms(s.get("longest_transaction"))
    if mean is not None and longest is not None and mean > longest + RESOLUTION_MS:
        notes.append(f"siege's response time ({mean / 1000:g} s) is above its longest transaction "
                     f"({longest / 1000:g} s): it counts failed transactions' time over the successful ones, "
                     "so it is no mean and is left out")
        return None
    return mean


def _failure_classes(failed: int, stderr: str, http_errors: int | None) -> Failures:
    """siege counts socket failures without classes; its [error] lines on stderr name them."""
    by_class = failures.tally(_errors(stderr), FAILURE_TABLE)
    connect, timeout, read, reset = by_class["connect"], by_class["timeout"], by_class["read"], by_class["reset"]
    classified = connect + timeout + read + reset
    if classified > failed:  # more lines than failures: keep the tool's count, unclassified
        connect = timeout = read = reset = 0
        classified = 0
    return Failures(connect=connect, timeout=timeout, read=read, reset=reset, http=http_errors,
                    other=failed - classified)


def _json_summary(text: str, num: Numbers) -> dict[str, float] | None:
    start = text.find("{")
    if start < 0:
        return None
    end = text.rfind("}")
    data = num.loads(text[start:end + 1], "the JSON summary", or_none=True)
    if not isinstance(data, dict) or "transactions" not in data:
        return None
    return {k: num.real(v, k) for k, v in data.items() if k in _KEYS.values() and v is not None}


def _text_summary(text: str, num: Numbers) -> dict[str, float] | None:
    found = {}
    for line in text.splitlines():
        if (m := _TEXT_LINE.match(line.strip())) and m.group(1).strip().lower() in _KEYS:
            found[_KEYS[m.group(1).strip().lower()]] = num.decimal(m.group(2), m.group(1).strip())
    return found if "transactions" in found else None


def _summary(raw: RawOutput) -> dict[str, float] | None:
    num = Numbers("siege", raw.source)
    return _json_summary(raw.stdout, num) or _text_summary(raw.stderr, num) or _text_summary(raw.stdout, num)


def _log_rows(path: Path) -> list[str]:
    """The data lines of siege's log: not its header(s), nor the `**** mark ****` lines -m adds."""
    return [line for line in path.read_text(errors="replace").splitlines()
            if line.strip() and not _LOG_HEADER.match(line) and not line.startswith("**")]


# The log's columns after the date: siege's own heading for each, and the summary's name for it.
_LOG_COLUMNS = (("Trans", "transactions"), ("Elap Time", "elapsed_time"), ("Data Trans", "data_transferred"),
                ("Resp Time", "response_time"), ("Trans Rate", "transaction_rate"), ("Throughput", "throughput"),
                ("Concurrent", "concurrency"), ("OKAY", "successful_transactions"), ("Failed", "failed_transactions"))
# What C's printf writes for a quotient that is no number (siege divides by transactions, by time).
_NOT_A_NUMBER = ("nan", "-nan", "inf", "-inf")


def _log_summary(path: Path, part: str | None = None) -> tuple[dict[str, float], list[str]] | None:
    """A data line of siege's log, the last or the part's (run1 is the first): date, trans,
    elapsed, MB, resp time, rate, throughput, concurrency, okay, failed; and what could not be read."""
    rows = _log_rows(path)
    if not rows:
        return None
    if part == "all":
        raise ParseError("siege", "the runs of a siege log cannot be merged: each line is one run's summary, "
                         "without the per-request times that would add up", str(path))
    index = int(part[len("run"):]) - 1 if part and part.startswith("run") and part[3:].isdigit() else -1
    if not -1 <= index < len(rows):
        raise ParseError("siege", f"the log has {len(rows)} runs, not {part}", str(path))
    cells = [c.strip() for c in rows[index].split(",")]
    if len(cells) != len(_LOG_COLUMNS) + 1:
        raise ParseError("siege", f"expected {len(_LOG_COLUMNS) + 1} fields in the log line, got {len(cells)}",
                         str(path))
    num = Numbers("siege", str(path))
    summary: dict[str, float] = {}
    unread: dict[str, str] = {}  # heading -> what siege wrote
    for (heading, name), cell in zip(_LOG_COLUMNS, cells[1:]):
        # A run that completed no transaction has nothing to divide by: siege logs nan for its
        # response time, rates and concurrency. Such a figure is absent; a count never is.
        if cell.lower() in _NOT_A_NUMBER and name not in _COUNTS:
            unread[heading] = cell
            continue
        summary[name] = num.decimal(cell, f"log line, {name}")
    if not unread:
        return summary, []
    why = "; siege divides by the run's 0 transactions" if summary.get("transactions") == 0 else ""
    return summary, [f"the log line holds no number for {', '.join(unread)} "
                     f"({'/'.join(sorted(set(unread.values())))}{why}): left absent"]


def _errors(stderr: str) -> list[str]:
    plain = _ANSI.sub("", stderr)
    return [m.group(1).strip() for line in plain.splitlines() if (m := _ERROR.search(line))]


def _verbose_codes(stdout: str) -> dict[int, int]:
    codes: dict[int, int] = {}
    for line in stdout.splitlines():
        if m := _VERBOSE.match(line):
            code = int(m.group(1))
            codes[code] = codes.get(code, 0) + 1
    return codes


def _version(text: str) -> str | None:
    m = _VERSION.search(text)
    return m.group(1) if m else None


def _ms(seconds: float | None) -> float | None:
    return seconds * 1000.0 if seconds is not None else None


ADAPTER = SiegeAdapter()
