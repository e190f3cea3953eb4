"""Gatling's simulation.log of the 3.x lines up to 3.10: tab-separated text records, one a line.

The writer (io.gatling.core.stats.writer.LogFileDataWriter of 3.10) writes, each record's
first field its kind:
- `RUN  <simulation class> <simulation id> <start, epoch ms> <description or " "> <version>`;
- `USER <scenario> START|END <epoch ms>`;
- `REQUEST <groups> <name> <start> <end> OK|KO <message or " ">`, times in epoch ms;
- `GROUP ...`, `ERROR <message> <epoch ms>` (a user's action that crashed) and
  `ASSERTION <base64>`.
Its messages have their tabs and line ends replaced by spaces. It writes through an 8 KiB
buffer: a run that was killed leaves a log cut at any byte, users started and never ended.
Gatling 3.11 and later write a binary simulation.log, refused here by name."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from toolbench.record import failures, histogram
from toolbench.record.numbers import Numbers
from toolbench.record.timings import SecondTally

# A log of the text format begins with this record (after any ASSERTION records).
# The version is `\d+\.\d[\w.-]*`, the same as `\d+\.\d+[\w.-]*` without two repetitions that can
# share its digits: a long version that fails at its end would be tried split at each of them.
RUN = re.compile(r"RUN\t[^\t\n]*\t[^\t\n]*\t\d{1,20}\t[^\t\n]*\t(\d+\.\d[\w.-]*)\r?$")
_HTTP = re.compile(r"\bbut actually (?:found )?(\d{3})\b")  # "status.find.lessThan(400), but actually 404 is not less than 400"
# Netty's and Gatling's exception texts to failure classes (toolbench.record.failures), first match wins.
FAILURE_TABLE: failures.Table = (
    ("timeout", ("timeout", "timed out")),
    ("connect", ("connectexception", "connection refused", "no route to host", "unresolvedaddress")),
    ("reset", ("connection reset",)),
    ("read", ("closed", "prematurely", "broken pipe", "eof")),
)
_KINDS = (b"RUN\t", b"ASSERTION\t", b"USER\t", b"REQUEST\t", b"GROUP\t", b"ERROR\t")
_BATCH = 65536  # requests handed to the aggregator at once


@dataclass
class Log:
    """What one simulation.log holds, summed."""

    version: str | None = None
    run_start_ms: int | None = None
    requests: int = 0
    ok: int = 0
    first_ms: int | None = None  # the earliest request start
    last_ms: int | None = None  # the latest request end
    messages: dict[str, int] = field(default_factory=dict)  # KO messages
    users_started: int = 0
    users_ended: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # ERROR records: a user's action that crashed
    torn: bool = False  # the last line had no end: the log was cut while written
    times: histogram.PerRequest = field(default_factory=lambda: histogram.PerRequest("gatling"))
    tally: SecondTally | None = None

    @property
    def failed(self) -> int:
        return self.requests - self.ok

    def cut_off(self) -> bool:
        return self.torn or self.users_started > self.users_ended


def read(path: Path, source: str | None, *, per_second: bool = False) -> Log:
    """Reads a simulation.log in one pass; anything that is not such a log is a ParseError.
    With per_second, the requests' times are also tallied by the second they started in."""
    num = Numbers("gatling", source)
    log = Log(times=histogram.PerRequest("gatling", source, seconds_field="REQUEST start"),
              tally=SecondTally() if per_second else None)
    starts: list[int] = []
    times: list[int] = []
    failed: list[bool] = []
    with open(path, "rb") as fh:
        head = fh.read(64)
    if b"\x00" in head or (head and not head.startswith(_KINDS)):
        raise num.error("simulation.log", "not the text log of Gatling 3.10 or earlier (3.11 and later "
                                          "write a binary simulation.log, which toolbench does not read)")
    for number, line in _lines(path, log):
        kind, _, rest = line.partition("\t")
        if kind == "REQUEST":
            start, took, bad = _request(rest, number, num, log)
            starts.append(start)
            times.append(took)
            failed.append(bad)
            if len(starts) >= _BATCH:
                _flush(log, starts, times, failed, num)
        elif kind == "USER":
            _user(rest, number, num, log)
        elif kind == "RUN":
            if log.version is not None:
                raise num.error(f"line {number}", "a second RUN record: not the log of one run")
            match = RUN.fullmatch(line)
            if match is None:
                raise num.error(f"line {number}", "a RUN record without its class, id, start and version")
            log.version = match.group(1)
            log.run_start_ms = num.integer(line.split("\t")[3], f"line {number} RUN start")
        elif kind == "ERROR":
            message = rest.rpartition("\t")[0] or rest
            log.errors[message] = log.errors.get(message, 0) + 1
        elif kind not in ("GROUP", "ASSERTION"):
            raise num.error(f"line {number}", f"not a record of a Gatling simulation.log: {line[:60]!r}")
        if log.version is None and kind != "ASSERTION":
            raise num.error(f"line {number}", "the log does not begin with its RUN record")
    _flush(log, starts, times, failed, num)
    if log.version is None:
        raise num.error("simulation.log", "no RUN record: not a Gatling simulation.log")
    return log


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


