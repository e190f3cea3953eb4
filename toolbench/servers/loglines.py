"""A stretch of a server's log read line by line, bounded: what toolbench.servers.tls_log and
target_log both read a cell's lines with."""
from __future__ import annotations

from typing import BinaryIO, Iterator


def lines(log: BinaryIO, length: int, max_line: int) -> Iterator[bytes | None]:
    """The lines of the next `length` bytes of `log`, each with its newline; None for a line longer
    than `max_line` (read past to its end, never returned). The last line may lack its newline: a
    line the server is still writing."""
    left = length
    while left > 0:
        line = log.readline(min(max_line, left))
        if not line:
            return
        left -= len(line)
        if not line.endswith(b"\n") and len(line) >= max_line:
            left -= _skip_rest(log, left, max_line)
            yield None
            continue
        yield line


def _skip_rest(log: BinaryIO, left: int, max_line: int) -> int:
    """Reads past the rest of an over-long line, at most `left` bytes; returns how many it read."""
    skipped = 0
    while skipped < left:
        chunk = log.readline(min(max_line, left - skipped))
        if not chunk:
            break
        skipped += len(chunk)
        if chunk.endswith(b"\n"):
            break
    return skipped
