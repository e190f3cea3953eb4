"""httperf's text summary read into a Measurement (toolbench.adapters.httperf runs it).

What its counts are, and what follows:
- `Total: connections C requests R replies P`: R requests sent, P of them answered. With one
  call per connection (toolbench's own runs) a connection is a request; with several
  (`--num-calls`, `--wsess`, `--wsesslog`) the requests are the count, not the connections;
- its errors are counted per connection, by cause: a connection that failed with a request
  outstanding failed that request; one that failed before sending any (refused, a connect
  timed out) sent none, and is counted here as one failed request, as with one call each.
  The connection's other calls were never made, and are not counted;
- its connection times (min, avg, max, median, stddev) are of whole connections, connect
  included: the requests' times with one call each, not with several. Then only the mean
  time to a reply's first byte (`response`) and to its end (`transfer`) are the requests'."""
from __future__ import annotations

import math
import re

from toolbench.errors import ParseError
from toolbench.record import failures
from toolbench.record.numbers import Numbers
from toolbench.record.schema import (Counts, Failures, Fidelity, Latency, Measurement, Omission, Percentiles, Rates,
                                     Timing)

RESOLUTION_MS = 0.1
# [^\S\n] is white space within a line: `\s` runs on across line ends, and from each of thousands
# of blank lines over all those after it (quadratic). No match here spans two lines.
COMMAND = re.compile(r"^httperf --[^\n]*", re.MULTILINE)
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
_SESSIONS = re.compile(r"^Session rate \[sess/s\]: min \S+ avg (\S+) max \S+ stddev \S+ \((\d+)/(\d+)\)", re.MULTILINE)
# httperf's error counters to failure classes (toolbench.record.failures), first match wins.
FAILURE_TABLE: failures.Table = (
    ("timeout", ("client-timo", "socket-timo")),
    ("connect", ("connrefused", "addrunavail")),
    ("reset", ("connreset",)),
)
_UNREAD = ("its reply rate samples, request and reply sizes, CPU time and net I/O are not read")


def parse_summary(text: str, stderr: str, num: Numbers) -> Measurement:
    """One run's summary (its command line, if kept, to its last `Errors:` line)."""
    found = _TOTAL.findall(text)
    if not found:
        said = [line for line in stderr.strip().splitlines() if "warning" not in line][-1:] or ["nothing"]
        raise ParseError("httperf", f"no summary in the output; httperf said: {said[0][:200]}", num.source)
    if len(found) > 1:
        raise num.error("Total", f"{len(found)} summaries without httperf's command line before each: which "
                        "lines are of which run cannot be told")
    conns, requests, replies = (num.integer(v, name) for v, name in zip(found[0], ("connections", "requests",
                                                                                    "replies")))
    calls, how = _calls(text, conns, requests)
    notes = ["figures from httperf's summary (ms with one decimal)", _UNREAD]
    fidelity = {name: Fidelity.DERIVED for name in ("counts.requests_ok", "counts.requests_failed")}
    counts = _counts(text, (conns, requests, replies), calls, num, notes, fidelity)
    if how is None:
        notes.insert(1, "one request per connection, so the connection times are the requests' times, connect "
                        "included")
        latency = _latency(text, replies, num, notes)
    else:
        latency = _request_latency(text, replies, how, num, notes, fidelity)
    if sessions := _SESSIONS.search(text):
        notes.append(f"httperf ran sessions: {sessions.group(2)} of {sessions.group(3)} done, "
                     f"{sessions.group(1)} a second; its session lifetimes and lengths are not read")
    rate = _REQ_RATE.search(text)
    return Measurement(
        tool="httperf",
        timing=Timing(duration_s=num.decimal(found[0][3], "test-duration")),
        counts=counts,
        rates=Rates(rps=num.decimal(rate.group(1), "request rate") if rate else None),
        latency=latency,
        coordinated_omission=Omission.NOT_CORRECTED,
        fidelity=fidelity,
        notes=notes,
    )


def _calls(text: str, conns: int, requests: int) -> tuple[int, str | None]:
    """The most requests a connection (or session) made, and how httperf was asked for more than
    one (None: one each), from its command line; without it, from the counts."""
    command = COMMAND.search(text)
    line = command.group(0) if command else ""
    if m := re.search(r" --wsess=\d+,(\d{1,9}),", line):
        return max(1, int(m.group(1))), f"sessions of {m.group(1)} calls (--wsess)"
    if " --wsesslog=" in line:
        return max(1, requests), "sessions from a log (--wsesslog)"
    if m := re.search(r" --num-calls=(\d{1,9})(?!\S)", line):
        calls = max(1, int(m.group(1)))
        return calls, f"{calls} calls each (--num-calls)" if calls > 1 else None
    if command is None and requests > conns:
        return requests, "several calls each"
    return 1, None


