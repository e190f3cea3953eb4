"""Ctrl-C held back while the engine imports and starts.

A KeyboardInterrupt raised inside the import machinery's own callbacks is printed and lost
("Exception ignored in: <function _get_module_lock.<locals>.cb>"), and the engine then ran its
whole duration (seen in CI, with the Ctrl-C landing in a lazy import 0.12 s after the start).
Inside `deferred()` a Ctrl-C only sets a flag, and the block's end raises it."""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def deferred() -> Iterator[None]:
    """Runs the block with SIGINT recorded rather than raised; a KeyboardInterrupt at its end when
    one came. Outside the main thread, or where SIGINT is not Python's to raise (ignored, or a
    handler of the caller's own), the block runs as it is."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    said: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: said.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if said:
        raise KeyboardInterrupt
