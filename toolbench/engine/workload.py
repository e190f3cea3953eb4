"""A workload as the engine runs it (`--workload FILE`): several named requests per virtual user,
in order or as a weighted mix, with data rows, extracted values, think time, checks and stages.

The engine may not import toolbench.scenario, so the adapter (toolbench.adapters.engine) writes the
scenario's Workload as a JSON file (`to_json` there, `load` here), the data file's rows inlined so
that the file alone is enough on a remote generator. The file is untrusted input like a scenario:
read strictly (an unknown key, a wrong type or a value out of bounds is an EngineError naming
it), with every size capped.

The file's form (version 1), every key required unless marked optional:
  {"version": 1, "order": "sequence"|"mix", "seed": int (optional),
   "requests": [{"name", "method", "path", "query": {k: v}, "headers": {k: v}, "body": str|null,
                 "weight": number, "extract": [{"variable", "json_path"|"regex"}],
                 "checks": null | {"status": [int], "contains", "json_path", "json_equals", "max_bytes"}}],
   "data": null | {"columns": [str], "rows": [[str]], "per": "user"|"iteration", "at_end": "recycle"|"stop"},
   "think": null | {"min_s", "max_s"},
   "stages": [{"duration_s", "users"|"rate_rps"}]}"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolbench.engine.options import EngineError

VERSION = 1
MAX_FILE_BYTES = 32 << 20
MAX_REQUESTS = 64
MAX_ROWS = 200_000
MAX_COLUMNS = 32
MAX_STAGES = 100
MAX_TEXT = 8192  # a path, a header or query value, a check's text, a regex
MAX_BODY = 1 << 20
MAX_ITEMS = 64  # headers, query parameters, extractors of one request
MAX_STAGE_S = 7 * 86400.0
# The same forms as toolbench.scenario.workload (which the engine may not import).
VARIABLE = re.compile(r"\$\{([a-z][a-z0-9_]{0,31})\}")
_VARIABLE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_REQUEST_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_JSON_PATH = re.compile(r"^\$((\.[A-Za-z_][A-Za-z0-9_]{0,63})|(\[[0-9]{1,6}\]))*$")
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$")
_PATH = re.compile(r"^/[\x21-\x7e]*$")  # printable, no space: what a request line can carry


@dataclass(frozen=True)
class Extract:
    variable: str
    json_path: str | None = None
    regex: re.Pattern[str] | None = None


@dataclass(frozen=True)
class Checks:
    status: tuple[int, ...] = ()
    contains: str | None = None
    json_path: str | None = None
    json_equals: str | int | float | bool | None = None
    max_bytes: int | None = None


@dataclass(frozen=True)
class Request:
    name: str
    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    headers: tuple[tuple[str, str], ...]
    body: str | None
    weight: float
    extract: tuple[Extract, ...]
    checks: Checks | None

    @property
    def keeps_body(self) -> bool:
        """Whether its response's body is read for an extractor or a check (else only counted)."""
        return bool(self.extract) or (self.checks is not None and (
            self.checks.contains is not None or self.checks.json_path is not None))


@dataclass(frozen=True)
class Data:
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    per: str  # user | iteration
    at_end: str  # recycle | stop


@dataclass(frozen=True)
class Stage:
    duration_s: float
    users: int | None = None
    rate_rps: float | None = None


@dataclass(frozen=True)
class WorkloadSpec:
    order: str  # sequence | mix
    requests: tuple[Request, ...]
    data: Data | None = None
    think: tuple[float, float] | None = None  # (min_s, max_s)
    stages: tuple[Stage, ...] = ()
    seed: int = 1

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.requests)

    @property
    def duration_s(self) -> float | None:
        return sum(s.duration_s for s in self.stages) if self.stages else None

    @property
    def open_stages(self) -> bool:
        return bool(self.stages) and self.stages[0].rate_rps is not None

    @property
    def peak_users(self) -> int | None:
        return max(s.users or 0 for s in self.stages) if self.stages and not self.open_stages else None

    @property
    def peak_rate_rps(self) -> float | None:
        return max(s.rate_rps or 0.0 for s in self.stages) if self.open_stages else None


