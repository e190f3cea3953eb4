"""Locust's master-worker protocol, as Locust 2.x speaks it (locust/runners.py, rpc/,
stats.py), without importing Locust (its import monkey-patches the process for gevent).

A message is msgpack of (type, data, node_id) on a ZeroMQ DEALER socket whose identity
is the node id. Stats go up as Locust's StatsEntry.serialize() dicts: per (name, method)
the counts, the summed and extreme response times in ms, the response times rounded into
buckets, and the requests and failures per wall-clock second."""
from __future__ import annotations

import hashlib
import operator
from collections import Counter
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import msgpack

# Worker states the master knows (runners.STATE_*).
READY, SPAWNING, RUNNING, STOPPED = "ready", "spawning", "running", "stopped"
HEARTBEAT_INTERVAL_S = 1.0  # runners.HEARTBEAT_INTERVAL
REPORT_INTERVAL_S = 3.0  # runners.WORKER_REPORT_INTERVAL
# The status codes geventhttpclient's LocustUserAgent accepts (redirects are followed there;
# the engine does not follow them, and counts them as successes).
VALID_CODES = frozenset([200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 301, 302, 303, 304, 307, 308])


def encode(kind: str, data: Any, node_id: str) -> bytes:
    return msgpack.packb((kind, data, node_id))


def decode(frame: bytes) -> tuple[str, Any]:
    """(type, data) of a message from the master. Raises ValueError on anything else."""
    try:
        message = msgpack.unpackb(frame, raw=False, strict_map_key=False)
    except (ValueError, msgpack.UnpackException) as exc:
        raise ValueError(f"not a Locust message: {exc}") from None
    if not isinstance(message, (list, tuple)) or len(message) != 3 or not isinstance(message[0], str):
        raise ValueError("not a Locust message: expected (type, data, node_id)")
    return message[0], message[1]


def bucket_ms(ms: float) -> int:
    """stats.bucket_response_time: about two significant digits (147 -> 150, 3432 -> 3400)."""
    if ms < 100:
        return round(ms)
    if ms < 1000:
        return int(round(ms, -1))
    if ms < 10000:
        return int(round(ms, -2))
    return int(round(ms, -3))


def error_key(method: str, name: str, error: str) -> str:
    """stats.StatsError.create_key, for an error already in its string form."""
    return hashlib.sha256(f"{method}.{name}.{error!r}".encode("utf-8")).hexdigest()


@dataclass
class Entry:
    """One StatsEntry's share since the last report."""

    name: str
    method: str
    start_time: float
    num_requests: int = 0
    num_failures: int = 0
    total_ns: int = 0
    min_ns: int | None = None
    max_ns: int = 0
    content_length: int = 0
    last_request_timestamp: float | None = None
    response_times: Counter = field(default_factory=Counter)
    reqs_per_sec: Counter = field(default_factory=Counter)
    fails_per_sec: Counter = field(default_factory=Counter)

    def add_second(self, second: int, wall: float, latencies_ns: Any, failures: int, content_length: int) -> None:
        """The requests that ended within one wall-clock second: their response times (ns,
        failures included, as Locust logs a failed request's time too) and failure count."""
        count = len(latencies_ns)
        if not count:
            return
        # Grouped by µs in C first, then each group's midpoint rounded as Locust rounds: every
        # bucket boundary (x.5 ms, x5 ms, ...) falls on a whole µs, so a group lies on one side
        # of it. Only a time of exactly a boundary, to the ns, differs (Locust rounds it to even).
        by_us = Counter(map(operator.floordiv, latencies_ns, repeat(1000)))
        buckets = self.response_times
        for us, n in by_us.items():
            buckets[bucket_ms((us + 0.5) / 1000)] += n
        self.num_requests += count
        self.num_failures += failures
        self.total_ns += sum(latencies_ns)
        low = min(latencies_ns)
        self.min_ns = low if self.min_ns is None else min(self.min_ns, low)
        self.max_ns = max(self.max_ns, max(latencies_ns))
        self.content_length += content_length
        self.reqs_per_sec[second] += count
        if failures:
            self.fails_per_sec[second] += failures
        self.last_request_timestamp = wall

    def serialize(self) -> dict[str, Any]:
        """StatsEntry.serialize(): the StatsEntryDict keys, times in ms."""
        return {
            "name": self.name, "method": self.method,
            "last_request_timestamp": self.last_request_timestamp, "start_time": self.start_time,
            "num_requests": self.num_requests, "num_none_requests": 0, "num_failures": self.num_failures,
            "total_response_time": self.total_ns / 1e6, "max_response_time": self.max_ns / 1e6,
            "min_response_time": self.min_ns / 1e6 if self.min_ns is not None else None,
            "total_content_length": self.content_length,
            "response_times": dict(self.response_times),
            "num_reqs_per_sec": dict(self.reqs_per_sec), "num_fail_per_sec": dict(self.fails_per_sec),
        }


@dataclass
class Report:
    """What the worker has to say at its next stats message: one entry (the engine sends one
    request), the same again as the total, and the errors by their text."""

    name: str
    method: str
    entry: Entry
    errors: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def empty(cls, name: str, method: str, now: float) -> "Report":
        return cls(name, method, Entry(name, method, now))

    def error(self, text: str, occurrences: int, wall: float) -> None:
        key = error_key(self.method, self.name, text)
        known = self.errors.get(key)
        if known is None:
            self.errors[key] = {"method": self.method, "name": self.name, "error": text,
                                "occurrences": occurrences, "first_seen": wall, "last_seen": wall}
        else:
            known["occurrences"] += occurrences
            known["last_seen"] = wall

    def message(self, users: dict[str, int]) -> dict[str, Any]:
        entry = self.entry.serialize()
        total = dict(entry, name="Aggregated", method="")
        used = self.entry.num_requests or self.entry.num_failures
        return {"stats": [entry] if used else [], "stats_total": total, "errors": self.errors,
                "user_classes_count": dict(users), "user_count": sum(users.values())}
