"""Grafana k6, read-only: toolbench never runs it (its licence, AGPL-3.0, rules it out for
this project), but reads what a k6 user already has, so k6 results can stand beside the
others: the end-of-test summary (`--summary-export`, or handleSummary's JSON with
`values`), the per-request points of `--out json` and the rows of `--out csv` (both in k6_samples).
Not read: the text summary `k6 run` prints (the error says how to get a form that is).

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

from toolbench.adapters import k6_samples, workload_single
from toolbench.contract.adapter import Adapter, Detection, Found, Invocation, Missing, RawOutput, Support
from toolbench.contract.recipe import Install
from toolbench.errors import AdapterError, ParseError
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Counts, Fidelity, Latency, Measurement, Percentiles, Rates, Timing, Transfer

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Host

WHY = "k6 is read-only here: its licence (AGPL-3.0) rules it out for this project; `toolbench parse` reads its output"
_SUMMARY_READ = {"http_reqs", "http_req_failed", "http_req_duration", "http_req_connecting", "http_req_waiting",
                 "data_received", "data_sent", "vus_max"}
_PCTS = {"med": "p50_ms", "p(50)": "p50_ms", "p(66)": "p66_ms", "p(75)": "p75_ms", "p(80)": "p80_ms",
         "p(90)": "p90_ms", "p(95)": "p95_ms", "p(98)": "p98_ms", "p(99)": "p99_ms", "p(99.9)": "p999_ms"}


class K6Adapter(Adapter):
    name = "k6"
    workload_features = workload_single.one_request("k6 is read-only here (AGPL-3.0): toolbench never runs it")
    install = Install(impossible="never run here (AGPL-3.0)")
    read_only = True

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        return Missing(f"{path + ': ' if path else ''}{WHY}")

    def supports(self, cell: "Cell") -> Support:
        return Support(False, WHY)

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        raise AdapterError(f"k6: {WHY}")

    def classify(self, path: Path, text: str) -> str:
        head = text.lstrip("\ufeff \t\r\n")[:2000]
        if head.startswith('{"type":"Metric"') or head.startswith('{"metric":'):
            return "points"
        if head.startswith(k6_samples.HEADER):
            return "csv"
        return "summary" if head.startswith("{") else "stdout"

    def recognizes(self, path: Path, text: str) -> bool:
        role = self.classify(path, text)
        return role in ("points", "csv") or (role == "summary" and '"http_reqs"' in text and '"metrics"' in text)

    def unread_form(self, path: Path, text: str) -> str | None:
        return _unread_form(text).rstrip("; ") or None

    def parse(self, raw: RawOutput) -> Measurement:
        if "points" in raw.files:
            return k6_samples.read_points(raw.files["points"], raw.source)
        if "csv" in raw.files:
            return k6_samples.read_csv(raw.files["csv"], raw.source)
        if "summary" in raw.files:
            return _from_summary(_read(raw.files["summary"], raw.source), raw.source)
        if raw.stdout.lstrip().startswith("{"):
            return _from_summary(raw.stdout, raw.source)
        raise ParseError("k6", f"{_unread_form(raw.stdout)}no k6 summary JSON (--summary-export), no --out json "
                         "points and no --out csv rows", raw.source)


def _unread_form(text: str) -> str:
    """The form a k6 output toolbench does not read is in, named, with how to get one it does."""
    if text.startswith("\x1f"):  # gzip's magic bytes, as the file was read (as text)
        return "a gzip-compressed file (k6's --out csv=FILE.gz or json=FILE.gz) is not read: gunzip it first; "
    if "http_reqs" in text and ("http_req_duration" in text or "iterations" in text):
        return ("k6's end-of-test text summary is not read (its figures are rounded for the eye): run k6 with "
                "--summary-export=FILE, --out json=FILE or --out csv=FILE; ")
    return ""


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
    notes += _unread_summary(metrics, duration)
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
                        percentiles=Percentiles(**pcts),
                        connect_mean_ms=_number(_metric(metrics, "http_req_connecting", source), "avg",
                                                "http_req_connecting", source),
                        ttfb_mean_ms=_number(_metric(metrics, "http_req_waiting", source), "avg", "http_req_waiting",
                                             source)),
        fidelity={"timing.duration_s": Fidelity.DERIVED},
        notes=notes,
        concurrency=_count(_metric(metrics, "vus_max", source), "max", "vus_max", source),
    )


def _unread_summary(metrics: dict[str, Any], duration: dict[str, Any] | None) -> list[str]:
    """The summary's figures that have no field here, named."""
    unread = sorted(str(name)[:60] for name in metrics if name not in _SUMMARY_READ)
    levels = sorted(str(key)[:20] for key in (duration or {}) if key not in _PCTS and key not in ("avg", "min", "max"))
    said = []
    if unread:
        more = f" and {len(unread) - 12} more" if len(unread) > 12 else ""
        said.append(f"the metrics {', '.join(unread[:12])}{more}")
    if levels:
        said.append(f"http_req_duration's {', '.join(levels[:12])}")
    return [f"not read (no field here): {'; '.join(said)}"] if said else []


ADAPTER = K6Adapter()
