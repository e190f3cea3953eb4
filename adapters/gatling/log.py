"""Gatling's text simulation.log, of any version from 2.0 to 3.12 (layouts): tab-separated
records, one a line, the RUN record first (after any ASSERTION records).

Gatling replaces the tabs and line ends of its messages by spaces. It writes through a buffer:
a run that was killed leaves a log cut at any byte, users started and never ended. A log may
hold several runs one after the other (logs of runs put together with `cat`): each is read
alone (`part` "run1", "run2", ...) or all of them merged (`part` "all"), never mixed unasked.
Gatling 3.13 and later write a binary simulation.log, refused here by name."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from toolbench.adapters.gatling import layouts
from toolbench.adapters.gatling.layouts import Layout
from toolbench.errors import ParseError
from toolbench.record import failures, histogram
from toolbench.record.numbers import Numbers
from toolbench.record.timings import SecondTally

# "status.find.lessThan(400), but actually 404 is not less than 400" (3.4 and later),
# "status.find.in(200,...,304), but actually found 404" (2.x), "status.find.in(...), found 404" (3.x).
_HTTP = re.compile(r"(?:\bbut actually (?:found )?|, found )(\d{3})\b")
# Netty's and Gatling's exception texts to failure classes (toolbench.record.failures), first match wins.
FAILURE_TABLE: failures.Table = (
    ("timeout", ("timeout", "timed out")),
    ("connect", ("connectexception", "connection refused", "no route to host", "unresolvedaddress")),
    ("reset", ("connection reset",)),
    ("read", ("closed", "prematurely", "broken pipe", "eof")),
)
_BATCH = 65536  # requests handed to the aggregator at once
# The name of each of toolbench's own checks of a workload (adapters/gatling/workload.CHECK_PREFIX),
# which begins the message of a request that failed one: `toolbench check status: status.find.in(...`.
CHECK_MESSAGE = "toolbench check "


@dataclass
class NameTally:
    """One request name's requests: how many were OK, their times (ms -> count), KO messages."""

    ok: int = 0
    elapsed: dict[int, int] = field(default_factory=dict)
    messages: dict[str, int] = field(default_factory=dict)


@dataclass
class RunRead:
    """One RUN of the log as read: who wrote it and the span of its requests."""

    layout: Layout
    version: str
    start_ms: int
    requests: int = 0
    first_ms: int | None = None  # the earliest request start
    last_ms: int | None = None  # the latest response end


@dataclass
class Log:
    """What one simulation.log holds (or the part of it asked for), summed."""

    runs: list[RunRead] = field(default_factory=list)  # the runs read
    run_count: int = 0  # the runs the log holds, read or not
    requests: int = 0
    ok: int = 0
    messages: dict[str, int] = field(default_factory=dict)  # KO messages
    users_started: int = 0
    users_ended: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # ERROR records: a user's action that crashed
    groups: int = 0  # GROUP records: the timings of groups of requests, not read
    assertions: int = 0  # ASSERTION records: the simulation's assertions, not checked here
    extra_info: int = 0  # REQUEST records with Gatling 2's extra info columns, not read
    torn: bool = False  # the last line had no end: the log was cut while written
    times: histogram.PerRequest = field(default_factory=lambda: histogram.PerRequest("gatling"))
    tally: SecondTally | None = None
    names: dict[str, NameTally] = field(default_factory=dict)  # per request name (a workload's figures)

    @property
    def failed(self) -> int:
        return self.requests - self.ok

    @property
    def first_ms(self) -> int | None:
        return min((r.first_ms for r in self.runs if r.first_ms is not None), default=None)

    @property
    def last_ms(self) -> int | None:
        return max((r.last_ms for r in self.runs if r.last_ms is not None), default=None)

    def durations_s(self) -> list[float]:
        """Each run's span from its first request's start to its last response's end."""
        return [(r.last_ms - r.first_ms) / 1000.0 for r in self.runs
                if r.first_ms is not None and r.last_ms is not None]

    def cut_off(self) -> bool:
        return self.torn or self.users_started > self.users_ended


@dataclass
class _Batch:
    starts: list[int] = field(default_factory=list)
    times: list[int] = field(default_factory=list)
    failed: list[bool] = field(default_factory=list)


