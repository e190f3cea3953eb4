"""Which tools fit an HTTPS and an HTTP/2 service: for each protocol a run asked beyond plain
HTTP/1.1, the tools whose cells in it ran ok, those that ran but failed, and those that could
not speak it, with the reason the plan gave. Read from the stored cells alone."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from toolbench.contract.adapter import PROTOCOL_NAMES
from toolbench.record.schema import RunResult, Status

# How the purposes paragraph names the service each protocol stands for.
SERVICE = {"https": "an HTTPS service (HTTP/1.1 over TLS)", "h2": "an HTTP/2 service (over TLS)",
           "h2c": "an HTTP/2 service in clear (h2c)"}


@dataclass(frozen=True)
class Fit:
    protocol: str
    ran: tuple[str, ...]  # tools with at least one ok cell in it
    failed: tuple[str, ...]  # tools that were run in it and never ended a cell ok
    cannot: dict[str, str]  # tool -> why it does not speak it (the plan's reason)

    @property
    def service(self) -> str:
        return SERVICE.get(self.protocol, PROTOCOL_NAMES.get(self.protocol, self.protocol))


def fits(results: list[RunResult]) -> list[Fit]:
    """One Fit per protocol beyond http1 that some cell asked, in the order of PROTOCOL_NAMES. A
    tool's reason counts only when it is the protocol's: one it also gave in plain HTTP/1.1 (no
    closed model, not installed) is about something else, and the rankings say it already."""
    status: dict[str, dict[str, set[Status]]] = defaultdict(lambda: defaultdict(set))
    reasons: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in results:
        protocol, tool = r.identity.protocol, r.identity.label
        status[protocol][tool].add(r.outcome.status)
        if r.outcome.status is Status.UNSUPPORTED and r.outcome.error:
            reasons[(protocol, tool)].append(r.outcome.error)
    out = []
    not_run = {Status.UNSUPPORTED, Status.TOOL_MISSING}
    for protocol in (p for p in PROTOCOL_NAMES if p != "http1" and p in status):
        by_tool = status[protocol]
        ran = tuple(sorted(t for t, s in by_tool.items() if Status.OK in s))
        failed = tuple(sorted(t for t, s in by_tool.items() if Status.OK not in s and s - not_run
                              and Status.DISTURBED not in s))
        cannot = {}
        for tool, found in sorted(by_tool.items()):
            own = [why for why in reasons[(protocol, tool)] if why not in reasons[("http1", tool)]
                   and not why.startswith("skipped")]
            if found <= not_run and own:
                cannot[tool] = own[0]
        out.append(Fit(protocol, ran, failed, cannot))
    return out


def _names(tools: tuple[str, ...] | list[str]) -> str:
    tools = list(tools)
    return tools[0] if len(tools) == 1 else f"{', '.join(tools[:-1])} and {tools[-1]}"


def sentence(fit: Fit) -> str:
    """e.g. "For an HTTP/2 service (over TLS): h2load and hey; not the others: ab speaks HTTP/1.0 …"."""
    said = f"For {fit.service}: " + (_names(fit.ran) if fit.ran else "no tool ran ok")
    if fit.failed:
        said += f" ({_names(fit.failed)} ran but failed)"
    if fit.cannot:
        # Each reason names its tool ("ab speaks HTTP/1.0 …"); a target's reason is the same for all: once.
        said += "; not the others: " + "; ".join(dict.fromkeys(why.rstrip(".") for why in fit.cannot.values()))
    return said + "."


def paragraph(results: list[RunResult]) -> str:
    return " ".join(sentence(f) for f in fits(results))
