"""TLS handshakes: what each cell over TLS cost in handshakes, from the target's own log
(RunResult.tls): its TLS connections, how many paid a full handshake and how many resumed a
session, beside the server's CPU per request; and per tool, in one sentence, whether it
resumes its sessions. Shown only when some cell has that record."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable

from toolbench.record.schema import RunResult
from toolbench.report import anchors, fmt, groups
from toolbench.report.context import Context, RunView
from toolbench.report.view import Column, Link, Row, Section, Table, Value, num, text

INTRO = ("Each TLS connection the target accepted during a cell, from its own log of each connection's first "
         "request: a full handshake makes a new session (the server pays a key exchange and signs), a resumed "
         "one reuses a session from the server's cache or a ticket. toolbench's probe, a fresh connection per "
         "request, is left out. Connections that never carried a request are not in the log.")


@dataclass
class _Tally:
    connections: int = 0
    reconnections: int = 0  # connections beyond each cell's first per slot: the ones that could resume
    resumed: int = 0
    cells: int = 0


def handshakes_section(ctx: Context) -> Section | None:
    """None when no cell has TLS handshakes: the section would say nothing."""
    cells = [(run, r) for run, r in ctx.results if r.tls is not None]
    if not cells:
        return None
    cols = ([Column("run")] if ctx.several else []) + [
        Column("cell"), Column("tool"), Column("protocol"), Column("status"),
        Column("TLS connections", True, "connections that carried a request, the probe's left out"),
        Column("full", True, "full handshakes: a new session"),
        Column("resumed", True, "handshakes that resumed a session (cache or ticket)"),
        Column("resumed %", True),
        Column("requests per connection", True, "the tool's requests over its TLS connections"),
        Column("TLS"), Column("cipher"),
        Column("server CPU µs/req", True, "the target's CPU time per request, handshakes included")]
    rows = tuple(_row(ctx, run, r) for run, r in cells)
    return Section("tls", "TLS handshakes", intro=INTRO + _served(ctx), tables=(Table(cols, rows, css="tls"),),
                   points=tuple(sentences(r for _, r in cells)))


def _row(ctx: Context, run: RunView, r: RunResult) -> Row:
    t = r.tls
    assert t is not None
    requests = r.measurement.counts.requests_total
    per_connection = requests / t.connections if requests is not None and t.connections else None
    spent = r.server_cost.cpu_us_per_request if r.server_cost else None
    link = Link(r.identity.cell_id, "#" + anchors.cell(run.label, r.identity.cell_id))
    values = ([text(run.label)] if ctx.several else []) + [
        Value("", links=(link,)), text(r.identity.label),
        text(groups.protocol_name(r.identity.protocol)), text(r.outcome.status.value.replace("_", " ")),
        num(fmt.number(t.connections), t.connections), num(fmt.number(t.handshakes_full), t.handshakes_full),
        num(fmt.number(t.handshakes_resumed), t.handshakes_resumed),
        num(fmt.percent(t.resumed_pct, 0), t.resumed_pct),
        num(fmt.number(per_connection), per_connection, derived=per_connection is not None),
        text(t.tls_version), text(t.cipher), num(fmt.number(spent), spent)]
    note = f"{t.lines_unread} lines of the log did not read as a connection" if t.lines_unread else ""
    return Row(tuple(values), note=note)


def sentences(results: Iterable[RunResult]) -> list[str]:
    """One per tool, over its cells with TLS handshakes: the share of its connections that
    resumed a session, or that each paid a full handshake. A slot's first connection has no
    session to resume: only the connections beyond the cell's concurrency say whether a tool
    resumes, and a tool that never reconnected is said to have kept its connections."""
    tally: dict[str, _Tally] = defaultdict(_Tally)
    for r in results:
        t = r.tls
        if t is None:
            continue
        mine = tally[r.identity.label]
        mine.connections += t.connections
        mine.reconnections += max(0, t.connections - (r.identity.concurrency or 0))
        mine.resumed += t.handshakes_resumed
        mine.cells += 1
    said = []
    for tool, mine in sorted(tally.items()):
        cells = f"{mine.cells} cell{'s' if mine.cells != 1 else ''}"
        if not mine.connections:
            said.append(f"{tool} made no TLS connection the target logged ({cells}).")
        elif not mine.reconnections and not mine.resumed:
            said.append(f"{tool} kept its connections open ({fmt.number(mine.connections)} TLS "
                        f"connection{'s' if mine.connections != 1 else ''}, {cells}): whether it resumes "
                        "sessions did not show.")
        elif mine.resumed:
            share = min(100.0, mine.resumed / max(mine.reconnections, 1) * 100.0)
            said.append(f"{tool} resumed {_pct(share)} of its sessions when it reconnected "
                        f"({fmt.number(mine.resumed)} of {fmt.number(mine.connections)} TLS connections, {cells}).")
        else:
            said.append(f"{tool} paid a full handshake per connection ({fmt.number(mine.connections)} TLS "
                        f"connection{'s' if mine.connections != 1 else ''}, none resumed, {cells}).")
    return said


def _pct(value: float) -> str:
    return f"{value:.0f} %" if value >= 1 or value == 0 else "under 1 %"


def _served(ctx: Context) -> str:
    """What each target served, by toolbench's own handshake when it was ready (the manifest)."""
    served = []
    for run in ctx.runs:
        for target in run.manifest.targets:
            if target.tls_version:
                cipher = f" with {target.tls_cipher}" if target.tls_cipher else ""
                prefix = f"{run.label}: " if ctx.several else ""
                served.append(f"{prefix}{target.label} served {target.tls_version}{cipher}")
    return (" As toolbench's own handshake found when each target was ready: " + "; ".join(served) + "."
            if served else "")
