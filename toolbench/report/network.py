"""The kernel's network counters: per cell and per machine (RunResult.network), what the cell
added to the listen-queue overflows and drops, the SYN retransmissions and the resets, the
sockets left in TIME_WAIT, and the accept queue's peak; and one sentence per cell whose listen
queue overflowed or whose SYNs were sent again. Shown only when some cell has counters."""
from __future__ import annotations

from toolbench.record.observed import NetworkCounters
from toolbench.record.schema import RunResult
from toolbench.report import anchors, fmt
from toolbench.report.context import Context, RunView
from toolbench.report.view import Column, Link, Row, Section, Table, Value, num, text

INTRO = ("The kernel's own counters (/proc/net/netstat and /proc/net/snmp), read when each cell's tool started "
         "and when it ended: each figure is what the cell added. They count the whole machine, so other work "
         "there during the cell is in them too. A machine that is both the target's and the generator's is "
         "read once (\"both\"). A SYN dropped because the listen queue was full is sent again by its client "
         "1 s later, then 3 s after that: those waits show in the connect times, not as errors.")
MACHINES = {"target": "target", "generator": "generator", "both": "both (one machine)"}
_FIGURES = (("listen_overflows", "listen overflows", "TcpExt ListenOverflows: the accept queue was full"),
            ("listen_drops", "listen drops", "TcpExt ListenDrops: connections dropped at a listening socket"),
            ("syn_retransmits", "SYN retransmits", "TcpExt TCPSynRetrans: SYNs and SYN-ACKs sent again"),
            ("resets_sent", "resets sent", "Tcp OutRsts: segments sent with RST"),
            ("resets_received", "resets received",
             "Tcp EstabResets: connections reset from ESTABLISHED or CLOSE_WAIT"),
            ("time_wait_at_end", "TIME_WAIT at end", "sockets in TIME_WAIT when the cell ended (not a delta)"),
            ("accept_queue_peak", "accept queue peak",
             "the most connections waiting in the target's listening socket at a sample of its monitor"))


def network_section(ctx: Context) -> Section | None:
    """None when no cell has counters: the section would say nothing."""
    cells = [(run, r) for run, r in ctx.results if r.network]
    if not cells:
        return None
    cols = ([Column("run")] if ctx.several else []) + [
        Column("cell"), Column("tool"), Column("concurrency", True), Column("status"), Column("machine"),
        *[Column(label, True, title) for _, label, title in _FIGURES]]
    rows = tuple(_row(ctx, run, r, n) for run, r in cells for n in r.network)
    points = tuple(said for _, r in cells if (said := sentence(r)))
    return Section("network", "Network counters", intro=INTRO, tables=(Table(cols, rows, css="network"),),
                   points=points)


def _row(ctx: Context, run: RunView, r: RunResult, n: NetworkCounters) -> Row:
    link = Link(r.identity.cell_id, "#" + anchors.cell(run.label, r.identity.cell_id))
    values = ([text(run.label)] if ctx.several else []) + [
        Value("", links=(link,)), text(r.identity.label),
        num(fmt.number(r.identity.concurrency), r.identity.concurrency),
        text(r.outcome.status.value.replace("_", " ")), text(MACHINES.get(n.machine, n.machine))]
    values += [num(fmt.number(getattr(n, name)), getattr(n, name)) for name, _, _ in _FIGURES]
    return Row(tuple(values))


def sentence(r: RunResult) -> str | None:
    """A cell whose listen queue overflowed or whose SYNs were sent again, said plainly: the
    overflows as the target's machine counted them, the retransmissions as the generator's (the
    client sends them) or, when only one was read, as that one counted them. None: neither happened."""
    overflows = figure(r.network, "listen_overflows", ("target", "both"))
    retried = figure(r.network, "syn_retransmits", ("generator", "both")) or figure(
        r.network, "syn_retransmits", ("target",))
    said = []
    if overflows:
        said.append(f"the listen queue overflowed {fmt.number(overflows)} time{'s' if overflows != 1 else ''}")
    if retried:
        said.append(f"{fmt.number(retried)} SYN{'s were' if retried != 1 else ' was'} retransmitted")
    if not said:
        return None
    where = f"c={r.identity.concurrency}" if r.identity.concurrency is not None else r.identity.cell_id
    why = ": clients waited 1 s / 3 s for a retry" if retried else ""
    return f"{where} ({r.identity.label}, {r.identity.cell_id}): {' and '.join(said)}{why}."


def figure(counters: list[NetworkCounters], name: str, machines: tuple[str, ...]) -> int | None:
    """The counter summed over the machines named (one of them read, or "both"); None: not read."""
    found = [getattr(n, name) for n in counters if n.machine in machines and getattr(n, name) is not None]
    return sum(found) if found else None
