"""Locust's figures: a Measurement from its JSON stats (stdout), else its CSV set, else its
console summary, with the lines the locustfile printed for the result's notes. Pure: reads only
the outputs it is given."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from toolbench.adapters.locust import csv_set as locust_csv
from toolbench.adapters.locust import output as out
from toolbench.contract.adapter import RawOutput
from toolbench.errors import ParseError
from toolbench.record import histogram
from toolbench.record.schema import (PERCENTILES, Counts, Failures, Fidelity, Latency, Measurement, Omission,
                                     Percentiles, Rates, SecondSample, Timing, Transfer)

NOTE_PREFIX = "toolbench locustfile: "  # a line the locustfile prints for the result's notes


def parse(raw: RawOutput) -> Measurement:
    measurement = _parse(raw)
    said = [line.strip()[len(NOTE_PREFIX):] for line in raw.stderr.splitlines() if line.startswith(NOTE_PREFIX)]
    return dataclasses.replace(measurement, notes=measurement.notes + said) if said else measurement


def _parse(raw: RawOutput) -> Measurement:
    entries = out.read_json(raw.stdout, raw.source)
    if entries is not None:
        return _from_json(entries, raw)
    stats_csv = raw.files.get("stats_csv")
    if stats_csv is not None:
        return _from_csv(stats_csv, raw)
    console = out.read_console_row(raw.stdout + "\n" + raw.stderr, raw.source)
    if console is not None:
        return _from_console(console, raw)
    why = out.error_line(raw.stderr)
    raise ParseError("locust", "no JSON stats on stdout and no stats CSV"
                     + (f"; Locust said: {why}" if why else ""), raw.source)


def _from_json(entries: list[out.Entry], raw: RawOutput) -> Measurement:
    summary = out.read_summary(raw.stderr, raw.source)
    notes = ["figures from Locust's JSON output (final)",
             "duration runs from the first logged response to the last (a JSON entry starts when its first "
             "response is logged); Locust's own req/s counts from the start of the test"]
    fidelity = {"timing.duration_s": Fidelity.DERIVED, "counts.requests_ok": Fidelity.DERIVED,
                "latency.mean_ms": Fidelity.DERIVED, "histogram": Fidelity.DERIVED}
    total = sum(e.num_requests for e in entries)
    failed = sum(e.num_failures for e in entries)
    timed = total - sum(e.num_none_requests for e in entries)
    starts = [e.start_time for e in entries if e.start_time]
    ends = [e.last_request_timestamp for e in entries if e.last_request_timestamp]
    duration = max(ends) - min(starts) if starts and ends and max(ends) > min(starts) else None
    hist = out.histogram_of(entries, raw.source)
    if hist is not None:
        notes.append("histogram from Locust's response_times buckets: Locust rounds each time before "
                     "bucketing (to 1 ms below 100 ms, 10 ms below 1 s, then 100 ms and 1 s)")
    failures, codes = _failures(failed, raw, summary, notes)
    low = min((e.min_response_time for e in entries if e.min_response_time is not None), default=None)
    high = max((e.max_response_time for e in entries), default=None) if timed else None
    percentiles = summary.percentiles if summary else Percentiles()
    if percentiles == Percentiles() and hist is not None:
        # Locust's own reading of its buckets, as its summary would print it.
        percentiles = out.bucket_percentiles(entries)
        fidelity.update({f"latency.percentiles.{name}": Fidelity.DERIVED for name, _ in PERCENTILES})
    latency = Latency(
        min_ms=low, max_ms=high,
        mean_ms=sum(e.total_response_time for e in entries) / timed if timed else None,
        percentiles=out.within_bounds(percentiles, low, high, notes),
        resolution_ms=1.0 if timed else None)
    series = out.series_from_json(entries, raw.source)
    if series:
        fidelity["series"] = Fidelity.REPORTED
    else:
        series = _history_series(raw, notes)
    notes += locust_csv.exception_notes(raw.files.get("exceptions_csv"))
    notes.append("response times include failed requests; bytes are response bodies only")
    by_request = out.by_request(entries, _error_list(failed, raw, summary), duration, notes)
    return Measurement(
        tool="locust",
        coordinated_omission=Omission.NOT_CORRECTED,  # each request timed from its actual send
        timing=Timing(duration_s=duration),
        counts=Counts(requests_total=total, requests_ok=total - failed, requests_failed=failed,
                      failures=failures, status_codes=codes),
        rates=Rates(rps=summary.rps if summary else None),
        transfer=Transfer(received_bytes=sum(e.total_content_length for e in entries)),
        latency=latency,
        histogram=histogram.encode(hist) if hist is not None else None,
        histogram_resolution_ms=1.0 if hist is not None else None,  # Locust rounds before bucketing
        series=series,
        fidelity=fidelity,
        notes=notes,
        by_request=by_request,
    )


def _from_csv(path: Path, raw: RawOutput) -> Measurement:
    row = locust_csv.read_stats_csv(path, raw.files.get("distribution_csv"), raw.stderr)
    notes = [*row.notes, "figures from Locust's stats CSV, which Locust up to 1.1 wrote again as the run ended"
             if row.final else "figures from Locust's stats CSV: Locust rewrites it once a second, so in a single-"
             "process run it can miss the last second of traffic (the JSON output has no such lag)"]
    summary = out.read_summary(raw.stderr, raw.source)
    failures, codes = _failures(row.failures, raw, summary, notes)
    duration = row.requests / row.rps if row.rps else None
    series = _history_series(raw, notes)
    notes += locust_csv.exception_notes(raw.files.get("exceptions_csv"))
    return Measurement(
        tool="locust",
        coordinated_omission=Omission.NOT_CORRECTED,  # each request timed from its actual send
        timing=Timing(duration_s=duration),
        counts=Counts(requests_total=row.requests, requests_ok=row.requests - row.failures,
                      requests_failed=row.failures, failures=failures, status_codes=codes),
        rates=Rates(rps=row.rps),
        transfer=Transfer(received_bytes=round(row.avg_content_size * row.requests)),
        latency=Latency(min_ms=row.min_ms, max_ms=row.max_ms, mean_ms=row.mean_ms,
                        percentiles=out.within_bounds(row.percentiles, row.min_ms, row.max_ms, notes),
                        resolution_ms=1.0 if row.requests else None),
        series=series,
        fidelity={"timing.duration_s": Fidelity.DERIVED, "counts.requests_ok": Fidelity.DERIVED,
                  "transfer.received_bytes": Fidelity.DERIVED},
        notes=notes,
    )


def _from_console(row: tuple[int, int, float, float, float], raw: RawOutput) -> Measurement:
    """Locust's console summary alone (what it prints at the end without --json or --csv)."""
    total, failed, mean, low, high = row
    notes = ["figures from Locust's console summary alone: times rounded to whole milliseconds, no "
             "per-request data"]
    summary = out.read_summary(raw.stdout + "\n" + raw.stderr, raw.source)
    failures, codes = _failures(failed, raw, summary, notes)
    timed = total > 0
    percentiles = summary.percentiles if summary else Percentiles()
    return Measurement(
        tool="locust",
        coordinated_omission=Omission.NOT_CORRECTED,  # each request timed from its actual send
        timing=Timing(duration_s=total / summary.rps if summary and summary.rps else None),
        counts=Counts(requests_total=total, requests_ok=total - failed, requests_failed=failed,
                      failures=failures, status_codes=codes),
        rates=Rates(rps=summary.rps if summary else None),
        latency=Latency(min_ms=low if timed else None, mean_ms=mean if timed else None,
                        max_ms=high if timed else None,
                        percentiles=out.within_bounds(percentiles, low, high, notes) if timed else Percentiles(),
                        resolution_ms=1.0 if timed else None),
        fidelity={"timing.duration_s": Fidelity.DERIVED, "counts.requests_ok": Fidelity.DERIVED},
        notes=notes,
    )


