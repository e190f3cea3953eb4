"""Study 003's raw-socket servers: every connection reads once (up to 1 KiB), sleeps, answers
and is closed; `threads` spawns a thread per connection, `gevent` a greenlet on gevent's
sockets. Unlike the study's, the answer is a valid HTTP/1.0 reply (it sent a malformed status
line, which ab counted as a 0-byte document), and nothing is printed per request (it printed
a dot, which costs a write per request). With `pool` N (gevent only), connections are handled by
a `gevent.pool.Pool(N)`, the article's bounded variant: the accept loop waits for a free slot, so
at most N are served at once and the rest wait in the listen queue. Run as `python -m
toolbench.servers.apps.socket_server CONFIG.json`, the config holding mode, host, port, sleep_s,
backlog and pool (null: unbounded)."""
from __future__ import annotations

import json
import socket
import sys
import threading
import time
from typing import Any, Callable

BODY = b"Hello, World!"
REPLY = (b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(BODY)) + BODY


def handle_request(conn: Any, sleep: Callable[[float], Any], sleep_s: float) -> None:
    try:
        conn.recv(1024)
        sleep(sleep_s)
        conn.sendall(REPLY)
        conn.shutdown(socket.SHUT_WR)
    except OSError as exc:
        print(exc, file=sys.stderr, flush=True)
    finally:
        conn.close()


def serve(socket_module: Any, spawn: Callable[..., Any], sleep: Callable[[float], Any], host: str, port: int,
          sleep_s: float, backlog: int) -> None:
    """The study's accept loop: every connection handed to a thread or a greenlet of its own."""
    s = socket_module.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    s.listen(backlog)
    while True:
        conn, _ = s.accept()
        spawn(handle_request, conn, sleep, sleep_s)


def _thread(target: Callable[..., Any], *args: Any) -> None:
    threading.Thread(target=target, args=args, daemon=True).start()


def main(argv: list[str]) -> None:
    with open(argv[0], encoding="utf-8") as fh:
        config = json.load(fh)
    where = (config["host"], int(config["port"]), float(config["sleep_s"]), int(config["backlog"]))
    if config["mode"] == "gevent":
        import gevent
        from gevent import socket as gsocket
        from gevent.pool import Pool

        # Pool.spawn blocks while the pool is full: the next accept waits for a free slot.
        spawn = Pool(int(config["pool"])).spawn if config.get("pool") else gevent.spawn
        serve(gsocket, spawn, gevent.sleep, *where)
    else:
        serve(socket, _thread, time.sleep, *where)


if __name__ == "__main__":
    main(sys.argv[1:])
