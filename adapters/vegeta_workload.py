"""A workload (toolbench.scenario.workload) for vegeta: its targets file (`-format json`, each body
base64) holding the workload's requests as literal targets, and its figures per request name from
vegeta's rows (each row carries its target's method and URL).

What vegeta can and cannot be told:
- vegeta sends its targets in turn, round-robin over the whole list, every worker taking the
  list's next one (lib/targets.go, the static targeter): a mix is a cycle of the targets in the
  weights' proportion, interleaved; a sequence is the list in order, but shared by the workers,
  so no worker (user) runs it in order itself;
- data rows become literal targets: the sequence (or the mix's cycle) once per row, in the file's
  order; at the end it starts again (recycle), so `at_end: stop` is not run;
- it reads nothing of a response but its status: no extract, no checks;
- no pause between requests: a rate paces the whole attack, or each worker sends as fast as it can;
- one constant `-rate` per attack: stages would take successive attacks, one command per cell.
Per-name figures: a row's method and URL give its target's name when no two names share a
method and URL; otherwise they are absent, with the reason."""
from __future__ import annotations

import base64
import contextlib
import csv
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from toolbench.adapters import workload_requests
from toolbench.adapters.vegeta_results import FAILURE_TABLE, GO_URL_ERROR, RESOLUTION_MS
from toolbench.contract.adapter import Support
from toolbench.contract.workload import approximated, honoured, unsupported
from toolbench.errors import AdapterError
from toolbench.record import failures
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Counts, Failures, Latency, Percentiles, Rates, RequestFigures
from toolbench.scenario.workload import REQUEST_NAME

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell

NAMES_FILE = "names.json"
NAMES_HEAD = '{"toolbench_vegeta_names": 1'
MAX_TARGETS = 200_000
_TIMESTAMP = re.compile(r"[0-9]{1,19}")

FEATURES = {
    "mix": approximated("a cycle of targets in the weights' proportion, interleaved and sent in turn, not "
                        "drawn at random"),
    "sequence": approximated("the requests in order as one list that every worker takes its next target from: "
                             "in order overall, not per user"),
    "data": approximated("each data row fills one pass of the requests as literal targets, sent in turn and "
                         "recycled, not one row per user or iteration"),
    "extract": unsupported("vegeta sends fixed targets: it reads nothing from a response"),
    "think": unsupported("vegeta has no pause between requests: a rate paces the whole attack"),
    "checks": unsupported("vegeta judges a response by its status only"),
    "stages": unsupported("vegeta attacks at one constant -rate; a ramp would take successive attacks, and a "
                          "cell runs one command"),
    "per_request": honoured(),
}


def supports(cell: "Cell") -> Support | None:
    """Why vegeta cannot run this cell's workload; None: it can."""
    workload = cell.workload
    assert workload is not None
    if workload.data is not None and workload.data.at_end == "stop":
        return Support(False, "vegeta recycles its targets: it cannot stop when the data rows run out")
    if workload.order == "mix" and workload_requests.cycle(workload.requests) is None:
        return Support(False, f"the mix's weights are not in proportion within {workload_requests.MAX_CYCLE} "
                              "targets, vegeta's cycle")
    return None


def files(cell: "Cell") -> tuple[str, str]:
    """The targets file and the names file (method and URL -> request name) for the rows."""
    assert cell.workload is not None and cell.base_url is not None, "the runner sets both"
    sent = workload_requests.literals(cell.workload, cell.base_url, MAX_TARGETS)
    lines, names = [], {}
    for lit in sent:
        headers = {key: [value] for key, value in lit.headers.items()}
        target: dict[str, Any] = {"method": lit.method, "url": lit.url}
        if lit.body is not None:
            target["body"] = base64.b64encode(lit.body.encode()).decode("ascii")
        if headers:
            target["header"] = headers
        lines.append(json.dumps(target))
        key = (lit.method, lit.url)
        names[key] = lit.name if names.get(key, lit.name) == lit.name else None  # None: two names share it
    doc = {"toolbench_vegeta_names": 1, "targets": [[m, u, n] for (m, u), n in names.items()]}
    return "\n".join(lines) + "\n", json.dumps(doc)


