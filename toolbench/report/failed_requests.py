"""Failed requests by class and HTTP status code, and cells that did not finish."""
from __future__ import annotations

from collections import Counter

from toolbench.record.schema import RunResult, Status
from toolbench.report import fmt, groups
from toolbench.report.context import Context, RunView
from toolbench.report.view import Row, Section, Table, Value, columns, num, text

CLASSES = (("connect", "could not connect"), ("timeout", "no answer in time"), ("read", "read failed"),
           ("reset", "connection reset by the peer"),
           ("http_4xx", "HTTP 4xx"), ("http_5xx", "HTTP 5xx"), ("http", "HTTP errors the tool does not class"),
           ("other", "anything else, e.g. a wrong length"),
           ("check", "answered, but failed a check of the workload (status, body text, JSON value or size)"))
NOT_RUN = groups.NOT_RUN
FINISHED = (Status.OK, Status.DISTURBED)


def status_codes(codes: dict[int, int]) -> str:
    return ", ".join(f"{code} × {n:,}" for code, n in sorted(codes.items())) if codes else fmt.ABSENT


# The 503 column: shown when some cell had one, from the tool's status codes, or else from the
# target's own log of requests its limit_req refused (RunResult.target_log), marked as such.
COLUMN_503 = ("503", "of the failed requests, those answered 503 Service Unavailable (a rate limit such as nginx's "
              "limit_req, or a server turning requests away): from the tool's status codes, or, marked, from "
              "nginx's own log where the tool gives no codes (siege, ab); a dash: neither tells")
LOGGED = "nginx's log"


def answered_503(r: RunResult) -> tuple[int | None, bool]:
    """The cell's 503s and whether they come from the target's log rather than the tool: the tool's
    count where it gives status codes; else the requests nginx's limit_req refused, where its log
    was read and shows any; else None."""
    codes = r.measurement.counts.status_codes
    if codes:
        return codes.get(503, 0), False
    if r.target_log is not None and r.target_log.limit_req:
        return r.target_log.limit_req, True
    return None, False


def _503_value(results: list[RunResult]) -> Value:
    found = [answered_503(r) for r in results]
    counted = [n for n, _ in found if n is not None]
    total = sum(counted) if counted else None
    logged = any(from_log for _, from_log in found)
    return num(fmt.number(total), total, derived=logged, flag=LOGGED if logged else "")


def _shows_503(results: list[RunResult]) -> bool:
    return any(answered_503(r)[0] for r in results)


def _has_errors(r: RunResult) -> bool:
    """A cell that ran and failed, or had failed requests; a cell not run is no error."""
    if r.outcome.status in NOT_RUN:
        return False
    # A disturbed cell finished: it is here only for its failed requests.
    return r.outcome.status not in FINISHED or bool(r.measurement.counts.requests_failed) or \
        any(code >= 400 for code in r.measurement.counts.status_codes)


def errors_section(ctx: Context) -> Section:
    if not ctx.results:
        return Section("errors", "Errors", absent="No results.")
    cells = [(run, r) for run, r in ctx.results if _has_errors(r)]
    ran = [r for _, r in ctx.results if r.outcome.status not in NOT_RUN]
    silent = [r for r in ran if r.outcome.status is Status.OK and r.measurement.counts.requests_failed is None]
    points = []
    if not cells:
        points.append(f"No request failed in the {len(ran)} cells that ran.")
    if silent:
        tools = ", ".join(sorted({r.identity.label for r in silent}))
        points.append(f"{len(silent)} cells ({tools}) do not report failed requests: their errors are unknown, "
                      "not zero.")
    points += _503_points([r for _, r in cells])
    tables = []
    totals = _totals(ctx)
    if totals.rows:
        tables.append(totals)
    if cells:
        tables.append(_cells_table(ctx, cells))
    return Section("errors", "Errors", tables=tuple(tables), points=tuple(points),
                   intro="Failed requests as each tool classed them; a dash means the tool does not tell that class.")