def read(path: Path, source: str | None, *, per_second: bool = False, part: str | None = None) -> Log:
    """Reads a simulation.log in one pass; anything that is not such a log is a ParseError.
    `part`: None, the log's one run (a second is an error); "runN", its Nth run; "all", every
    run, merged. With per_second, the requests' times are also tallied by the second they started in."""
    num = Numbers("gatling", source)
    _refuse_binary(path, num)
    wanted = int(part[3:]) if part and part.startswith("run") and part[3:].isdigit() else None
    log = Log(times=histogram.PerRequest("gatling", source, seconds_field="REQUEST start"),
              tally=SecondTally() if per_second else None)
    batch, layout, taken, assertions = _Batch(), None, False, 0
    for number, line in _lines(path, log):
        fields = line.split("\t")
        if fields[0] == "ASSERTION":  # a run's assertions come before its RUN record
            assertions += 1
            continue
        run = layouts.run_record(fields)
        if isinstance(run, str):
            raise num.error(f"line {number}", f"{run}, which toolbench does not read")
        if run is not None:
            log.run_count += 1
            if part is None and log.run_count > 1:
                raise num.error(f"line {number}", "a second RUN record: the log holds several runs, which "
                                                  "`toolbench parse` reads each as a result of its own")
            layout, taken = run.layout, wanted is None or wanted == log.run_count
            if taken:
                log.runs.append(RunRead(run.layout, run.version, run.start_ms))
                log.assertions += assertions
            assertions = 0
            continue
        if layout is None:
            raise num.error(f"line {number}", "the log does not begin with its RUN record")
        if taken:
            _record(fields, number, layout, num, log, batch, merged=part == "all")
    _flush(log, batch, num)
    if log.run_count == 0:
        raise num.error("simulation.log", "no RUN record: not a Gatling simulation.log")
    if wanted is not None and not log.runs:
        raise num.error("simulation.log", f"no run {wanted}: the log holds {log.run_count}")
    return log


def run_count(path: Path) -> int:
    """How many runs the log holds (its RUN records); 0 for a file that is no text log."""
    with open(path, "rb") as fh:
        if fh.read(1) == b"\x00":
            return 0
        fh.seek(0)
        return sum(1 for raw in fh if isinstance(layouts.run_record(
            raw.rstrip(b"\r\n").decode("utf-8", "replace").split("\t")), layouts.Run))


def _refuse_binary(path: Path, num: Numbers) -> None:
    with open(path, "rb") as fh:
        head = fh.read(64)
    version = layouts.binary_version(head)
    if version is not None:
        raise ParseError("gatling", layouts.binary_refusal(version), num.source)
    if b"\x00" in head:
        raise num.error("simulation.log", f"binary bytes, not the text simulation.log of {layouts.TEXT_LINES}")


def _record(fields: list[str], number: int, layout: Layout, num: Numbers, log: Log, batch: _Batch,
            merged: bool) -> None:
    kind = fields[layout.kind_at] if len(fields) > layout.kind_at else ""
    if kind == "REQUEST":
        start, took, bad = _request(fields, number, layout, num, log)
        # Merged runs may lie days apart, more than one run's seconds: their second is not kept.
        batch.starts.append(0 if merged else start)
        batch.times.append(took)
        batch.failed.append(bad)
        if len(batch.starts) >= _BATCH:
            _flush(log, batch, num)
    elif kind == "USER":
        _user(fields, number, layout, num, log)
    elif kind == "GROUP":
        log.groups += 1
    elif kind == "ERROR" and layout.kind_at == 0:
        message = "\t".join(fields[1:-1]) or fields[-1]
        log.errors[message] = log.errors.get(message, 0) + 1
    else:
        raise num.error(f"line {number}", f"not a record of the simulation.log of {layout.name}: "
                                          f"{chr(9).join(fields)[:60]!r}")


def _lines(path: Path, log: Log) -> Iterator[tuple[int, str]]:
    """The log's lines with their numbers; a last line without its end is dropped (torn)."""
    with open(path, "rb") as fh:
        number = 0
        for raw in fh:
            number += 1
            if not raw.endswith(b"\n"):
                log.torn = True
                return
            yield number, raw.rstrip(b"\r\n").decode("utf-8", "replace")


