"""A CSV JTL read again by label: the figures per request name of a workload (its samplers are
labelled with the names: adapters/jmeter/workload_plan.py), and failed checks as their own class.

The fast reader (jtl.py, agg.py) sums every row without keeping labels or failure messages; this
pass runs only where it can add something (several labels, or failed samples) and only on a plain
CSV JTL whose every row is a request of its own (no sub-results, no transaction controllers), so
that its rows are the aggregate's rows: when its count differs, nothing is taken from it."""
from __future__ import annotations

import csv
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from toolbench.adapters.jmeter.agg import FAILURE_TABLE, Jtl, is_count
from toolbench.adapters.jmeter.workload_plan import CHECK_PREFIX
from toolbench.record import failures, histogram
from toolbench.record.schema import Counts, Failures, Fidelity, Latency, Measurement, Rates, RequestFigures

# The failure messages of a failed check: toolbench's Response Assertions' own (CHECK_PREFIX),
# and the Size Assertion's, which has no message of its own to give (JMeter's English text).
CHECK_MESSAGES = (CHECK_PREFIX, "The result was the wrong size")
COLUMNS = ("label", "elapsed", "success", "responseCode", "failureMessage")


@dataclass
class _Label:
    ok: int = 0
    classes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(failures.CLASSES, 0))
    codes: dict[int, int] = field(default_factory=dict)
    elapsed: dict[int, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.elapsed.values())


def with_labels(m: Measurement, path: Path, jtl: Jtl) -> Measurement:
    """`m` with its figures per label (two labels or more) and its failed checks counted as such."""
    agg = jtl.aggregate
    if not jtl.kind == "csv" or agg.sub_rows or agg.transaction_rows or agg.subsamples or not agg.has_codes:
        return m
    if len(agg.labels) < 2 and agg.ok == agg.rows:
        return m
    labels = _read(path)
    if labels is None or sum(label.total for label in labels.values()) != agg.rows:
        return m
    classes = {name: sum(label.classes[name] for label in labels.values()) for name in failures.CLASSES}
    if not classes["check"]:
        classes["check"] = None  # type: ignore[assignment]  # no check failed, or none asked: not known which
    notes, fidelity = list(m.notes), {**m.fidelity, "counts.failures.check": Fidelity.DERIVED}
    by_request = []
    if len(labels) >= 2:
        by_request = [_figures(name, label, m.timing.duration_s) for name, label in sorted(labels.items())]
        notes.append("figures per request name from the JTL's label column")
    return dataclasses.replace(m, counts=dataclasses.replace(m.counts, failures=Failures(**classes)),
                               by_request=by_request, notes=notes, fidelity=fidelity)


def _read(path: Path) -> dict[str, _Label] | None:
    """Each label's rows; None when the JTL lacks a column this needs or a row is malformed."""
    labels: dict[str, _Label] = {}
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None or any(name not in header for name in COLUMNS):
            return None
        at = [header.index(name) for name in COLUMNS]
        for row in reader:
            if len(row) != len(header) or not is_count(row[at[1]]):
                return None
            name, elapsed, success, code, message = (row[i] for i in at)
            label = labels.setdefault(name, _Label())
            label.elapsed[int(elapsed)] = label.elapsed.get(int(elapsed), 0) + 1
            status = int(code) if is_count(code) and 100 <= int(code) < 1000 else None
            if status is not None:
                label.codes[status] = label.codes.get(status, 0) + 1
            if success == "true":
                label.ok += 1
            else:
                label.classes[_class(status, code, message)] += 1
    return labels


def _class(status: int | None, code: str, message: str) -> str:
    """As agg.Aggregate classes a failed sample, but a failed check first."""
    if message.startswith(CHECK_MESSAGES):
        return "check"
    if status is not None:
        return "http_4xx" if 400 <= status < 500 else "http_5xx" if 500 <= status < 600 else "other"
    if is_count(code):
        return "other"  # a number outside HTTP's range
    return failures.classify(code, FAILURE_TABLE)


def _figures(name: str, label: _Label, duration_s: float | None) -> RequestFigures:
    tally = histogram.PerRequest("jmeter")
    tally.add_tally(label.elapsed)
    stats = tally.stats_ms() or {}
    hist = tally.histogram()
    total, failed = label.total, label.total - label.ok
    percentiles = histogram.percentiles_ms(hist, stats.get("min_ms"), stats.get("max_ms")) if hist else None
    return RequestFigures(
        name=name,
        counts=Counts(requests_total=total, requests_ok=label.ok, requests_failed=failed,
                      failures=Failures(**{k: (v if k != "check" or v else None) for k, v in label.classes.items()}),
                      status_codes=dict(sorted(label.codes.items()))),
        latency=Latency(**stats, **({"percentiles": percentiles} if percentiles else {}), resolution_ms=1.0),
        rates=Rates(rps_derived=total / duration_s, rps_ok=label.ok / duration_s) if duration_s else Rates())
