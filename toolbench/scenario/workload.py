"""A workload: several named requests a virtual user sends in order or as a weighted mix, with
variables from a CSV data file and from earlier responses, think time, checks on each response,
and a load profile in stages. What `workload:` in a scenario reads into (instead of `request:`),
and what each adapter translates into its tool's own form, or declares it cannot
(toolbench.contract.workload).

The types here are the interface between the scenario boundary, the plan and the adapters; they
hold only values already checked (names, paths, header values, variables all defined)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# What a workload can ask of a tool, each declared per adapter as honoured, approximated or
# unsupported. Every tool sends the requests themselves (method, path, query, headers, body).
FEATURES = ("sequence", "mix", "data", "extract", "think", "checks", "stages", "per_request")
FEATURE_TEXT = {
    "sequence": "requests in order per user",
    "mix": "a weighted mix of requests",
    "data": "variables from a CSV data file",
    "extract": "a value taken from a response and sent later",
    "think": "think time between requests",
    "checks": "checks on each response",
    "stages": "a load profile in stages",
    "per_request": "figures per request name",
}
ORDERS = ("sequence", "mix")
DATA_PER = ("user", "iteration")  # each user takes the next row once, or each iteration does
DATA_AT_END = ("recycle", "stop")  # after the last row: start again, or the user stops
# `${name}` in a path, query value, header value or body: a data column or an extracted value.
VARIABLE = re.compile(r"\$\{([a-z][a-z0-9_]{0,31})\}")
REQUEST_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
# The JSON paths a check or an extractor may use: `$`, then `.key` or `[index]` steps.
JSON_PATH = re.compile(r"^\$((\.[A-Za-z_][A-Za-z0-9_]{0,63})|(\[[0-9]{1,6}\]))*$")


@dataclass(frozen=True)
class Extract:
    """One variable taken from a response body: exactly one of `json_path` (the value at that
    path, as text) or `regex` (group 1 of its first match). A response it cannot be taken from
    fails with the `check` class when the request has checks, and leaves the variable unset."""

    variable: str
    json_path: str | None = None
    regex: str | None = None


@dataclass(frozen=True)
class Checks:
    """What a response must be to count as ok; a response that fails any is a `check` failure
    (toolbench.record.schema.Failures.check). Unset: not checked. Without `status`, a 2xx or 3xx
    status is ok, as without checks."""

    status: tuple[int, ...] = ()
    contains: str | None = None  # a substring of the body
    json_path: str | None = None  # with json_equals: the value at this path equals it
    json_equals: str | int | float | bool | None = None
    max_bytes: int | None = None  # the body is at most this long


@dataclass(frozen=True)
class WorkloadRequest:
    name: str  # REQUEST_NAME; the key of its figures (Measurement.by_request)
    method: str = "GET"
    path: str = "/"  # may hold ${variables}; never the query
    query: dict[str, str] = field(default_factory=dict)  # values may hold ${variables}
    headers: dict[str, str] = field(default_factory=dict)  # values may hold ${variables}
    body: str | None = None  # inline, or the text of `body_file`, read at the boundary
    body_file: str | None = None  # as the scenario gave it (relative to the scenario's folder)
    weight: float = 1.0  # mix only: its share is weight / the sum of weights
    extract: tuple[Extract, ...] = ()
    checks: Checks | None = None

    def variables(self) -> frozenset[str]:
        """The ${variables} this request sends."""
        texts = [self.path, *self.query.values(), *self.headers.values(), self.body or ""]
        return frozenset(m.group(1) for text in texts for m in VARIABLE.finditer(text))


@dataclass(frozen=True)
class DataFile:
    """A CSV file with a header row; each column is a variable. Read and checked at the boundary."""

    path: str  # absolute, under the scenario's folder
    given: str  # as the scenario gave it
    columns: tuple[str, ...]
    rows: int
    per: str = "user"  # DATA_PER
    at_end: str = "recycle"  # DATA_AT_END


@dataclass(frozen=True)
class ThinkTime:
    """A pause before each request after a user's first: `min_s` when constant, else uniform
    between the two."""

    min_s: float
    max_s: float

    @property
    def constant(self) -> bool:
        return self.min_s == self.max_s


@dataclass(frozen=True)
class Stage:
    """Over `duration_s`, the load moves linearly from where the previous stage ended (the first
    from 0) to this one's `users` (closed model) or `rate_rps` (open model); exactly one is set,
    the same one in every stage. A stage that keeps the previous level is a hold."""

    duration_s: float
    users: int | None = None
    rate_rps: float | None = None


@dataclass(frozen=True)
class Workload:
    order: str  # ORDERS: each user runs the requests in order, looping; or each iteration picks one by weight
    requests: tuple[WorkloadRequest, ...]
    data: DataFile | None = None
    think: ThinkTime | None = None
    stages: tuple[Stage, ...] = ()

    def features(self) -> frozenset[str]:
        """The FEATURES this workload asks for (per_request whenever it has several requests)."""
        asked = {self.order}
        if self.data is not None:
            asked.add("data")
        if any(r.extract for r in self.requests):
            asked.add("extract")
        if self.think is not None:
            asked.add("think")
        if any(r.checks is not None for r in self.requests):
            asked.add("checks")
        if self.stages:
            asked.add("stages")
        if len(self.requests) > 1:
            asked.add("per_request")
        return frozenset(asked)

    @property
    def duration_s(self) -> float | None:
        """The stages' whole length; None without stages."""
        return sum(s.duration_s for s in self.stages) if self.stages else None

    @property
    def peak_users(self) -> int | None:
        return max((s.users or 0 for s in self.stages), default=None) if self.stages and self.stages[0].users is not None else None

    @property
    def peak_rate_rps(self) -> float | None:
        return max(s.rate_rps or 0.0 for s in self.stages) if self.stages and self.stages[0].rate_rps is not None else None