def load(path: Path) -> WorkloadSpec:
    """The workload in `path`; an EngineError naming what is wrong with it."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise EngineError(f"--workload {path}: {exc.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise EngineError(f"--workload {path}: larger than {MAX_FILE_BYTES >> 20} MiB")
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise EngineError(f"--workload {path}: not a JSON workload: {exc}") from None
    return from_dict(data, f"--workload {path}")


def from_dict(data: Any, where: str = "workload") -> WorkloadSpec:
    d = _object(data, where, ("version", "order", "requests", "data", "think", "stages"), ("seed",))
    if d["version"] != VERSION or isinstance(d["version"], bool):
        raise EngineError(f"{where}: version {d['version']!r}, expected {VERSION}")
    order = _choice(d["order"], ("sequence", "mix"), f"{where}: order")
    items = _list(d["requests"], f"{where}: requests", MAX_REQUESTS)
    if not items:
        raise EngineError(f"{where}: requests: none given")
    requests = tuple(_request(item, f"{where}: requests[{i}]") for i, item in enumerate(items))
    if len({r.name for r in requests}) != len(requests):
        raise EngineError(f"{where}: requests: two requests with the same name")
    if order == "mix" and not sum(r.weight for r in requests) > 0:
        raise EngineError(f"{where}: requests: a mix needs a positive weight")
    given_stages = _list(d["stages"], f"{where}: stages", MAX_STAGES)
    stages = tuple(_stage(s, f"{where}: stages[{i}]") for i, s in enumerate(given_stages))
    if stages and len({s.users is None for s in stages}) != 1:
        raise EngineError(f"{where}: stages: every stage gives users, or every stage gives rate_rps")
    return WorkloadSpec(order=order, requests=requests, data=_data(d["data"], f"{where}: data"),
                        think=_think(d["think"], f"{where}: think"), stages=stages,
                        seed=_int(d.get("seed", 1), f"{where}: seed", 0, 2**63 - 1))


def _request(data: Any, where: str) -> Request:
    d = _object(data, where, ("name", "method", "path", "query", "headers", "body", "weight", "extract", "checks"))
    name = _text(d["name"], f"{where}: name", _REQUEST_NAME)
    method = _text(d["method"], f"{where}: method", _TOKEN)
    path = _text(d["path"], f"{where}: path", _PATH)
    if "?" in path or "#" in path:
        raise EngineError(f"{where}: path: the query goes in `query`, not the path")
    query = tuple((_text(k, f"{where}: query key", max_len=256), _text(v, f"{where}: query[{k!r}]"))
                  for k, v in _object(d["query"], f"{where}: query", None).items())
    headers = tuple((_text(k, f"{where}: header name", _TOKEN), _header_value(v, f"{where}: headers[{k!r}]"))
                    for k, v in _object(d["headers"], f"{where}: headers", None).items())
    body = None if d["body"] is None else _text(d["body"], f"{where}: body", max_len=MAX_BODY)
    weight = _number(d["weight"], f"{where}: weight", 0.0, 1e9)
    extractors = _list(d["extract"], f"{where}: extract", MAX_ITEMS)
    extract = tuple(_extract(e, f"{where}: extract[{i}]") for i, e in enumerate(extractors))
    return Request(name, method, path, query, headers, body, weight, extract, _checks(d["checks"], f"{where}: checks"))


def _extract(data: Any, where: str) -> Extract:
    d = _object(data, where, ("variable",), ("json_path", "regex"))
    variable = _text(d["variable"], f"{where}: variable", _VARIABLE_NAME)
    if ("json_path" in d) == ("regex" in d):
        raise EngineError(f"{where}: give exactly one of json_path or regex")
    if "json_path" in d:
        return Extract(variable, json_path=_text(d["json_path"], f"{where}: json_path", _JSON_PATH))
    text = _text(d["regex"], f"{where}: regex")
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise EngineError(f"{where}: regex: {exc}") from None
    if pattern.groups < 1:
        raise EngineError(f"{where}: regex: needs a group: its group 1 is the value")
    return Extract(variable, regex=pattern)


def _checks(data: Any, where: str) -> Checks | None:
    if data is None:
        return None
    d = _object(data, where, (), ("status", "contains", "json_path", "json_equals", "max_bytes"))
    status = tuple(_int(s, f"{where}: status", 100, 599) for s in _list(d.get("status", []), f"{where}: status", 64))
    contains = None if d.get("contains") is None else _text(d["contains"], f"{where}: contains")
    json_path = None if d.get("json_path") is None else _text(d["json_path"], f"{where}: json_path", _JSON_PATH)
    equals = d.get("json_equals")
    if equals is not None and not isinstance(equals, (str, int, float, bool)):
        raise EngineError(f"{where}: json_equals: a string, number or boolean, not {type(equals).__name__}")
    if isinstance(equals, str):
        _text(equals, f"{where}: json_equals")
    if (json_path is None) != ("json_equals" not in d):
        raise EngineError(f"{where}: json_path and json_equals go together")
    max_bytes = None if d.get("max_bytes") is None else _int(d["max_bytes"], f"{where}: max_bytes", 0, 1 << 40)
    return Checks(status, contains, json_path, equals, max_bytes)


def _data(data: Any, where: str) -> Data | None:
    if data is None:
        return None
    d = _object(data, where, ("columns", "rows", "per", "at_end"))
    names = _list(d["columns"], f"{where}: columns", MAX_COLUMNS)
    columns = tuple(_text(c, f"{where}: columns", _VARIABLE_NAME) for c in names)
    if not columns or len(set(columns)) != len(columns):
        raise EngineError(f"{where}: columns: none, or one named twice")
    rows = []
    for i, row in enumerate(_list(d["rows"], f"{where}: rows", MAX_ROWS)):
        cells = tuple(_text(c, f"{where}: rows[{i}]") for c in _list(row, f"{where}: rows[{i}]", MAX_COLUMNS))
        if len(cells) != len(columns):
            raise EngineError(f"{where}: rows[{i}]: {len(cells)} values for {len(columns)} columns")
        rows.append(cells)
    if not rows:
        raise EngineError(f"{where}: rows: none given")
    return Data(columns, tuple(rows), _choice(d["per"], ("user", "iteration"), f"{where}: per"),
                _choice(d["at_end"], ("recycle", "stop"), f"{where}: at_end"))


def _think(data: Any, where: str) -> tuple[float, float] | None:
    if data is None:
        return None
    d = _object(data, where, ("min_s", "max_s"))
    low, high = _number(d["min_s"], f"{where}: min_s", 0.0, 3600.0), _number(d["max_s"], f"{where}: max_s", 0.0, 3600.0)
    if high < low:
        raise EngineError(f"{where}: max_s {high:g} is below min_s {low:g}")
    return low, high


def _stage(data: Any, where: str) -> Stage:
    d = _object(data, where, ("duration_s",), ("users", "rate_rps"))
    if ("users" in d) == ("rate_rps" in d):
        raise EngineError(f"{where}: give exactly one of users or rate_rps")
    duration = _number(d["duration_s"], f"{where}: duration_s", 0.0, MAX_STAGE_S)
    if not duration > 0:
        raise EngineError(f"{where}: duration_s must be positive")
    if "users" in d:
        return Stage(duration, users=_int(d["users"], f"{where}: users", 0, 1_000_000))
    return Stage(duration, rate_rps=_number(d["rate_rps"], f"{where}: rate_rps", 0.0, 10_000_000.0))


# ---- strict readers ----

def _object(data: Any, where: str, required: tuple[str, ...] | None, optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """`data` as a JSON object with exactly these keys (required: None, any keys, at most MAX_ITEMS)."""
    if not isinstance(data, dict):
        raise EngineError(f"{where}: expected an object, got {type(data).__name__}")
    if required is None:
        if len(data) > MAX_ITEMS:
            raise EngineError(f"{where}: more than {MAX_ITEMS} entries")
        return data
    unknown = sorted(set(data) - set(required) - set(optional))
    if unknown:
        raise EngineError(f"{where}: unknown key {unknown[0]!r}")
    missing = [k for k in required if k not in data]
    if missing:
        raise EngineError(f"{where}: missing {missing[0]!r}")
    return data


def _list(data: Any, where: str, most: int) -> list[Any]:
    if not isinstance(data, list):
        raise EngineError(f"{where}: expected a list, got {type(data).__name__}")
    if len(data) > most:
        raise EngineError(f"{where}: more than {most} entries")
    return data


def _text(data: Any, where: str, form: re.Pattern[str] | None = None, max_len: int = MAX_TEXT) -> str:
    if not isinstance(data, str):
        raise EngineError(f"{where}: expected a string, got {type(data).__name__}")
    if len(data) > max_len:
        raise EngineError(f"{where}: longer than {max_len} characters")
    if form is not None and not form.match(data):
        raise EngineError(f"{where}: {data[:80]!r} is not of the expected form")
    return data


def _header_value(data: Any, where: str) -> str:
    text = _text(data, where)
    if any(c in text for c in "\r\n\0"):
        raise EngineError(f"{where}: a header value cannot hold a line break or NUL")
    return text


def _choice(data: Any, choices: tuple[str, ...], where: str) -> str:
    if data not in choices or not isinstance(data, str):
        raise EngineError(f"{where}: {data!r}, expected one of {', '.join(choices)}")
    return data


def _int(data: Any, where: str, low: int, high: int) -> int:
    if isinstance(data, bool) or not isinstance(data, int) or not low <= data <= high:
        raise EngineError(f"{where}: {data!r}, expected a whole number from {low} to {high}")
    return data


def _number(data: Any, where: str, low: float, high: float) -> float:
    if isinstance(data, bool) or not isinstance(data, (int, float)) or not math.isfinite(data) \
            or not low <= data <= high:
        raise EngineError(f"{where}: {data!r}, expected a number from {low:g} to {high:g}")
    return float(data)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")
