"""Servers that fail the way a careless or overloaded server does, on loopback: each answers
its first request (the runner's readiness check), then either accepts connections and never
answers (`Silent`), or stops accepting altogether with a full backlog, so that a connect
waits for a handshake that never comes (`Unreachable`)."""
from __future__ import annotations

import socket
import threading
import time

READY = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"


class Silent:
    """After its first answer it accepts nothing more: the kernel completes every handshake
    into the listen backlog, and no request is ever read or answered."""

    def __init__(self, backlog: int = 4096) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(backlog)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.answered = threading.Event()  # set once the first answer is given and the trap is set
        self._thread = threading.Thread(target=self._answer_once, daemon=True)
        self._thread.start()

    def _answer_once(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.recv(4096)
            conn.sendall(READY)
        self.after_first_answer()
        self.answered.set()

    def after_first_answer(self) -> None:
        pass

    def close(self) -> None:
        self.sock.close()


class Unreachable(Silent):
    """After its first answer the backlog shrinks to nothing and is filled by connections of
    its own: the kernel then drops every new SYN, and a client's connect times out."""

    def __init__(self) -> None:
        self.fillers: list[socket.socket] = []
        super().__init__()

    def after_first_answer(self) -> None:
        self.sock.listen(0)
        for _ in range(4):
            filler = socket.socket()
            filler.setblocking(False)
            try:
                filler.connect(("127.0.0.1", self.port))
            except BlockingIOError:
                pass
            self.fillers.append(filler)
        time.sleep(0.2)

    def close(self) -> None:
        super().close()
        for filler in self.fillers:
            filler.close()
