"""The test plan (JMX) JMeter runs for a cell, written from templates/jmeter.jmx.j2.

JMeter evaluates `${...}` in every string of a test plan as a variable or a function
(`${__groovy(...)}` runs code), and the plan is XML: every value reaches it through one
filter, jmx_value, which escapes it for XML and makes it literal for JMeter. The body goes
in a file of its own (BODY), which JMeter sends as it is."""
from __future__ import annotations

import math
import re
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from xml.sax.saxutils import escape

import jinja2

from toolbench.contract.adapter import option
from toolbench.errors import AdapterError

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell

BODY = "body"
_XML_ENTITIES = {'"': "&quot;", "'": "&apos;", "\t": "&#9;", "\n": "&#10;", "\r": "&#13;"}
# XML 1.0 has no way to write the other C0 controls, not even as character references.
NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def test_plan(cell: "Cell") -> str:
    assert cell.url is not None
    url = urlsplit(cell.url)
    req = cell.request
    loops = rounded = None
    if cell.stop.requests_per_connection is not None:
        loops, rounded = cell.stop.requests_per_connection, False  # JMeter's own: each thread loops N times
    elif cell.stop.requests is not None:
        loops = math.ceil(cell.stop.requests / cell.concurrency)
        rounded = loops * cell.concurrency != cell.stop.requests
    template = resources.files("toolbench.adapters.jmeter").joinpath("templates/jmeter.jmx.j2").read_text()
    # Every {{ value }} passes through jmx_value, whatever its field: no value is written unescaped.
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False,
                             finalize=jmx_value)
    return env.from_string(template).render(
        cell_id=cell.id, threads=cell.concurrency, loops=loops, rounded=rounded,
        requests=cell.stop.total_requests(cell.concurrency), duration_s=int(cell.stop.duration_s) if loops is None else None,
        host=url.hostname, port=url.port or (443 if url.scheme == "https" else 80), protocol=url.scheme,
        path=(url.path or "/") + (f"?{url.query}" if url.query else ""), method=req.method,
        body_file=BODY if req.body is not None else None,
        body_type=req.content_type or "application/octet-stream", headers=sorted(req.headers.items()),
        keepalive=cell.keepalive, timeout_ms=int(option(cell, "timeout_s", 30)) * 1000)


def jmx_value(value: Any) -> str:
    """A value as JMeter will read it literally, escaped for XML (element text or attribute).

    JMeter compiles a string with `${` in it as variables and functions; in such a string a
    backslash escapes `$`, `,` and itself. So a `${` is made harmless by writing every `$` as
    the function `${__char(36)}` and doubling every backslash. A string without `${` is
    taken as it is (its backslashes included), so it is left alone."""
    text = "" if value is None else str(value)
    if NOT_XML.search(text):
        raise AdapterError(f"jmeter: a control character cannot be written into a test plan: {text!r}")
    if "${" in text:
        text = text.replace("\\", "\\\\").replace("$", "${__char(36)}")
    return escape(text, _XML_ENTITIES)
