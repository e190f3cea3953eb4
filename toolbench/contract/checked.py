"""The one way core code reads a tool's output: the adapter's parse, completed with what
toolbench derives (toolbench.record.derive) and checked against the schema's invariants
(toolbench.record.invariants) before and after."""
from __future__ import annotations

from toolbench.contract.adapter import Adapter, RawOutput
from toolbench.errors import ParseError, ParserCrash
from toolbench.record import derive, invariants
from toolbench.record.schema import Measurement


def parse_checked(adapter: Adapter, raw: RawOutput) -> Measurement:
    """The adapter's reading of `raw`, completed with what toolbench derives, every
    invariant checked before and after. Raises only ParseError (ParserCrash for an
    adapter that failed in any other way). A step after a tool that ended by itself
    (Invocation.steps) that failed is a ParseError: its output would be partial; after a
    tool that was killed, the adapter reads what there is."""
    if raw.step_errors and raw.exit_code is not None:
        raise ParseError(adapter.name, "; ".join(raw.step_errors.values()), raw.source)
    try:
        parsed = adapter.parse(raw)
        if not isinstance(parsed, Measurement):
            raise TypeError(f"parse() returned {type(parsed).__name__}, not a Measurement")
        invariants.check(parsed, raw.source)
        return invariants.check(derive.complete(parsed), raw.source)
    except ParseError:
        raise
    except (Exception, SystemExit) as exc:  # a parser may fail in any way; it costs its cell, not the run
        raise ParserCrash(adapter.name, exc) from exc
