"""The one reader of numbers in a tool's output, used by every parser.

Every number a load tool prints is a count, a time, a size or a rate: never negative,
never NaN or Infinity, and never beyond `MAX_VALUE`. A text that is not such a number
(`1e5` where a count is due, `-`, `nan`, `1e400`, `-3`, a thousand digits) is a
ParseError naming the tool, the field and the text, at the place it is read, so that no
such value reaches a histogram, an array size or the result."""
from __future__ import annotations

import json
import math
import re
from typing import Any

from toolbench.errors import ParseError

# 2^53: every count up to it is exact as a float too, and no load tool sends 9e15
# requests, moves 9 PB or measures 285,000 years in one run. Histograms merge counts
# of many runs in 64-bit words: well below 2^63, they cannot overflow there either.
MAX_VALUE = 2 ** 53

_INTEGER = re.compile(r"[+-]?[0-9]{1,20}")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]{1,40}(?:\.[0-9]{0,40})?|\.[0-9]{1,40})(?:[eE][+-]?[0-9]{1,4})?")
_SHOWN = 60  # characters of a bad text quoted in a message


class Numbers:
    """Reads the numbers of one tool's output; every error names `tool` and `source`."""

    def __init__(self, tool: str, source: str | None = None) -> None:
        self.tool = tool
        self.source = source

    def error(self, what: str, message: str) -> ParseError:
        return ParseError(self.tool, f"{what}: {message}", self.source)

    def integer(self, text: str, what: str) -> int:
        """A whole number written in digits."""
        stripped = text.strip()
        if not _INTEGER.fullmatch(stripped):
            raise self.error(what, f"expected a whole number, got {_show(text)}")
        return self._bounded(int(stripped), what)

    def decimal(self, text: str, what: str) -> float:
        """A decimal number, with an optional exponent (`2.55908e+09`)."""
        stripped = text.strip()
        if not _DECIMAL.fullmatch(stripped):
            raise self.error(what, f"expected a number, got {_show(text)}")
        return self._bounded(float(stripped) + 0.0, what)  # + 0.0: "-0" is 0, not -0.0

    def whole(self, value: Any, what: str) -> int:
        """A whole number from a decoded document (JSON): an int, or a float without a
        fraction; a bool or a string is not a number."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(what, f"expected a whole number, got {_show(repr(value))}")
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            raise self.error(what, f"expected a whole number, got {_show(repr(value))}")
        return self._bounded(int(value), what)

    def real(self, value: Any, what: str) -> float:
        """A number from a decoded document (JSON)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(what, f"expected a number, got {_show(repr(value))}")
        return self._bounded(float(value), what)

    def _bounded(self, value: float, what: str) -> Any:
        why = problem(value)
        if why is not None:
            raise self.error(what, why)
        return value

    def loads(self, text: str, what: str = "JSON", *, or_none: bool = False) -> Any:
        """JSON as the standard says it: NaN and Infinity are not numbers there, and a
        number too large for a float is an error rather than Infinity. Text that is not
        JSON at all is an error too, or None with `or_none` (output that may hold JSON)."""
        try:
            return json.loads(text, parse_constant=self._constant, parse_float=self._json_float,
                              parse_int=self._json_int)
        except ParseError:
            raise
        except (ValueError, RecursionError) as exc:
            if or_none:
                return None
            raise self.error(what, f"not valid JSON: {_first_line(str(exc))}") from None

    def decoder(self) -> json.JSONDecoder:
        """A decoder with the same rules as `loads`, for documents inside other text."""
        return json.JSONDecoder(parse_constant=self._constant, parse_float=self._json_float,
                                parse_int=self._json_int)

    def _constant(self, name: str) -> Any:
        raise self.error("JSON", f"{name} is not a number JSON allows")

    def _json_float(self, text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise self.error("JSON", f"the number {_show(text)} is too large")
        return value

    def _json_int(self, text: str) -> int:
        # Python refuses ints of over 4300 digits with a ValueError; far shorter ones are
        # already beyond any figure, and the invariants refuse them with the field's name.
        if len(text.lstrip("-")) > 30:
            raise self.error("JSON", f"the number {_show(text)} is too large")
        return int(text)


def problem(value: float) -> str | None:
    """Why `value` cannot be a figure of a load tool, or None when it can."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not a finite number"
    if value < 0:
        return f"{value!r} is negative"
    if value > MAX_VALUE:
        return f"{_show(repr(value))} is beyond any figure a load tool measures (2^53)"
    return None


def _show(text: str) -> str:
    shown = text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
    return repr(shown)


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else text