def _counts(text: str, totals: tuple[int, int, int], calls: int, num: Numbers, notes: list[str],
            fidelity: dict[str, Fidelity]) -> Counts:
    """Requests, not connections: those sent, and one for each connection that failed before
    sending any (its errors beyond the requests left without a reply)."""
    conns, requests, replies = totals
    status = [0] * 5
    if m := _STATUS.search(text):
        status = [num.integer(v, f"reply status {k}xx") for v, k in zip(m.groups(), "12345")]
    errors = {name: num.integer(n, f"errors {name}") for line in _ERRORS.findall(text)
              for name, n in _ERROR_PAIR.findall(line)}
    errors.pop("total", None)
    if replies > requests or sum(status) > replies:
        raise num.error("reply status", f"{sum(status)} replies by status, {replies} replies of {requests} requests")
    unanswered, errored = requests - replies, sum(errors.values())
    before = min(max(0, errored - unanswered), max(0, conns - math.ceil(requests / calls)))
    if before:
        fidelity["counts.requests_total"] = Fidelity.DERIVED
        notes.append(f"{before} of httperf's connections failed before sending a request: each is counted as "
                     "one failed request" + (" (the calls it would have made after it are not)" if calls > 1 else ""))
    if replies > sum(status):
        notes.append(f"{replies - sum(status)} replies have no status class in httperf's summary: failed")
    by_class = _classes(errors, unanswered + before, notes)
    total, ok = requests + before, status[1] + status[2]
    return Counts(requests_total=total, requests_ok=ok, requests_failed=total - ok,
                  failures=Failures(connect=by_class["connect"], timeout=by_class["timeout"],
                                    reset=by_class["reset"], other=by_class["other"],
                                    http_4xx=status[3], http_5xx=status[4]))


def _classes(errors: dict[str, int], unanswered: int, notes: list[str]) -> dict[str, int]:
    """The requests left without a reply by cause. httperf counts its errors per connection:
    when they are not one per such request (a connection failing with several requests out,
    or after its last reply), the requests go to the one cause named, or to none."""
    by_class = failures.tally(errors, FAILURE_TABLE)
    errored = sum(by_class.values())
    if errored == unanswered:
        return by_class
    named = [name for name, n in by_class.items() if n]
    notes.append(f"httperf counted {errored} connection errors for {unanswered} requests without a reply: "
                 + ("all put down to its one cause" if len(named) == 1 else "their causes are not told apart"))
    return dict.fromkeys(failures.CLASSES, 0) | {named[0] if len(named) == 1 else "other": unanswered}


def _latency(text: str, replies: int, num: Numbers, notes: list[str]) -> Latency:
    """One request per connection. No reply: httperf prints zeros, which time nothing. Its
    median is not a time it measured but the middle of the 1 ms histogram bin holding it
    (stat/basic.c): with sub-millisecond times it can lie above the maximum, and is then left
    out, said in a note."""
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


def _request_latency(text: str, replies: int, how: str, num: Numbers, notes: list[str],
                     fidelity: dict[str, Fidelity]) -> Latency:
    """Several requests per connection: the requests' mean time, from the reply times; the
    connection times, which span all of a connection's requests, only in a note."""
    if (row := _CONN_TIME.search(text)) and replies:
        for v, what in zip(row.groups(), ("min", "avg", "max", "median", "stddev")):
            num.decimal(v, f"connection time {what}")
        notes.append("its connection times (min {}, avg {}, max {}, median {}, stddev {} ms) are of whole "
                     "connections of {}, not of requests: not the latency".format(*row.groups(), how))
    reply = _REPLY_TIME.search(text)
    if not replies or reply is None:
        return Latency()
    response, transfer = (num.decimal(v, f"reply time {what}") for v, what in zip(reply.groups(),
                                                                                  ("response", "transfer")))
    connect = _CONNECT.search(text)
    fidelity["latency.mean_ms"] = Fidelity.DERIVED
    notes.append("the latency's mean is httperf's mean response time plus its mean transfer time: from a "
                 "request's send to its reply's last byte, connect not included; it prints no other time per request")
    return Latency(mean_ms=response + transfer, ttfb_mean_ms=response,
                   connect_mean_ms=num.decimal(connect.group(1), "connect") if connect else None,
                   resolution_ms=RESOLUTION_MS)
