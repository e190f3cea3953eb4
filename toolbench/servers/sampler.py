"""`python -m toolbench.servers.sampler INTERVAL_S PORT SERIES PID...`: the server's monitor
(toolbench.servers.cost.ServerMonitor, the very one that samples a server on this machine)
run on the machine where a target runs, for a target started there over SSH.

It takes its first sample, prints `started`, samples until SIGTERM (or SIGINT), then
writes the series to SERIES as write_series does and prints the report's other figures as
one JSON line. PORT 0 means no port to watch. toolbench fetches both (servers.remote)."""
from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path

from toolbench.servers.cost import ServerMonitor, report_figures

STARTED = "started"
MAX_INTERVAL_S = 3600.0


def main(argv: list[str]) -> int:
    if len(argv) < 4:
        print("usage: python -m toolbench.servers.sampler INTERVAL_S PORT SERIES PID...", file=sys.stderr)
        return 2
    try:
        interval_s, port, pids = float(argv[0]), int(argv[1]), [int(pid) for pid in argv[3:]]
    except ValueError as exc:
        print(f"sampler: {exc}", file=sys.stderr)
        return 2
    if not 0 < interval_s <= MAX_INTERVAL_S or not all(pid > 1 for pid in pids) or not 0 <= port < 65536:
        print("sampler: the interval, the port or a pid is out of range", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    monitor = ServerMonitor(pids, port or None, interval_s, Path(argv[2]))
    monitor.start()
    print(STARTED, flush=True)
    while not stop.wait(0.5):  # short waits: the signal handler runs between them
        pass
    print(json.dumps(report_figures(monitor.stop())), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
