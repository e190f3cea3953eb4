"""The one classifier of failed requests: a tool's error text to the schema's failure class.

Each tool names its failures in its own words (a Python exception's repr, a Java
exception's class, a line of siege's stderr, a kind of the engine's); each adapter keeps
its `Table` of those words beside its parser and hands it to `classify` or `tally`.
A table is ordered and the first class with a matching pattern wins, so a table says
"ConnectTimeoutException is a timeout" by listing timeout before connect. Patterns are
matched as lower-case substrings of the text.

A failed name lookup is a connect failure for every tool (`DNS`, checked first): the
request never reached a server, whatever words the resolver used."""
from __future__ import annotations

from typing import Iterable, Mapping

# `check`: the response came, but failed a workload's check (toolbench.scenario.workload.Checks).
CLASSES = ("connect", "timeout", "read", "reset", "http_4xx", "http_5xx", "other", "check")
Table = tuple[tuple[str, tuple[str, ...]], ...]

# glibc, macOS/BSD (`gaierror(8, 'nodename nor servname provided, or not known')`), Java, curl, siege.
DNS: tuple[str, ...] = ("gaierror", "name or service not known", "nodename nor servname",
                        "temporary failure in name resolution", "no address associated with hostname",
                        "unknownhostexception", "could not resolve host", "unable to resolve", "unknown host")


def classify(text: str, table: Table) -> str:
    """The failure class of one error text under `table`: "other" when nothing matches."""
    lowered = text.lower()
    if any(pattern in lowered for pattern in DNS):
        return "connect"
    for name, patterns in table:
        if any(pattern.lower() in lowered for pattern in patterns):
            return name
    return "other"


def tally(errors: Mapping[str, int] | Iterable[str], table: Table) -> dict[str, int]:
    """Occurrences by failure class (every class present, 0 where none): `errors` maps
    each text to its occurrences, or is texts that occurred once each."""
    counts = dict.fromkeys(CLASSES, 0)
    items = errors.items() if isinstance(errors, Mapping) else ((text, 1) for text in errors)
    for text, count in items:
        counts[classify(text, table)] += count
    return counts
