"""Each generator's own figures in Locust's distributed mode. The master only ever holds the
merge of its workers' stats, so the locustfile (templates/locustfile.py, asked by
`worker_stats` in its parameters) has every worker process log its own requests into a
Locust RequestStats of its own, exactly as Locust's runner logs them but never reset, and
write it at the test's stop: `<prefix>.<n>.json`, {"stats": [the entries as Locust's --json
prints them], "errors": [Locust's error rows]}. This reads one generator's files into a
Measurement, through the Locust adapter's own reading of --json."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Sequence

from toolbench.adapters.locust import adapter as locust
from toolbench.adapters.locust import output as out
from toolbench.contract.adapter import RawOutput
from toolbench.errors import ParseError
from toolbench.record import derive, invariants
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Failures, Measurement

PREFIX = "worker_stats"


def names(processes: int) -> list[str]:
    """The files `processes` worker processes on one generator write."""
    return [f"{PREFIX}.{n}.json" for n in range(processes)]


def read(paths: Sequence[Path]) -> Measurement:
    """One generator's worker processes' files, their requests together. ParseError when one
    is missing or malformed: a part known in part is not reported as if whole."""
    stats: list[Any] = []
    errors: dict[str, int] = {}
    for path in paths:
        doc = _load(path)
        stats += doc["stats"]
        num = Numbers("locust", str(path))
        for row in doc["errors"]:
            if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in ("method", "name", "error")):
                raise ParseError("locust", f"an error row is malformed: {row!r:.80}", str(path))
            key = f"{row['method']} {row['name']}: {row['error']}"
            errors[key] = errors.get(key, 0) + num.whole(row.get("occurrences"), "occurrences")
    source = str(paths[0].parent) if paths else None
    parsed = locust.parse(RawOutput(stdout=json.dumps(stats), stderr="", exit_code=0, files={}, source=source))
    notes = [f"this generator's own requests, logged by each of its {len(paths)} Locust worker process(es) as "
             "Locust's runner logs them (the master holds only their merge); percentiles read from Locust's "
             "buckets", *parsed.notes[2:]]
    counts = parsed.counts
    failures, codes = Failures(), {}
    if errors and sum(errors.values()) <= (counts.requests_failed or 0):
        failures, codes = out.classify_errors(errors)
    elif errors:
        notes.append(f"the workers' error rows count {sum(errors.values())} failures, more than the "
                     f"{counts.requests_failed} failed requests: failure classes left out")
    measurement = dataclasses.replace(parsed, counts=dataclasses.replace(counts, failures=failures,
                                                                         status_codes=codes), notes=notes)
    return invariants.check(derive.complete(invariants.check(measurement, source)), source)


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ParseError("locust", f"no worker stats: {exc.strerror or exc}", str(path)) from None
    doc = Numbers("locust", str(path)).loads(text, "worker stats")
    if not isinstance(doc, dict) or not isinstance(doc.get("stats"), list) or not isinstance(doc.get("errors"), list):
        raise ParseError("locust", "worker stats: not an object with lists `stats` and `errors`", str(path))
    return doc
