"""`toolbench engine URL ...`: the bundled load generator on the command line."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

import toolbench
from toolbench.engine.interrupt import deferred
from toolbench.engine.options import DEFAULT_COALESCE_S, EngineError, EngineOptions, parse_duration, parse_header
from toolbench.engine.summary import render
from toolbench.errors import UsageError
from toolbench.record.schema import Status

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130

DESCRIPTION = ("toolbench's own load generator: HTTP/1.1 on asyncio and uvloop, every request "
               "timed into HDR histograms. Closed model by default (N connections, no think "
               "time); --rate gives an open model with latency measured from the intended send "
               "time (coordinated omission corrected) and the uncorrected figure beside it.")

EXAMPLES = """examples:
  toolbench engine http://127.0.0.1:8080/ -c 50 -d 10s
  toolbench engine http://127.0.0.1:8080/ -c 50 -d 10s --rate 2000
  toolbench engine http://127.0.0.1:8080/ -c 10 -n 10000 --no-keepalive --json
  toolbench engine https://127.0.0.1:8443/ -c 10 -d 10s --no-keepalive --cacert cert.pem"""


def add_parser(subparsers: Any) -> None:
    """Registers `engine` on the toolbench CLI."""
    parser = subparsers.add_parser("engine", help="run the bundled load generator",
                                   description=DESCRIPTION, epilog=EXAMPLES,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    configure(parser)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", help="http://host:port/path, or https://... for HTTP/1.1 over TLS")
    parser.add_argument("-c", "--connections", type=_positive_int,
                        help="concurrent connections (virtual users); required without --locust-master")
    stop = parser.add_mutually_exclusive_group()
    stop.add_argument("-d", "--duration", type=_duration, help="how long to load, e.g. 10s, 2m")
    stop.add_argument("-n", "--requests", type=_positive_int, help="how many requests to send")
    parser.add_argument("-w", "--workers", type=_positive_int,
                        help="worker processes (default: one per CPU available)")
    parser.add_argument("--rate", type=_positive_float, metavar="R",
                        help="open model: R requests/s in total, spread over the connections")
    parser.add_argument("--no-keepalive", dest="keepalive", action="store_false",
                        help="a new connection per request (as ab without -k)")
    parser.add_argument("-m", "--method", default="GET", help="HTTP method (default GET)")
    parser.add_argument("-H", "--header", action="append", default=[], metavar="'K: V'",
                        help="a request header; repeat for more")
    parser.add_argument("--body", type=Path, metavar="FILE", help="send this file as the body")
    parser.add_argument("--workload", type=Path, metavar="FILE",
                        help="several named requests, data, think time, checks and stages, from this JSON file "
                             "(toolbench writes it from a scenario's workload:); the URL then gives only the "
                             "scheme, host and port; runs on the engine's Python path")
    parser.add_argument("--timeout", type=_duration, default=10.0, metavar="S",
                        help="request timeout (default 10s)")
    parser.add_argument("--connect-timeout", type=_duration, metavar="S",
                        help="connect timeout (default: the request timeout)")
    parser.add_argument("--warmup", type=_duration, default=0.0, metavar="S",
                        help="load for this long first, excluded from the results")
    parser.add_argument("--coalesce", type=_duration, default=DEFAULT_COALESCE_S, metavar="S",
                        help="keep-alive, closed model, run by time: after a batch, wait for the response to "
                             "a request sent up to this long after the oldest in flight (e.g. 200us; default 0: "
                             "read each response as it comes), so that one wake-up reads several; each is timed "
                             "by the kernel's receive timestamp, and the result says how long a connection waited "
                             "before its next request")
    tls = parser.add_argument_group("https")
    tls.add_argument("--cacert", metavar="PEM", help="trust the CA certificate(s) in this file (default: the "
                                                      "system's store); the server's certificate is always verified")
    tls.add_argument("--tls-no-resume", dest="tls_resume", action="store_false",
                     help="a full handshake on every new connection (default: each resumes its slot's last session)")
    parser.add_argument("--json", action="store_true",
                        help="print the result in toolbench's schema (a RunResult) instead of the summary")
    parser.add_argument("--json-out", type=Path, metavar="FILE", help="also write the RunResult to FILE")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on a terminal")
    locust = parser.add_argument_group("as a Locust worker")
    locust.add_argument("--locust-master", metavar="HOST:PORT",
                        help="join this Locust master as a worker: it sets the users and the run's end")
    locust.add_argument("--user-throughput", type=_positive_float, metavar="R",
                        help="each user's requests/s, as Locust's constant_throughput(R) (default: no wait)")
    locust.add_argument("--master-timeout", type=_duration, metavar="S",
                        help="stop when the master has been silent this long (default 10s)")
    locust.add_argument("--join-timeout", type=_duration, metavar="S",
                        help="stop when the master has not answered at all after this long (default 60s)")
    parser.set_defaults(func=run_command)


def options_from_args(args: argparse.Namespace) -> EngineOptions:
    """The options the flags ask for. With a workload's stages, -c, -d and --rate default to its
    peak users, its whole length and its peak rate."""
    workload = None
    connections, duration, rate = args.connections, args.duration, args.rate
    if getattr(args, "workload", None) is not None:
        from toolbench.engine.workload import load

        workload = load(args.workload)
        if workload.stages and args.requests is None and duration is None:
            duration = workload.duration_s
        if workload.open_stages and rate is None:
            rate = workload.peak_rate_rps
        if workload.peak_users is not None and connections is None:
            connections = max(1, workload.peak_users)
    body = b""
    if args.body is not None:
        try:
            body = args.body.read_bytes()
        except OSError as exc:
            raise EngineError(f"--body {args.body}: {exc.strerror}") from None
    return EngineOptions(
        url=args.url, connections=connections, duration_s=duration, requests=args.requests,
        workers=args.workers, rate_rps=rate, keepalive=args.keepalive, method=args.method.upper(),
        headers=tuple(parse_header(h) for h in args.header), body=body, timeout_s=args.timeout,
        connect_timeout_s=args.connect_timeout, warmup_s=args.warmup, cacert=args.cacert,
        tls_resume=args.tls_resume, workload=workload, coalesce_s=args.coalesce)


def run_command(args: argparse.Namespace) -> int:
    # Here, not at the top: the parser exists without the [run] extra (uvloop, httptools),
    # and running without it says which extra to install.
    with deferred():
        from toolbench.engine import coordinator
        from toolbench.engine.result import run_result

    if args.locust_master is not None:
        from toolbench.engine import locust_worker

        if args.workload is not None:
            raise UsageError("--workload is not for a Locust worker: the master's locustfile says what to send")

        return locust_worker.run(locust_worker.options_from_args(args, options_from_args))
    if args.user_throughput is not None or args.master_timeout is not None or args.join_timeout is not None:
        raise UsageError("--user-throughput, --master-timeout and --join-timeout are for a Locust worker "
                         "(--locust-master)")
    opts = options_from_args(args)
    if opts.connections is None or (opts.duration_s is None and opts.requests is None):
        raise UsageError("give -c/--connections and one of -d/--duration or -n/--requests "
                         "(or --locust-master HOST:PORT, or a --workload with stages)")
    progress = ProgressLine(sys.stderr) if sys.stderr.isatty() and not args.no_progress else None
    try:
        collected = coordinator.run(opts, progress.update if progress else None)
    finally:
        if progress:
            progress.clear()
    result = run_result(collected, version())
    if args.json_out is not None:
        try:
            args.json_out.write_text(json.dumps(result.to_dict(), indent=1) + "\n")
        except OSError as exc:
            raise EngineError(f"--json-out {args.json_out}: {exc.strerror}") from None
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
    elif collected.unreachable:
        raise EngineError(f"{opts.url}: {collected.error}")
    else:
        print(render(result), end="")
    status = result.outcome.status
    if status is Status.INTERRUPTED:
        return EXIT_INTERRUPTED
    if status is not Status.OK and result.outcome.error and (args.json or args.json_out is not None):
        # Whoever reads the result file also gets the reason on stderr, beside the exit code.
        print(f"engine: {result.outcome.error}", file=sys.stderr)
    return EXIT_OK if status is Status.OK else EXIT_FAILED


class ProgressLine:
    """One line on a terminal, rewritten each second."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def update(self, elapsed_s: float, requests: int, errors: int) -> None:
        rate = requests / elapsed_s if elapsed_s else 0.0
        self.stream.write(f"\r  {elapsed_s:4.0f}s  {requests:>10} requests  {rate:>10.0f} req/s"
                          f"  {errors} errors ")
        self.stream.flush()

    def clear(self) -> None:
        self.stream.write("\r\033[K")
        self.stream.flush()


def version() -> str:
    return toolbench.__version__


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except EngineError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value