def _request(fields: list[str], number: int, layout: Layout, num: Numbers, log: Log) -> tuple[int, int, bool]:
    n = len(fields)
    # An editor that trims trailing blanks takes the " " Gatling writes for "no message" with its tab.
    trimmed = n == layout.request_fields - 1 and fields[-1] in ("OK", "KO")
    if not (n == layout.request_fields or trimmed or layout.extra_info and n > layout.request_fields):
        raise num.error(f"line {number}", f"a REQUEST record of {layout.name} has {layout.request_fields} fields, "
                                          f"this one {n}")
    start = num.integer(fields[layout.start], f"line {number} REQUEST start")
    end = num.integer(fields[layout.end], f"line {number} REQUEST end")
    for at in range(layout.start + 1, layout.end):  # Gatling 2.0 and 2.1's two times between
        num.integer(fields[at], f"line {number} REQUEST time")
    if end < start:
        raise num.error(f"line {number}", f"a request ends ({end}) before it starts ({start})")
    status = fields[layout.status]
    if status not in ("OK", "KO"):
        raise num.error(f"line {number}", f"a request's status is OK or KO, not {status[:20]!r}")
    log.extra_info += n > layout.request_fields
    log.requests += 1
    run = log.runs[-1]
    run.requests += 1
    run.first_ms = start if run.first_ms is None else min(run.first_ms, start)
    run.last_ms = end if run.last_ms is None else max(run.last_ms, end)
    # The request's name is the field before its start, in every layout.
    named = log.names.get(fields[layout.start - 1]) or log.names.setdefault(fields[layout.start - 1], NameTally())
    named.elapsed[end - start] = named.elapsed.get(end - start, 0) + 1
    if status == "OK":
        log.ok += 1
        named.ok += 1
    else:
        text = (fields[layout.status + 1].strip() if not trimmed else "") or "KO without a message"
        log.messages[text] = log.messages.get(text, 0) + 1
        named.messages[text] = named.messages.get(text, 0) + 1
    return start, end - start, status == "KO"


def _user(fields: list[str], number: int, layout: Layout, num: Numbers, log: Log) -> None:
    event = fields[layout.user_event] if len(fields) == layout.user_fields else ""
    if event not in ("START", "END"):
        raise num.error(f"line {number}", f"a USER record of {layout.name} has {layout.user_fields} fields, "
                                          "START or END in its place")
    for at in range(layout.user_event + 1, layout.user_fields):
        num.integer(fields[at], f"line {number} USER time")
    if event == "START":
        log.users_started += 1
    else:
        log.users_ended += 1


def _flush(log: Log, batch: _Batch, num: Numbers) -> None:
    if not batch.starts:
        return
    seconds = np.asarray(batch.starts, np.int64) // 1000
    took = np.asarray(batch.times, np.int64)
    log.times.add(seconds, took, np.asarray(batch.failed, bool))
    if log.tally is not None:
        try:
            log.tally.add(seconds, took)
        except ValueError as exc:
            raise num.error("REQUEST times", str(exc)) from None
    batch.starts.clear()
    batch.times.clear()
    batch.failed.clear()


def classes(log: Log) -> dict[str, int | None]:
    """The KO requests by failure class (classes_of)."""
    return classes_of(log.messages)


def classes_of(messages: dict[str, int]) -> dict[str, int | None]:
    """KO messages by failure class: one of toolbench's own checks (CHECK_MESSAGE) is `check`
    (None when none failed: whether any was asked is not in the log); else an HTTP status in
    Gatling's message (its status check failed) makes it http_4xx or http_5xx, else the
    message's words decide (FAILURE_TABLE)."""
    codes: dict[int, int] = {}
    other: dict[str, int] = {}
    checks = 0
    for message, count in messages.items():
        if message.startswith(CHECK_MESSAGE):
            checks += count
            continue
        found = _HTTP.search(message)
        if found and 100 <= int(found.group(1)) <= 599:
            code = int(found.group(1))
            codes[code] = codes.get(code, 0) + count
        else:
            other[message] = count
    tallied = failures.tally(other, FAILURE_TABLE)
    tallied["http_4xx"] = sum(n for c, n in codes.items() if 400 <= c < 500)
    tallied["http_5xx"] = sum(n for c, n in codes.items() if c >= 500)
    tallied["other"] += sum(n for c, n in codes.items() if c < 400)
    return {**tallied, "check": checks or None}
