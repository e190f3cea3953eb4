"""httperf: builds its command, reads its text summary.

What httperf is, and what follows for its results:
- an open model: `--rate` starts connections on a schedule whatever the responses do;
  toolbench sends one request per connection, so the connection rate is the request rate.
  A closed cell, or keep-alive (several calls on a connection, which turns the rate into
  one of connections), is unsupported; the cell's concurrency does not apply;
- it times a connection from its actual start, not its scheduled one: a request is not held
  back by a slow response, but when httperf lags its own schedule the lag is not counted
  (coordinated omission not corrected);
- it prints times in ms with one decimal: per connection min, mean, max, median and stddev
  (connect, request and reply: with one call each, the whole request), the mean time to
  the reply's first byte and the mean connect time; no other percentile;
- its errors are counted by cause; a reply is counted by status class only;
- HTTP/1.1, in clear or over TLS with `--ssl` (an https:// URL; its summary is the same); no
  HTTP/2. It never checks the server's certificate and has no option to (`HttperfAdapter.TLS_TRUST`).
A workload is its session file (--wsesslog: toolbench.adapters.httperf_workload), sessions at a rate.
Its output from runs of its own, with several calls per connection or sessions, is read too
(toolbench.adapters.httperf_summary: its requests are the counts, not its connections), and
output appended to by run after run gives one result per run."""
from __future__ import annotations

import math
import re
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

from toolbench.adapters import appended, httperf_summary, httperf_workload
from toolbench.contract.adapter import (SUPPORTED, Adapter, Detection, Found, Invocation, RawOutput, Support,
                                        found_by_version, option)
from toolbench.contract.recipe import TESTS, Apt, Install
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Measurement

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Host

_VERSION = re.compile(r"httperf-(\d[\w.]*)")
FAILURE_TABLE = httperf_summary.FAILURE_TABLE  # where it always was


class HttperfAdapter(Adapter):
    name = "httperf"
    workload_features = httperf_workload.FEATURES  # its session file (--wsesslog)
    install = Install((Apt(("httperf",), program="httperf"),), TESTS)
    option_types = {"timeout_s": int}
    protocols = frozenset({"http1", "https"})
    protocol_refusals = {protocol: "httperf speaks HTTP/1.1 (over TLS with --ssl): no HTTP/2"
                         for protocol in ("h2", "h2c")}
    # The contract's TLS_TRUST: a TLS cell of a tool that does not check the certificate says it in a note.
    TLS_TRUST = "httperf never checks the server's certificate: it has no option to trust a CA file"

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        # -V prints the version and goes on to run a test; the bad count after it ends it first.
        return found_by_version(host, path or "httperf", ["-V", "--num-conns=x"], _VERSION)

    def supports(self, cell: "Cell") -> Support:
        if cell.workload is not None:
            return httperf_workload.supports(cell) or SUPPORTED
        if cell.rate_rps is None:
            return Support(False, "httperf has no closed model: it starts connections at a fixed rate (--rate)")
        if cell.keepalive:
            return Support(False, "httperf's --rate starts connections: toolbench sends one request on each, "
                                  "so keep-alive is not run")
        req = cell.request
        if req.body is not None:
            return Support(False, "httperf sends a body only from a session log file (--wsesslog)")
        if any("\\" in text for pair in req.headers.items() for text in pair):
            return Support(False, "httperf reads escape sequences in --add-header: a backslash would not be sent "
                                  "as given")
        if cell.stop.duration_s is None and cell.stop.requests_per_connection is not None:
            return Support(False, "httperf's connections each send one request here: no count per connection")
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        assert cell.url is not None and cell.rate_rps is not None, "supports() and the runner see to both"
        url = urllib.parse.urlsplit(cell.url)
        if cell.workload is not None:
            return _workload_invocation(cell, found, url)
        if cell.stop.duration_s is not None:
            conns = max(1, math.ceil(cell.rate_rps * cell.stop.duration_s))
        else:
            conns = cell.stop.requests or 1
        uri = url.path or "/"
        if url.query:
            uri += "?" + url.query
        argv = [found.path, "--hog", "--server", url.hostname or "127.0.0.1",
                "--port", str(url.port or (443 if url.scheme == "https" else 80)), "--uri", uri,
                "--rate", f"{cell.rate_rps:g}", "--num-conns", str(conns), "--num-calls", "1",
                "--timeout", str(option(cell, "timeout_s", 30))]
        if url.scheme == "https":
            argv.append("--ssl")
        if cell.request.method != "GET":
            argv += ["--method", cell.request.method]
        for key, value in cell.request.headers.items():
            argv += ["--add-header", f"{key}: {value}\\n"]  # httperf turns the two characters \n into a newline
        return Invocation(argv=argv)

    def recognizes(self, path: Path, text: str) -> bool:
        return text.startswith("httperf --")

    def parts(self, raw: RawOutput) -> list[str]:
        """Output appended to by run after run (a loop over rates): one result per run."""
        return appended.names(appended.spans(raw.stdout, httperf_summary.COMMAND))

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)


def _workload_invocation(cell: "Cell", found: Found, url: urllib.parse.SplitResult) -> Invocation:
    """A workload: sessions from the session file (adapters/httperf_workload.py)."""
    text, sessions = httperf_workload.session_file(cell)
    argv = [found.path, "--hog", "--server", url.hostname or "127.0.0.1",
            "--port", str(url.port or (443 if url.scheme == "https" else 80)),
            *httperf_workload.args(cell, sessions), "--timeout", str(option(cell, "timeout_s", 30))]
    if url.scheme == "https":
        argv.append("--ssl")
    return Invocation(argv=argv, files={httperf_workload.SESSIONS_FILE: text})


def parse(raw: RawOutput) -> Measurement:
    text = appended.chosen("httperf", appended.spans(raw.stdout, httperf_summary.COMMAND), raw)
    return httperf_summary.parse_summary(text, raw.stderr, Numbers("httperf", raw.source))


ADAPTER = HttperfAdapter()
