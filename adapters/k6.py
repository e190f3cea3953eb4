"""Grafana k6, read-only: toolbench never runs it (its licence, AGPL-3.0, rules it out for
this project), but reads what a k6 user already has, so k6 results can stand beside the
others: the end-of-test summary (`--summary-export`, or handleSummary's JSON with
`values`) and the per-request points of `--out json`.

What k6 is, and what follows for its results:
- its times are float milliseconds; `http_req_duration` is the request without the
  connection set-up (`http_req_blocked`), as k6 defines it;
- `http_req_failed` is a rate whose `passes` are the failed requests (the rate is true for
  a failure) and `fails` the others;
- the summary holds avg, min, med, max and the percentiles asked for (`p(90)`, `p(95)`
  by default): others are absent, never guessed."""
from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolbench.contract.adapter import Adapter, Detection, Found, Invocation, Missing, RawOutput, Support
from toolbench.contract.recipe import Install
from toolbench.errors import AdapterError, ParseError
from toolbench.record import histogram
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Counts, Fidelity, Latency, Measurement, Percentiles, Rates, Timing, Transfer

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Host

WHY = "k6 is read-only here: its licence (AGPL-3.0) rules it out for this project; `toolbench parse` reads its output"
_PCTS = {"med": "p50_ms", "p(50)": "p50_ms", "p(66)": "p66_ms", "p(75)": "p75_ms", "p(80)": "p80_ms",
         "p(90)": "p90_ms", "p(95)": "p95_ms", "p(98)": "p98_ms", "p(99)": "p99_ms", "p(99.9)": "p999_ms"}


class K6Adapter(Adapter):
    name = "k6"
    install = Install(impossible="never run here (AGPL-3.0)")
    read_only = True

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        return Missing(f"{path + ': ' if path else ''}{WHY}")

    def supports(self, cell: "Cell") -> Support:
        return Support(False, WHY)

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        raise AdapterError(f"k6: {WHY}")

    def classify(self, path: Path, text: str) -> str:
        head = text.lstrip()[:2000]
        if head.startswith('{"type":"Metric"') or head.startswith('{"metric":'):
            return "points"
        return "summary" if head.startswith("{") else "stdout"

    def recognizes(self, path: Path, text: str) -> bool:
        role = self.classify(path, text)
        return role == "points" or (role == "summary" and '"http_reqs"' in text and '"metrics"' in text)

    def parse(self, raw: RawOutput) -> Measurement:
        if "points" in raw.files:
            return _from_points(raw.files["points"], raw.source)
        if "summary" in raw.files:
            return _from_summary(_read(raw.files["summary"], raw.source), raw.source)
        if raw.stdout.lstrip().startswith("{"):
            return _from_summary(raw.stdout, raw.source)
        raise ParseError("k6", "no k6 summary JSON (--summary-export) and no --out json points", raw.source)


def _read(path: Path, source: str | None) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ParseError("k6", f"cannot read {path}: {exc.strerror or exc}", source) from None


def _metric(metrics: dict[str, Any], name: str, source: str | None) -> dict[str, Any] | None:
    """A metric's figures: --summary-export has them flat, handleSummary's JSON under `values`."""
    found = metrics.get(name)
    if found is None:
        return None
    if not isinstance(found, dict):
        raise ParseError("k6", f"metric {name} is not an object", source)
    values = found.get("values", found)
    if not isinstance(values, dict):
        raise ParseError("k6", f"metric {name} has no figures", source)
    return values


