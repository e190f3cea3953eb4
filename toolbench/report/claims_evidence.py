"""The evidence beside a claim's verdict: what the run itself recorded of each side's best point,
repetition by repetition, so that the "why" of a claim rests on a counter, a log line or a failure
class rather than a guess (issue 26).

Only what happened is named: on the target's machine the kernel's listen-queue overflows, SYN
retransmissions and resets (RunResult.network; toolbench.report.network reads them so too), the
target's own error-log lines by kind (RunResult.target_log), the tool's failed requests by class
and the statuses that were not 2xx. Each is shown for both sides when either side has one, with a
value per repetition ("0/212/180"; "–" where a repetition did not record it). A side whose
counters were read and stayed at zero says so: that no queue overflowed is evidence too. Pure:
results in, one line of text out."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable, Sequence

from toolbench.record.observed import TARGET_LOG_KINDS
from toolbench.record.schema import Failures, RunResult
from toolbench.report import fmt
from toolbench.report.network import figure as network_figure

Getter = Callable[[RunResult], "int | None"]


@dataclass(frozen=True)
class SideCells:
    name: str  # the side's best point, as the claims table names it
    results: Sequence[RunResult]  # its repetitions


def said(higher: SideCells, lower: SideCells) -> str:
    """"listen overflows: threads c1000 0/212/180 vs gevent c1000 0/0/0; …", or what was not seen."""
    both = [*higher.results, *lower.results]
    shown = [(label, get) for label, get in _items(both) if any(get(r) for r in both)]
    if shown:
        return "; ".join(f"{label}: {higher.name} {_values(higher.results, get)} vs "
                         f"{lower.name} {_values(lower.results, get)}" for label, get in shown)
    read = sum(1 for r in both if r.network)
    if not read:
        return "no counters recorded"
    logs = ", no line in the target's error log" if all(r.target_log is not None for r in both) else ""
    where = "either side" if read == len(both) else f"the {read} of {len(both)} cells that read them"
    return f"none on {where}: no listen overflow, SYN retransmit or reset{logs}, no failed request, every status 2xx"


def _items(results: Sequence[RunResult]) -> list[tuple[str, Getter]]:
    items: list[tuple[str, Getter]] = [
        ("listen overflows", lambda r: network_figure(r.network, "listen_overflows", ("target", "both"))),
        ("SYN retransmits", _syn_retransmits),
        ("resets sent", lambda r: network_figure(r.network, "resets_sent", ("target", "both"))),
        ("resets received", lambda r: network_figure(r.network, "resets_received", ("target", "both")))]
    items += [(f"target log: {kind.replace('_', ' ')}", _log(kind)) for kind in TARGET_LOG_KINDS]
    items += [(f"failed: {f.name.replace('_', ' ')}", _failed(f.name)) for f in fields(Failures)]
    statuses = sorted({code for r in results if r.measurement is not None
                       for code in r.measurement.counts.status_codes if not 200 <= code < 300})
    items += [(f"HTTP {code}", _status(code)) for code in statuses]
    return items


def _syn_retransmits(r: RunResult) -> int | None:
    """As the client's machine counted them (it sends them again); the target's when only it was read."""
    found = network_figure(r.network, "syn_retransmits", ("generator", "both"))
    return found if found is not None else network_figure(r.network, "syn_retransmits", ("target",))


def _log(kind: str) -> Getter:
    return lambda r: getattr(r.target_log, kind) if r.target_log is not None else None


def _failed(name: str) -> Getter:
    return lambda r: getattr(r.measurement.counts.failures, name) if r.measurement is not None else None


def _status(code: int) -> Getter:
    return lambda r: r.measurement.counts.status_codes.get(code, 0) if r.measurement is not None else None


def _values(results: Sequence[RunResult], get: Getter) -> str:
    return "/".join("–" if (v := get(r)) is None else fmt.number(v) for r in results)
