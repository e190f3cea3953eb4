"""A workload (toolbench.scenario.workload) as the literal requests a tool without variables of
its own sends (vegeta's targets, siege's URL file): each `${variable}` filled from one row of the
data file, the query encoded, and a mix's weights as a cycle of request indexes in proportion.

Values reach the URL only percent-encoded (a data value with `/`, `?` or a space stays one path
segment or one query value) and a header only without control characters (no value can start a
header of its own); a body is sent as the filled text."""
from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import reduce
from typing import Mapping
from urllib.parse import quote, urlencode

from toolbench.errors import AdapterError
from toolbench.scenario.workload import VARIABLE, DataFile, Workload, WorkloadRequest

MAX_ROWS = 100_000  # rows of a data file a tool's literal requests are made from
MAX_CYCLE = 1000  # requests in one cycle of a mix: weights that need more are not in proportion


@dataclass(frozen=True)
class Literal:
    """One request as sent: every variable filled."""

    name: str
    method: str
    url: str
    headers: dict[str, str]
    body: str | None


def read_rows(data: DataFile, limit: int = MAX_ROWS) -> list[dict[str, str]]:
    """The data file's rows, each a column -> value mapping (the header row names the columns)."""
    try:
        with open(data.path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            rows = []
            for row in reader:
                if len(rows) == limit:
                    raise AdapterError(f"{data.given}: more than {limit} rows, more than toolbench turns into "
                                       "literal requests")
                rows.append({col: row.get(col) or "" for col in data.columns})
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise AdapterError(f"{data.given}: cannot read the data file: {exc}") from None
    if not rows:
        raise AdapterError(f"{data.given}: no rows after the header")
    return rows


def fill(text: str, values: Mapping[str, str], encode: bool = False) -> str:
    """`text` with each ${name} replaced by its value (percent-encoded when `encode`); a variable
    without a value (an extracted one, which these tools never have) becomes empty."""
    def value(match: re.Match[str]) -> str:
        got = values.get(match.group(1), "")
        return quote(got, safe="") if encode else got
    return VARIABLE.sub(value, text)


def _header_value(text: str) -> str:
    return "".join(ch for ch in text if ch == "\t" or not (ord(ch) < 32 or ord(ch) == 127))


def literal(req: WorkloadRequest, base_url: str, values: Mapping[str, str]) -> Literal:
    url = base_url.rstrip("/") + fill(req.path, values, encode=True)
    if req.query:
        url += "?" + urlencode([(k, fill(v, values)) for k, v in req.query.items()])
    headers = {k: _header_value(fill(v, values)) for k, v in req.headers.items()}
    body = fill(req.body, values) if req.body is not None else None
    return Literal(req.name, req.method, url, headers, body)


def whole_weights(requests: tuple[WorkloadRequest, ...], precision: int, cap: int, tool: str) -> list[int]:
    """The weights as whole numbers in the same proportion (to 1/`precision` of each), in smallest
    terms; beyond `cap` in all, rounded to about `cap`, each at least once (for the tools that take
    whole weights: Locust's task weights, JMeter's sampler copies)."""
    fractions = [Fraction(r.weight).limit_denominator(precision) for r in requests]
    if any(f <= 0 for f in fractions):
        raise AdapterError(f"{tool}: a request's weight must be positive")
    scale = math.lcm(*(f.denominator for f in fractions))
    whole = [int(f * scale) for f in fractions]
    common = math.gcd(*whole)
    whole = [w // common for w in whole]
    if sum(whole) > cap:
        total = sum(whole)
        whole = [max(1, round(w * cap / total)) for w in whole]
    return whole


def common_headers(workload: Workload) -> dict[str, str] | None:
    """The one set of headers every request sends; None when they differ (for the tools that send
    one set with every URL: siege's -H, httperf's --add-header)."""
    sets = {tuple(sorted(r.headers.items())) for r in workload.requests}
    return dict(sets.pop()) if len(sets) == 1 else None


def cycle(requests: tuple[WorkloadRequest, ...], bound: int = MAX_CYCLE) -> list[int] | None:
    """A mix as one cycle of request indexes, each as often as its weight says, interleaved (smooth
    weighted round-robin: no request waits a whole cycle); None when the weights are not in
    proportion in `bound` requests."""
    shares = [Fraction(r.weight).limit_denominator(bound) for r in requests]
    if any(s <= 0 or not math.isclose(float(s), r.weight, rel_tol=1e-9) for s, r in zip(shares, requests)):
        return None
    denominator = reduce(math.lcm, (s.denominator for s in shares))
    counts = [int(s * denominator) for s in shares]
    divisor = reduce(math.gcd, counts)
    counts = [c // divisor for c in counts]
    if sum(counts) > bound:
        return None
    order, current, total = [], [0] * len(counts), sum(counts)
    for _ in range(total):
        current = [c + w for c, w in zip(current, counts)]
        pick = max(range(len(counts)), key=lambda i: current[i])
        current[pick] -= total
        order.append(pick)
    return order


def literals(workload: Workload, base_url: str, limit: int) -> list[Literal]:
    """The requests in the order a tool that sends a list in turn is to send them: the sequence (or
    the mix's cycle) once per data row, or once without data. Raises AdapterError past `limit`."""
    order = list(range(len(workload.requests)))
    if workload.order == "mix":
        mixed = cycle(workload.requests)
        if mixed is None:
            raise AdapterError(f"the mix's weights are not in proportion within {MAX_CYCLE} requests")
        order = mixed
    rows: list[dict[str, str]] = read_rows(workload.data) if workload.data is not None else [{}]
    if len(rows) * len(order) > limit:
        raise AdapterError(f"{len(rows)} data rows of {len(order)} requests each: more than the {limit} "
                           "literal requests toolbench writes for one cell")
    return [literal(workload.requests[i], base_url, row) for row in rows for i in order]
