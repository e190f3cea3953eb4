"""How a process ended, in words: a negative exit code from subprocess is a signal."""
from __future__ import annotations

import signal


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_words(code: int | None) -> str:
    """`exit code 3`, or `killed by SIGSEGV` for the negative codes subprocess gives."""
    if code is not None and code < 0:
        return f"killed by {signal_name(-code)}"
    return f"exit code {code}"