def _totals(ctx: Context) -> Table:
    """Per tool, the failed requests of every cell that ran, added up by class."""
    by_tool: dict[str, list[RunResult]] = {}
    for _, r in ctx.results:
        if r.outcome.status is Status.OK and r.measurement.counts.requests_failed:
            by_tool.setdefault(r.identity.label, []).append(r)
    rows = []
    shown_503 = _shows_503([r for results in by_tool.values() for r in results])
    for tool, results in sorted(by_tool.items()):
        requests = sum(r.measurement.counts.requests_total or 0 for r in results)
        failed = sum(r.measurement.counts.requests_failed or 0 for r in results)
        values = [text(tool), num(fmt.number(requests), requests), num(fmt.number(failed), failed)]
        for name, _ in CLASSES:
            found = [getattr(r.measurement.counts.failures, name) for r in results]
            total = sum(v for v in found if v is not None) if any(v is not None for v in found) else None
            values.append(num(fmt.number(total), total))
        values += [_503_value(results)] if shown_503 else []
        codes: Counter[int] = Counter()
        for r in results:
            codes.update({c: n for c, n in r.measurement.counts.status_codes.items() if c >= 400})
        values.append(text(status_codes(dict(codes))))
        rows.append(Row(tuple(values)))
    labels = ["tool", "requests", "failed"] + [(name.replace("_", " "), title) for name, title in CLASSES] + \
             ([COLUMN_503] if shown_503 else []) + [("error codes", "HTTP status codes of 400 and above, with counts")]
    return Table(columns(*labels, numeric_from=1, text=("error codes",)), tuple(rows),
                 caption="Failed requests by class, per tool, over the cells that finished")


def _cells_table(ctx: Context, cells: list[tuple[RunView, RunResult]]) -> Table:
    rows = []
    shown_503 = _shows_503([r for _, r in cells])
    for run, r in cells:
        c = r.measurement.counts
        values = ([text(run.label)] if ctx.several else []) + [
            text(r.identity.cell_id), text(r.outcome.status.value.replace("_", " ")),
            num(fmt.number(c.requests_total), c.requests_total), num(fmt.number(c.requests_failed), c.requests_failed)]
        for name, _ in CLASSES:
            v = getattr(c.failures, name)
            values.append(num(fmt.number(v), v))
        values += [_503_value([r])] if shown_503 else []
        values.append(text(status_codes(c.status_codes)))
        rows.append(Row(tuple(values), bad=r.outcome.status not in FINISHED, error=r.outcome.error or "",
                        disturbed=r.outcome.status is Status.DISTURBED))
    labels = (["run"] if ctx.several else []) + ["cell", "status", "requests", "failed"] + \
        [(name.replace("_", " "), title) for name, title in CLASSES] + ([COLUMN_503] if shown_503 else []) + \
        [("status codes", "every HTTP status seen")]
    cols = columns(*labels, numeric_from=3 if ctx.several else 2, text=("status codes",))
    return Table(cols, tuple(rows), caption="Cells with failed requests or that did not finish")


def _503_points(results: list[RunResult]) -> list[str]:
    """503s said in words: how many the tools counted, and, for tools that give no status codes,
    how many nginx's own log shows its limit_req refused beside the failures they counted."""
    said = []
    counted = [(r, n) for r in results for n, from_log in [answered_503(r)] if n and not from_log]
    if counted:
        said.append(f"{fmt.number(sum(n for _, n in counted))} requests were answered 503 Service Unavailable "
                    f"({_cells(len(counted))}, by the tools' status codes): the “503” column.")
    by_tool: dict[str, list[tuple[RunResult, int]]] = {}
    for r in results:
        n, from_log = answered_503(r)
        if n and from_log:
            by_tool.setdefault(r.identity.label, []).append((r, n))
    for tool, found in sorted(by_tool.items()):
        failed = sum(r.measurement.counts.requests_failed or 0 for r, _ in found)
        said.append(f"{tool} gives no status codes: it counted {fmt.number(failed)} failed requests in "
                    f"{_cells(len(found))} where nginx's own log shows {fmt.number(sum(n for _, n in found))} "
                    "requests refused by its limit_req (503); the “503” column shows those, marked "
                    f"“{LOGGED}”.")
    return said


def _cells(n: int) -> str:
    return f"{n} cell{'s' if n != 1 else ''}"