def _failures(failed: int, raw: RawOutput, summary: out.Summary | None,
              notes: list[str]) -> tuple[Failures, dict[int, int]]:
    """Failure classes from the final error report on stderr, else from the failures CSV.
    The report on stderr is printed after the CSVs are written, so it may count failures the
    stats CSV has not (Locust 1.4.4: 409 against 345): then the failures CSV, written with the
    stats, is taken; classes that still exceed the failed count are left out, never mixed."""
    errors = _error_list(failed, raw, summary)
    if errors is None:
        return Failures(), {}
    counted = sum(errors.values())
    if counted > failed:
        notes.append(f"the error list counts {counted} failures, more than the {failed} failed "
                     "requests of the stats it was printed beside: failure classes left out")
        return Failures(), {}
    failures, codes = out.classify_errors(errors)
    if counted != failed:
        notes.append(f"the error list accounts for {counted} of {failed} failed requests")
    if codes:
        notes.append("status codes are known only for failed requests: Locust does not count successes by code")
    return failures, codes


def _error_list(failed: int, raw: RawOutput, summary: out.Summary | None) -> dict[str, int] | None:
    """The error list on stderr, else the failures CSV (see _failures)."""
    errors = summary.errors if summary and summary.errors else None
    path = raw.files.get("failures_csv")
    if path is not None and (errors is None or sum(errors.values()) > failed):
        with_the_stats = locust_csv.read_failures_csv(path)
        if errors is None or sum(with_the_stats.values()) <= failed:
            errors = with_the_stats
    return errors


def _history_series(raw: RawOutput, notes: list[str]) -> list[SecondSample]:
    path = raw.files.get("history_csv")
    if path is None:
        return []
    series, said = locust_csv.series_from_history(path)
    if series:
        notes.append("series from the stats history CSV (cumulative counts Locust writes each second, each 2 s in 0.x)")
    notes += said
    return series
