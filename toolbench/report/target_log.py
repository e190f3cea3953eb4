"""The target's own error log: per cell, the lines a target toolbench started wrote to its error
logs while the cell ran (RunResult.target_log: nginx's error.log, uWSGI's and gunicorn's stderr),
counted by kind, with one sentence per target over its cells ("nginx-uwsgi-limit, over 3 cells:
1,204 requests refused by nginx's limit_req (503)"). Shown only when some cell's logs have a
counted line: it is the server's side of the failures the tools count."""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterable

from toolbench.record.observed import TARGET_LOG_KINDS, TARGET_LOG_WORDS
from toolbench.record.schema import RunResult
from toolbench.report import anchors, fmt
from toolbench.report.context import Context, RunView
from toolbench.report.view import Column, Link, Row, Section, Table, Value, num, text

INTRO = ("What each target wrote to its own error logs while a cell ran (nginx's error.log, uWSGI's and gunicorn's "
         "stderr; request logging is off, so every line is an event), counted by kind, one line one count. The "
         "logs are read from where they stood when the cell started to where they stood when it stopped; "
         "toolbench's probe's requests are among them. A dash: the log was not read (a target toolbench did "
         "not start here).")

# Short column labels; the long words are TARGET_LOG_WORDS.
LABELS = {"limit_req": "limit_req 503", "limit_req_delayed": "limit_req delayed",
          "upstream_timeout": "upstream timeout",
          "upstream_refused": "upstream refused", "upstream_queue_full": "upstream queue full",
          "upstream_reset": "upstream reset", "worker_connections": "worker_connections",
          "open_files": "too many open files", "listen_queue_full": "uWSGI queue full",
          "worker_timeout": "gunicorn worker timeout", "other": "other"}


def target_log_section(ctx: Context) -> Section | None:
    """None when no cell's target logged a line of any kind."""
    cells = [(run, r) for run, r in ctx.results if r.target_log is not None]
    if not any(r.target_log.counted() for _, r in cells if r.target_log is not None):
        return None
    kinds = [k for k in TARGET_LOG_KINDS if any(getattr(r.target_log, k) for _, r in cells if r.target_log)]
    cols = ([Column("run")] if ctx.several else []) + [
        Column("cell"), Column("tool"), Column("target"), Column("status"),
        Column("failed", True, "the requests the tool counted as failed"),
        *[Column(LABELS[k], True, TARGET_LOG_WORDS[k]) for k in kinds],
        Column("logs", title="the logs read")]
    rows = tuple(_row(ctx, run, r, kinds) for run, r in cells)
    return Section("target-log", "The target's error log", intro=INTRO, tables=(Table(cols, rows, css="target-log"),),
                   points=tuple(sentences(r for _, r in cells)))


def _row(ctx: Context, run: RunView, r: RunResult, kinds: list[str]) -> Row:
    logged = r.target_log
    assert logged is not None
    failed = r.measurement.counts.requests_failed
    link = Link(r.identity.cell_id, "#" + anchors.cell(run.label, r.identity.cell_id))
    values = ([text(run.label)] if ctx.several else []) + [
        Value("", links=(link,)), text(r.identity.label), text(r.identity.target_label),
        text(r.outcome.status.value.replace("_", " ")), num(fmt.number(failed), failed),
        *[num(fmt.number(getattr(logged, k)), getattr(logged, k)) for k in kinds],
        text(", ".join(logged.logs))]
    note = f"{logged.lines_unread} lines did not read as lines of their log" if logged.lines_unread else ""
    return Row(tuple(values), note=note)


def sentences(results: Iterable[RunResult]) -> list[str]:
    """One per target, over its cells with a log read: what its logs counted, in words."""
    summed: dict[str, Counter[str]] = defaultdict(Counter)
    cells: Counter[str] = Counter()
    for r in results:
        logged = r.target_log
        if logged is None:
            continue
        name = r.identity.target_label or "the target"
        cells[name] += 1
        summed[name].update(logged.counted())
    said = []
    for name, counts in sorted(summed.items()):
        over = f"{name}, over {cells[name]} cell{'s' if cells[name] != 1 else ''}"
        if not counts:
            said.append(f"{over}: no error line.")
            continue
        words = "; ".join(f"{fmt.number(counts[k])} {TARGET_LOG_WORDS[k]}" for k in TARGET_LOG_KINDS if counts[k])
        said.append(f"{over}: {words}.")
    return said