def _names(path: Path, num: Numbers) -> dict[tuple[str, str], str | None]:
    doc = num.loads(path.read_text(errors="replace"), "the names file")
    targets = doc.get("targets") if isinstance(doc, dict) and doc.get("toolbench_vegeta_names") == 1 else None
    if not isinstance(targets, list):
        raise num.error("the names file", "not the document toolbench writes beside vegeta's targets")
    out: dict[tuple[str, str], str | None] = {}
    for entry in targets:
        ok = isinstance(entry, list) and len(entry) == 3 and all(isinstance(v, str) for v in entry[:2])
        if not ok or not (entry[2] is None or (isinstance(entry[2], str) and REQUEST_NAME.match(entry[2]))):
            raise num.error("the names file", f"bad entry {str(entry)[:80]!r}")
        out[(entry[0], entry[1])] = entry[2]
    return out


def by_request(csv_path: Path, names_path: Path, num: Numbers) -> tuple[list[RequestFigures], str | None]:
    """The rows' figures per request name; empty, with why, when a row's target has no one name."""
    names = _names(names_path, num)
    try:
        return _by_name(csv_path, names, num)
    except csv.Error as exc:  # a NUL byte, a field over even the raised limit: no row of vegeta's
        raise num.error("CSV", str(exc)) from None


def _by_name(csv_path: Path, names: dict[tuple[str, str], str | None],
             num: Numbers) -> tuple[list[RequestFigures], str | None]:
    rows: dict[str, list[tuple[int, int, int, str]]] = {}  # name -> (start ns, latency ns, code, error)
    with _csv_rows(csv_path) as reader:
        for i, row in enumerate(reader, 1):
            if len(row) != 12:
                raise num.error(f"CSV row {i}", f"expected vegeta's 12 fields, got {len(row)}")
            name = names.get((row[9], row[10]), "")
            if not name:
                why = "two request names share its method and URL" if name is None else "no target of the workload"
                return [], f"no figures per request name: row {i} ({row[9][:10]} {row[10][:80]}): {why}"
            if not _TIMESTAMP.fullmatch(row[0]) or int(row[0]) >= 1 << 63:
                raise num.error(f"row {i} timestamp", f"expected nanoseconds since the epoch, got {row[0][:40]!r}")
            rows.setdefault(name, []).append((int(row[0]),
                                              num.integer(row[2], f"row {i} latency"),
                                              num.integer(row[1], f"row {i} code"), row[5]))
    return [_figures(name, got) for name, got in rows.items()], None


@contextlib.contextmanager
def _csv_rows(path: Path) -> Iterator[Any]:
    """vegeta's CSV rows, a row's body field allowed to be large (as vegeta_results reads them)."""
    was = csv.field_size_limit(1 << 30)
    try:
        with open(path, newline="", errors="replace") as fh:
            yield csv.reader(fh)
    finally:
        csv.field_size_limit(was)


def _figures(name: str, got: list[tuple[int, int, int, str]]) -> RequestFigures:
    starts = np.array([g[0] for g in got], np.int64)
    ms = np.array([g[1] for g in got], np.float64) / 1e6
    codes = [g[2] for g in got]
    failed = [bool(g[3]) or not 200 <= g[2] < 400 for g in got]
    errors: dict[str, int] = {}
    for (_, _, code, error), bad in zip(got, failed):
        if bad and not 400 <= code <= 999:
            text = GO_URL_ERROR.sub("", error) or f"status {code}"
            errors[text] = errors.get(text, 0) + 1
    by_class = failures.tally(errors, FAILURE_TABLE)
    n, bad_n = len(got), sum(failed)
    pcts = {f"p{p}_ms": float(np.percentile(ms, p, method="inverted_cdf")) for p in (50, 90, 95, 99)}
    span_s = (int(starts.max()) - int(starts.min())) / 1e9
    return RequestFigures(
        name=name,
        counts=Counts(requests_total=n, requests_ok=n - bad_n, requests_failed=bad_n,
                      status_codes={c: codes.count(c) for c in sorted(set(codes)) if c},
                      failures=Failures(connect=by_class["connect"], timeout=by_class["timeout"],
                                        read=by_class["read"], reset=by_class["reset"], other=by_class["other"],
                                        http_4xx=sum(400 <= c < 500 for c in codes),
                                        http_5xx=sum(c >= 500 for c in codes))),
        latency=Latency(min_ms=float(ms.min()), mean_ms=float(ms.mean()), max_ms=float(ms.max()),
                        stdev_ms=float(ms.std()), percentiles=Percentiles(**pcts), resolution_ms=RESOLUTION_MS),
        rates=Rates(rps=n / span_s if span_s > 0 else None))


def check_build(cell: "Cell") -> None:
    """supports() as an error, for build() called on a cell the plan did not ask about."""
    refused = supports(cell)
    if refused is not None:
        raise AdapterError(f"vegeta: {refused.reason}")
