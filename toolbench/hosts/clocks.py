"""A host's clock against this machine's, measured over SSH: several round trips to one
shell there that reads its clock (`date +%s%N`) on each line it is sent; the offset is read
from the round trip with the least time (the remote clock was read within it: the error is
at most half of it). One channel for them all: opening a channel costs far more than a
round trip."""
from __future__ import annotations

import socket
import time

import paramiko

from toolbench.contract.host import Host
from toolbench.errors import HostError
from toolbench.record.schema import ClockOffset

ROUND_TRIPS = 7
_READ_CLOCK = "while read -r _; do date +%s%N; done"
_TIMEOUT_S = 10.0


def offset(host: Host, round_trips: int = ROUND_TRIPS) -> ClockOffset | None:
    """The host's clock minus this machine's; None for this machine itself. Raises HostError
    when the host cannot tell its time."""
    talk = getattr(host, "conversation", None)
    if not host.remote or talk is None:
        return None
    channel: paramiko.Channel = talk(_READ_CLOCK)
    channel.settimeout(_TIMEOUT_S)
    best: tuple[float, float] | None = None  # (rtt, offset), seconds
    try:
        answers = channel.makefile("rb")
        for _ in range(round_trips):
            sent = time.time()
            channel.sendall(b"\n")
            text = answers.readline().decode(errors="replace").strip()
            back = time.time()
            if not text.isdigit() or len(text) < 19:
                raise HostError(f"{host.label}: cannot read its clock (date +%s%N said {text[:40]!r})")
            rtt, off = back - sent, int(text) / 1e9 - (sent + back) / 2
            if best is None or rtt < best[0]:
                best = (rtt, off)
    except (OSError, socket.timeout, paramiko.SSHException) as exc:
        raise HostError(f"{host.label}: cannot read its clock: {exc or type(exc).__name__}") from None
    finally:
        channel.close()
    assert best is not None
    return ClockOffset(offset_ms=round(best[1] * 1000, 3), rtt_ms=round(best[0] * 1000, 3), round_trips=round_trips)
