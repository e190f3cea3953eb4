"""`toolbench engine URL --locust-master HOST:PORT`: the engine as a Locust worker.

It joins a Locust master as Locust's own workers do (a ZeroMQ DEALER socket named by
its node id, msgpack messages: client_ready, ack, spawn, spawning, spawning_complete,
heartbeat, stats, stop, client_stopped, quit), runs as many users as the master assigns
(each user one connection sending the engine's one request in a closed loop) and sends
Locust's stats every report interval, so the master's output counts the engine's
requests as it counts its own workers'. A worker that hears nothing from its master for
`master_timeout_s` (or, before it first answers, `join_timeout_s`) stops by itself."""
from __future__ import annotations

import asyncio
import dataclasses
import gc
import signal
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable

import psutil
import zmq

from toolbench.engine import locust_protocol as proto
from toolbench.engine.locust_users import Users
from toolbench.engine.options import EngineError, EngineOptions, parse_url, request_bytes, validate
from toolbench.errors import UsageError

CONNECT_RETRY_S = 5.0  # runners.CONNECT_TIMEOUT: client_ready is sent again this often until acked
# How long a worker waits for its master's first answer: a master started beside it may take
# seconds to import Locust on a busy machine (Locust's own workers wait 5 minutes).
JOIN_WAIT_S = 60.0
LINGER_MS = 2000  # the last stats message is still delivered after the socket is closed


@dataclass(frozen=True)
class WorkerOptions:
    master_host: str
    master_port: int
    request: EngineOptions  # url, method, headers, body, keep-alive and timeout of the one request
    throughput: float | None = None  # requests/s per user, as Locust's constant_throughput; None: no wait
    master_timeout_s: float = 10.0
    join_timeout_s: float = JOIN_WAIT_S
    report_interval_s: float = proto.REPORT_INTERVAL_S


def options_from_args(args: Any, request_of: Callable[[Any], EngineOptions]) -> WorkerOptions:
    """The worker's options from `toolbench engine`'s; flags that the master decides, or
    that only a run of its own has, are refused rather than silently ignored."""
    given = [flag for flag, value in (("-c", args.connections), ("-d", args.duration), ("-n", args.requests),
                                      ("-w", args.workers), ("--rate", args.rate), ("--json-out", args.json_out))
             if value is not None] + [flag for flag, on in (("--json", args.json), ("--warmup", args.warmup))
                                      if on]
    if given:
        raise UsageError(f"{', '.join(given)}: not with --locust-master (the master sets the users and "
                         "the run's end; its output holds the results)")
    host, port = parse_master(args.locust_master)
    request = dataclasses.replace(request_of(args), connections=1, duration_s=1.0)
    timeout = args.master_timeout if args.master_timeout is not None else WorkerOptions.master_timeout_s
    join = args.join_timeout if args.join_timeout is not None else WorkerOptions.join_timeout_s
    return WorkerOptions(master_host=host, master_port=port, request=request, throughput=args.user_throughput,
                         master_timeout_s=timeout, join_timeout_s=join)


def parse_master(text: str) -> tuple[str, int]:
    """`HOST:PORT` (an IPv6 host in brackets) -> (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise EngineError(f"--locust-master: expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


class MasterLink:
    """The DEALER socket to the master; sends never block (a gone master drops them)."""

    def __init__(self, host: str, port: int, node_id: str) -> None:
        self.node_id = node_id
        self.address = f"tcp://[{host}]:{port}" if ":" in host else f"tcp://{host}:{port}"
        self.ipv6 = ":" in host
        self.context = zmq.Context()
        self.socket = self._open()

    def _open(self) -> zmq.Socket:
        sock = self.context.socket(zmq.DEALER)
        sock.setsockopt(zmq.IDENTITY, self.node_id.encode())
        sock.setsockopt(zmq.TCP_KEEPALIVE, 1)
        sock.setsockopt(zmq.TCP_KEEPALIVE_IDLE, 30)
        sock.setsockopt(zmq.LINGER, LINGER_MS)
        if self.ipv6:
            sock.setsockopt(zmq.IPV6, 1)
        sock.connect(self.address)
        return sock

    @property
    def fd(self) -> int:
        return int(self.socket.getsockopt(zmq.FD))

    def reopen(self) -> None:
        self.socket.close(linger=0)
        self.socket = self._open()

    def send(self, kind: str, data: Any = None) -> None:
        try:
            self.socket.send(proto.encode(kind, data, self.node_id), zmq.NOBLOCK)
        except zmq.Again:
            pass  # the master is unreachable and the queue full: its timeout ends this worker

    def received(self) -> list[bytes]:
        """Every frame waiting. ZeroMQ's descriptor is edge-triggered: drain it all."""
        frames = []
        while self.socket.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            frames.append(self.socket.recv(zmq.NOBLOCK))
        return frames

    def close(self) -> None:
        self.socket.close()
        self.context.term()


