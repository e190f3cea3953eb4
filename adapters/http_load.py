"""http_load: builds its command and URL file, reads its stdout summary and the
per-URL error lines it writes to stderr.

What http_load is, and what follows for its results:
- one HTTP/1.0 GET per connection, no keep-alive, no headers or body of ours:
  other cells are planned as unsupported;
- `-rate N` starts N connections a second whatever the responses do (an open
  model, which the runner records from the cell), N a whole number up to 1000;
- it times the connect and the first response byte, never the whole request;
- it prints numbers with %g (six significant digits: `2.55908e+09` bytes), drops
  the fetches/sec line when the run took 10 ms or less, has no -version flag,
  and exits 0 even when every connection was refused;
- a "fetch" is any connection it closed, failed ones included;
- https:// URLs only when it was built with SSL (USE_SSL in its Makefile); one built without it
  stops at once with `unknown protocol - https://...` on stderr (read_url_file). Its TLS
  handshake blocks its one loop (handle_connect clears O_NDELAY around SSL_connect), it offers
  no ALPN (no HTTP/2), and it never checks the server's certificate: its SSL_CTX is made
  without verification and it has no option to trust a CA (`HttpLoadAdapter.TLS_TRUST`)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from toolbench.adapters import workload_single
from toolbench.contract.adapter import (SUPPORTED, Adapter, Detection, Found, Invocation, Missing, RawOutput, Support,
                                        Threads, missing_program, option)
from toolbench.contract.recipe import Install
from toolbench.errors import HostError, ParseError
from toolbench.record import failures
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Counts, Failures, Fidelity, Latency, Measurement, Omission, Rates, Timing, Transfer

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Host

MAX_RATE = 1000  # http_load refuses a higher -rate
URL_FILE = "urls.txt"

_NUM = r"([-+\d.eE]+|nan|inf)"
_SUMMARY = re.compile(rf"^(\d+) fetches, (\d+) max parallel, {_NUM} bytes, in {_NUM} seconds$")
_RATES = re.compile(rf"^{_NUM} fetches/sec, {_NUM} bytes/sec$")
_MSECS = re.compile(rf"^msecs/(connect|first-response): {_NUM} mean, {_NUM} max, {_NUM} min$")
_TALLY = re.compile(r"^(\d+) (timeouts|bad byte counts|bad checksums)$")
_CODE = re.compile(r"^\s+code (\d{3}) -- (\d+)$")
_URL_ERROR = re.compile(r"^([a-z]+://\S+?): (.+)$")
# [^\S\n], not \s: from each of thousands of blank lines, \s would run over all those after it.
_USAGE = re.compile(r"^usage:[^\S\n]+\S*http_load\b", re.MULTILINE)
# A per-URL error message (strerror text or http_load's own) to a failure class (toolbench.record.failures).
FAILURE_TABLE: failures.Table = (
    ("timeout", ("timed out",)),
    ("connect", ("refused", "no route to host", "network is unreachable", "cannot assign requested address",
                 "connect error", "ssl connection failed")),
    ("read", ("reset by peer", "broken pipe")),
)
# Per-URL lines about responses that did arrive: http_load's own consistency checks, not failures.
_MISMATCH = ("byte count wrong", "checksum wrong")


class HttpLoadAdapter(Adapter):
    name = "http_load"
    workload_features = workload_single.one_request(
        "toolbench gives http_load one URL",
        mix="http_load draws the URLs of its file at random, GET only and without weights")
    install = Install(impossible="in no package registry toolbench reaches: put http_load on the PATH yourself")
    threads = Threads.ONE  # one select loop
    option_types = {"timeout_s": int}
    protocols = frozenset({"http1", "https"})
    protocol_refusals = {protocol: "http_load speaks HTTP/1.x, one GET per connection (over TLS when built with "
                                   "SSL): no HTTP/2" for protocol in ("h2", "h2c")}
    # The contract's TLS_TRUST: a TLS cell of a tool that does not check the certificate says it in a note.
    TLS_TRUST = "http_load never checks the server's certificate: it has no option to trust a CA file"

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        """http_load has no -version flag; run bare, it prints its usage and exits 1.
        That usage names no version, so an http_load that answers so is "unknown"."""
        found = host.which(path or "http_load")
        if found is None:
            return missing_program(host, path or "http_load")
        try:
            captured = host.capture([found])
        except HostError as exc:
            return Missing(str(exc))
        if not _USAGE.search(captured.stdout + captured.stderr):
            return Missing(f"{host.label}: {found} run bare did not print http_load's usage")
        return Found(found, "unknown")

    def supports(self, cell: "Cell") -> Support:
        if cell.keepalive:
            return Support(False, "http_load has no keep-alive: it opens a new connection for every fetch")
        req = cell.request
        if req.method != "GET" or req.body is not None or req.headers:
            return Support(False, "http_load sends only a plain GET, without headers or a body of ours")
        if cell.rate_rps is not None and (cell.rate_rps != int(cell.rate_rps) or not 1 <= cell.rate_rps <= MAX_RATE):
            return Support(False, f"http_load's -rate takes a whole number from 1 to {MAX_RATE}, "
                                  f"not {cell.rate_rps:g}")
        if cell.stop.requests_per_connection is not None:
            return Support(False, "http_load counts fetches in total (-fetches), over new connections each "
                                  "time: it has no count per connection")
        duration = cell.stop.duration_s
        if duration is not None and (duration != int(duration) or duration < 1):
            return Support(False, f"http_load's -seconds takes whole seconds, not {duration:g}s")
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        assert cell.url is not None, "the runner resolves the URL before building"
        argv = [found.path, "-timeout", str(option(cell, "timeout_s", 30))]
        if cell.rate_rps is not None:
            argv += ["-rate", str(int(cell.rate_rps))]
        else:
            argv += ["-parallel", str(cell.concurrency)]
        if cell.stop.requests is not None:
            argv += ["-fetches", str(cell.stop.requests)]
        else:
            assert cell.stop.duration_s is not None
            argv += ["-seconds", str(int(cell.stop.duration_s))]
        argv.append(URL_FILE)
        return Invocation(argv=argv, files={URL_FILE: cell.url + "\n"})

    def classify(self, path: Path, text: str) -> str:
        return "stdout"

    def recognizes(self, path: Path, text: str) -> bool:
        return re.search(r"^\d+ fetches, \d+ max parallel, ", text, re.MULTILINE) is not None

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)


def parse(raw: RawOutput) -> Measurement:
    num = Numbers("http_load", raw.source)
    lines = [line.rstrip() for line in raw.stdout.splitlines()]
    summary = next((m for line in lines if (m := _SUMMARY.match(line))), None)
    errors = _stderr_errors(raw.stderr)
    if summary is None:
        raise ParseError("http_load", _no_summary(raw.stderr, errors), raw.source)
    fetches, max_parallel = num.integer(summary.group(1), "fetches"), num.integer(summary.group(2), "max parallel")
    received = num.decimal(summary.group(3), "bytes")
    notes: list[str] = []
    rates = next((m for line in lines if (m := _RATES.match(line))), None)
    if rates is None:
        notes.append("http_load printed no fetches/sec line (it drops it for runs of 10 ms or less)")
    msecs = {m.group(1): tuple(num.decimal(m.group(i), f"msecs/{m.group(1)}") for i in (2, 3, 4))
             for line in lines if (m := _MSECS.match(line))}
    tallies = {m.group(2): num.integer(m.group(1), m.group(2)) for line in lines if (m := _TALLY.match(line))}
    codes = _codes(lines, num)
    counts = _counts(fetches, codes, tallies, errors, notes)
    for kind, (mean, top, bottom) in msecs.items():
        notes.append(f"msecs/{kind}: {mean:g} mean, {top:g} max, {bottom:g} min")
    if msecs:
        notes.append("http_load times the connect and the first response byte only, not whole requests")
    if "e" in summary.group(3).lower():
        notes.append(f"http_load printed the byte count as {summary.group(3)} (%g: six significant digits)")
    notes.append("bytes are response bodies only; fetches include failed connections")
    return Measurement(
        tool="http_load",
        coordinated_omission=Omission.NOT_CORRECTED,  # each request timed from its actual send
        timing=Timing(duration_s=num.decimal(summary.group(4), "seconds")),
        counts=counts,
        rates=Rates(rps=num.decimal(rates.group(1), "fetches/sec") if rates else None),
        transfer=Transfer(received_bytes=round(received),
                          received_bytes_per_s=num.decimal(rates.group(2), "bytes/sec") if rates else None),
        latency=Latency(connect_mean_ms=msecs["connect"][0] if "connect" in msecs else None,
                        ttfb_mean_ms=msecs["first-response"][0] if "first-response" in msecs else None,
                        resolution_ms=0.001 if msecs else None),
        fidelity={"counts.requests_ok": Fidelity.DERIVED, "counts.requests_failed": Fidelity.DERIVED},
        notes=notes,
        concurrency=max_parallel,
    )


def _codes(lines: list[str], num: Numbers) -> dict[int, int]:
    """Responses by status; http_load prints each code once, a repeated one is added up."""
    codes: dict[int, int] = {}
    for line in lines:
        if m := _CODE.match(line):
            code = int(m.group(1))
            codes[code] = codes.get(code, 0) + num.integer(m.group(2), f"code {code}")
    return codes


def _counts(fetches: int, codes: dict[int, int], tallies: dict[str, int], errors: dict[str, int],
            notes: list[str]) -> Counts:
    ok = sum(n for code, n in codes.items() if 200 <= code < 400)
    http_4xx = sum(n for code, n in codes.items() if 400 <= code < 500)
    http_5xx = sum(n for code, n in codes.items() if 500 <= code < 600)
    odd_codes = sum(n for code, n in codes.items() if not 200 <= code < 600)
    by_class = failures.tally(errors, FAILURE_TABLE)
    # Timeouts are counted from the summary's own "N timeouts" line.
    classes = {name: by_class[name] for name in ("connect", "read", "other")}
    timeouts = tallies.get("timeouts", 0)
    without_status = fetches - sum(codes.values())
    explained = timeouts + sum(classes.values())
    if without_status > explained:
        # http_load closes a connection that ends before a status line without a word.
        classes["read"] += without_status - explained
        notes.append(f"{without_status - explained} fetches ended without a status line or an error message: "
                     "counted as read failures")
    for tally in ("bad byte counts", "bad checksums"):
        if tallies.get(tally):
            notes.append(f"http_load reported {tallies[tally]} {tally} (responses whose size or checksum "
                         "differed from the first one's); they are not counted as failures")
    return Counts(
        requests_total=fetches,
        requests_ok=ok,
        requests_failed=fetches - ok,
        failures=Failures(connect=classes["connect"], timeout=timeouts, read=classes["read"],
                          http_4xx=http_4xx, http_5xx=http_5xx, other=classes["other"] + odd_codes),
        status_codes=codes,
    )


def _stderr_errors(stderr: str) -> dict[str, int]:
    """Per-URL error lines ("http://...: Connection refused"), by message."""
    errors: dict[str, int] = {}
    for line in stderr.splitlines():
        m = _URL_ERROR.match(line.strip())
        if m and not any(word in m.group(2) for word in _MISMATCH):
            errors[m.group(2)] = errors.get(m.group(2), 0) + 1
    return errors


def _no_summary(stderr: str, errors: dict[str, int]) -> str:
    if _USAGE.search(stderr):
        return "http_load printed its usage text: it did not accept the command"
    if errors:
        listed = "; ".join(f"{message} ({count}x)" for message, count in errors.items())
        return f"no summary on stdout, only per-URL errors on stderr: {listed}"
    last = [line.strip() for line in stderr.splitlines() if line.strip()]
    return "no summary line ('N fetches, N max parallel, ...') on stdout" + (f"; stderr: {last[-1][:300]}" if last else "")



ADAPTER = HttpLoadAdapter()