def _number(values: dict[str, Any] | None, key: str, what: str, source: str | None) -> float | None:
    if values is None or key not in values:
        return None
    value = values[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ParseError("k6", f"{what} {key} is not a non-negative number: {value!r}", source)
    return float(value)


def _count(values: dict[str, Any] | None, key: str, what: str, source: str | None) -> int | None:
    value = _number(values, key, what, source)
    if value is not None and not value.is_integer():
        raise ParseError("k6", f"{what} {key} is not a whole number: {value!r}", source)
    return None if value is None else int(value)


def _from_summary(text: str, source: str | None) -> Measurement:
    doc = Numbers("k6", source).loads(text, "the summary")
    metrics = doc.get("metrics") if isinstance(doc, dict) else None
    if not isinstance(metrics, dict) or "http_reqs" not in metrics:
        raise ParseError("k6", "not a k6 summary: no metrics.http_reqs", source)
    reqs = _metric(metrics, "http_reqs", source)
    total = _count(reqs, "count", "http_reqs", source)
    rate = _number(reqs, "rate", "http_reqs", source)
    failed_rate = _metric(metrics, "http_req_failed", source)
    failed = _count(failed_rate, "passes", "http_req_failed", source)  # true: the request failed
    ok = _count(failed_rate, "fails", "http_req_failed", source)
    notes = ["figures from k6's end-of-test summary: no per-request data, no status codes"]
    if failed is not None and ok is not None and total is not None and failed + ok != total:
        notes.append(f"k6's http_req_failed counts {failed + ok} requests, http_reqs {total}")
        failed = ok = None
    duration = _metric(metrics, "http_req_duration", source)
    pcts = {name: _number(duration, key, "http_req_duration", source) for key, name in _PCTS.items()
            if duration is not None and key in duration}
    return Measurement(
        tool="k6",
        timing=Timing(duration_s=total / rate if total is not None and rate else None),
        counts=Counts(requests_total=total, requests_ok=ok, requests_failed=failed),
        rates=Rates(rps=rate),
        transfer=Transfer(received_bytes=_count(_metric(metrics, "data_received", source), "count", "data_received",
                                                source),
                          sent_bytes=_count(_metric(metrics, "data_sent", source), "count", "data_sent", source)),
        latency=Latency(min_ms=_number(duration, "min", "http_req_duration", source),
                        mean_ms=_number(duration, "avg", "http_req_duration", source),
                        max_ms=_number(duration, "max", "http_req_duration", source),
                        percentiles=Percentiles(**pcts)),
        fidelity={"timing.duration_s": Fidelity.DERIVED},
        notes=notes,
        concurrency=_count(_metric(metrics, "vus_max", source), "max", "vus_max", source),
    )


def _from_points(path: Path, source: str | None) -> Measurement:
    """Every request's points: http_reqs (one each), http_req_failed (1 for a failure) and
    http_req_duration, with the status in the tags."""
    num = Numbers("k6", source)
    total, failed, durations, codes = 0, 0, [], {}
    for number, line in enumerate(_read(path, source).splitlines(), 1):
        if not line.strip():
            continue
        doc = num.loads(line, f"line {number}")
        if not isinstance(doc, dict) or doc.get("type") != "Point":
            continue
        data = doc.get("data")
        value = data.get("value") if isinstance(data, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ParseError("k6", f"line {number}: a point without a non-negative value", source)
        metric = doc.get("metric")
        if metric == "http_reqs":
            total += int(value)
            status = str((data.get("tags") or {}).get("status", ""))
            if status.isdigit() and 100 <= int(status) <= 599:
                codes[int(status)] = codes.get(int(status), 0) + int(value)
        elif metric == "http_req_failed":
            failed += value == 1
        elif metric == "http_req_duration":
            durations.append(float(value))
    if total == 0:
        raise ParseError("k6", "no http_reqs point: k6 made no request", source)
    hist = histogram.from_ms(durations) if durations else None
    return Measurement(
        tool="k6",
        counts=Counts(requests_total=total, requests_ok=total - failed, requests_failed=failed,
                      status_codes=dict(sorted(codes.items()))),
        latency=Latency(min_ms=min(durations, default=None), max_ms=max(durations, default=None),
                        mean_ms=sum(durations) / len(durations) if durations else None),
        histogram=histogram.encode(hist) if hist is not None else None,
        fidelity={"latency.mean_ms": Fidelity.DERIVED, "histogram": Fidelity.DERIVED},
        notes=["figures from k6's --out json points, one per request; the run's duration is not in them"],
    )


ADAPTER = K6Adapter()