class Worker:
    """One engine worker process under a Locust master."""

    def __init__(self, loop: asyncio.AbstractEventLoop, opts: WorkerOptions, say: Callable[[str], None]) -> None:
        req = opts.request
        target = parse_url(req.url)
        self.loop = loop
        self.opts = opts
        self.say = say
        self.name, self.method = target.path, req.method
        self.users = Users(loop, target, request_bytes(req, target), keepalive=req.keepalive,
                           head=req.method == "HEAD", timeout_s=req.timeout_s,
                           pacing_s=1 / opts.throughput if opts.throughput else None)
        self.link = MasterLink(opts.master_host, opts.master_port, f"toolbench-engine_{uuid.uuid4().hex}")
        self.state = proto.READY
        self.acked = False
        self.classes: dict[str, int] = {}
        self.last_spawn = 0.0
        self.report = proto.Report.empty(self.name, self.method, time.time())
        self.heard = time.monotonic()  # the last message from the master (or the start)
        self.asked = 0.0  # when client_ready was last sent
        self.next_report = time.monotonic() + opts.report_interval_s
        self.done: asyncio.Future[int] = loop.create_future()
        self.process = psutil.Process()
        self.process.cpu_percent()
        self.unknown: set[str] = set()
        self.sent = [0, 0]  # requests and failures reported, over the whole run

    async def run(self) -> int:
        self.loop.add_reader(self.link.fd, self._drain)
        self._ready()
        self._tick()
        try:
            return await self.done
        finally:
            self.loop.remove_reader(self.link.fd)
            self.users.resize(0)
            self.link.close()
            self.say(f"{self.sent[0]} requests ({self.sent[1]} failed) reported to the Locust master")

    def _ready(self) -> None:
        self.asked = time.monotonic()
        self.link.send("client_ready", _locust_version())
        self._drain()

    def _tick(self) -> None:
        """Once a second, just after the wall clock's second turns (Locust counts requests
        per wall-clock second): the stats, the heartbeat, timeouts and the master's silence."""
        if self.done.done():
            return
        wall = time.time()
        self._flush(int(wall - 0.5), wall)
        self.users.sweep()
        now = time.monotonic()
        if self.acked:
            self.link.send("heartbeat", {"state": self.state, "current_cpu_usage": self.process.cpu_percent(),
                                         "current_memory_usage": self.process.memory_info().rss})
            if now >= self.next_report:
                self._send_stats()
        elif now - self.asked >= CONNECT_RETRY_S:
            self._ready()
        silent = now - self.heard
        if silent > (self.opts.master_timeout_s if self.acked else self.opts.join_timeout_s):
            where = f"{self.opts.master_host}:{self.opts.master_port}"
            self.say(f"no Locust master answered at {where} for {silent:.0f}s; stopped" if not self.acked else
                     f"lost the Locust master at {where}: no heartbeat for {silent:.0f}s; stopped")
            self._finish(1)
            return
        self._drain()
        self.loop.call_later(1.0 - (time.time() % 1.0) + 0.001, self._tick)

    def _flush(self, second: int, wall: float) -> None:
        lat, content, failed, failures = self.users.take()
        self.report.entry.add_second(second, wall, lat, failed, content)
        for text, count in failures.items():
            self.report.error(text, count, wall)

    def _send_stats(self) -> None:
        self.link.send("stats", self.report.message(self.classes))
        self.sent[0] += self.report.entry.num_requests
        self.sent[1] += self.report.entry.num_failures
        self.report = proto.Report.empty(self.name, self.method, time.time())
        self.next_report = time.monotonic() + self.opts.report_interval_s

    def _drain(self) -> None:
        try:
            frames = self.link.received()
        except zmq.ZMQError as exc:
            self.say(f"Locust master link: {exc}")
            return
        for frame in frames:
            try:
                kind, data = proto.decode(frame)
            except ValueError as exc:
                self.say(str(exc))
                continue
            self.heard = time.monotonic()
            self._handle(kind, data)

    def _handle(self, kind: str, data: Any) -> None:
        if kind == "ack":
            self.acked = True
        elif kind == "spawn" and isinstance(data, dict):
            self._spawn(data)
        elif kind == "stop":
            self._stop()
        elif kind == "quit":
            self._last_stats()
            self._finish(0)
        elif kind == "reconnect":
            self.loop.remove_reader(self.link.fd)
            self.link.reopen()
            self.loop.add_reader(self.link.fd, self._drain)
        elif kind not in ("heartbeat", "spawning_complete") and kind not in self.unknown:
            self.unknown.add(kind)
            self.say(f"ignored the Locust master's {kind!r} messages: the engine has no use for them")

    def _spawn(self, job: dict[str, Any]) -> None:
        self.link.send("spawning")
        stamp = job.get("timestamp")
        counts = job.get("user_classes_count")
        if not isinstance(stamp, (int, float)) or stamp <= self.last_spawn or not isinstance(counts, dict):
            return  # an older (or malformed) spawn than the last one: Locust's workers discard it too
        self.last_spawn = stamp
        wanted = {str(k): v for k, v in counts.items() if isinstance(v, int) and v >= 0}
        if self.state not in (proto.RUNNING, proto.SPAWNING):
            self.report = proto.Report.empty(self.name, self.method, time.time())
        self.state = proto.SPAWNING
        self.users.resize(sum(wanted.values()))
        self.classes = wanted
        self.link.send("spawning_complete", {"user_classes_count": dict(wanted), "user_count": sum(wanted.values())})
        self.state = proto.RUNNING

    def _stop(self) -> None:
        self.users.resize(0)
        self.classes = {key: 0 for key in self.classes}
        self.state = proto.STOPPED
        self.link.send("client_stopped")
        self.loop.call_soon(self._after_stop)

    def _after_stop(self) -> None:
        self.link.send("client_ready", _locust_version())
        self.state = proto.READY

    def _last_stats(self) -> None:
        """Stops the users and sends what they did since the last report."""
        self.users.resize(0)
        wall = time.time()
        self._flush(int(wall), wall)
        self._send_stats()

    def interrupted(self, signum: int) -> None:
        """SIGTERM or SIGINT: the last stats, then quit, as Locust's own workers say it."""
        self._last_stats()
        self.link.send("quit")
        self._finish(128 + signum)

    def _finish(self, code: int) -> None:
        if not self.done.done():
            self.done.set_result(code)


def run(opts: WorkerOptions) -> int:
    """Runs the worker until the master says quit (0) or is lost (1)."""
    validate(opts.request)
    import uvloop

    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        worker = Worker(loop, opts, lambda line: print(f"engine: {line}", file=sys.stderr, flush=True))
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, worker.interrupted, signum)
        return loop.run_until_complete(worker.run())
    finally:
        loop.close()


def _locust_version() -> str | int:
    """What client_ready carries: the Locust version installed beside the engine, else -1,
    which a master accepts without a version warning."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("locust")
    except PackageNotFoundError:
        return -1