def _request(rest: str, number: int, num: Numbers, log: Log) -> tuple[int, int, bool]:
    fields = rest.split("\t")
    if len(fields) != 6:
        raise num.error(f"line {number}", f"a REQUEST record has 7 fields, this one {len(fields) + 1}")
    _groups, _name, start_text, end_text, status, message = fields
    start = num.integer(start_text, f"line {number} REQUEST start")
    end = num.integer(end_text, f"line {number} REQUEST end")
    if end < start:
        raise num.error(f"line {number}", f"a request ends ({end}) before it starts ({start})")
    if status not in ("OK", "KO"):
        raise num.error(f"line {number}", f"a request's status is OK or KO, not {status[:20]!r}")
    log.requests += 1
    log.first_ms = start if log.first_ms is None else min(log.first_ms, start)
    log.last_ms = end if log.last_ms is None else max(log.last_ms, end)
    if status == "OK":
        log.ok += 1
    else:
        text = message.strip() or "KO without a message"
        log.messages[text] = log.messages.get(text, 0) + 1
    return start, end - start, status == "KO"


def _user(rest: str, number: int, num: Numbers, log: Log) -> None:
    fields = rest.split("\t")
    if len(fields) != 3 or fields[1] not in ("START", "END"):
        raise num.error(f"line {number}", "a USER record is USER, scenario, START or END, time")
    num.integer(fields[2], f"line {number} USER time")
    if fields[1] == "START":
        log.users_started += 1
    else:
        log.users_ended += 1


def _flush(log: Log, starts: list[int], times: list[int], failed: list[bool], num: Numbers) -> None:
    if not starts:
        return
    seconds = np.asarray(starts, np.int64) // 1000
    took = np.asarray(times, np.int64)
    log.times.add(seconds, took, np.asarray(failed, bool))
    if log.tally is not None:
        try:
            log.tally.add(seconds, took)
        except ValueError as exc:
            raise num.error("REQUEST times", str(exc)) from None
    starts.clear()
    times.clear()
    failed.clear()


def classes(log: Log) -> dict[str, int]:
    """The KO requests by failure class: an HTTP status in Gatling's message (its check failed)
    makes it http_4xx or http_5xx, else the message's words decide (FAILURE_TABLE)."""
    codes: dict[int, int] = {}
    other: dict[str, int] = {}
    for message, count in log.messages.items():
        found = _HTTP.search(message)
        if found and 100 <= int(found.group(1)) <= 599:
            code = int(found.group(1))
            codes[code] = codes.get(code, 0) + count
        else:
            other[message] = count
    by_class = failures.tally(other, FAILURE_TABLE)
    by_class["http_4xx"] = sum(n for c, n in codes.items() if 400 <= c < 500)
    by_class["http_5xx"] = sum(n for c, n in codes.items() if c >= 500)
    by_class["other"] += sum(n for c, n in codes.items() if c < 400)
    return by_class
