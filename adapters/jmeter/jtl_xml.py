"""Reads JMeter's XML JTL as a stream: `<testResults>` with one `<httpSample>` (or
`<sample>`, or a plug-in's element with the same attributes) per sample; each top-level
sample is dropped from memory once read.

What is a request, as JMeter's summariser counts them: a sample, once, whatever it nests
(the hops of a redirect followed, embedded resources: its sub-results). A transaction
controller's sample (its message says "Number of samples in transaction") is none: it sums
its children. Without "generate parent sample" those children are samples of their own
beside it; with it they are nested in it, and are requests all the same (the summariser,
which skips transaction samples, skips them with it: a note says so)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import BinaryIO

from toolbench.adapters.jmeter.agg import TRANSACTION, Aggregate, Batch, Jtl, JtlError, add, is_count, no_sample

BATCH = 65536
# JMeter (XStream) saves response data as it came, control characters as character references
# (`&#x1;`), which XML 1.0 forbids: they are read as U+FFFD, the rest of the file as written.
_CHAR_REF = re.compile(rb"&#(x[0-9a-fA-F]{1,8}|[0-9]{1,10});")
_REPLACEMENT = b"&#xFFFD;"


class _ValidRefs:
    """A binary file whose invalid character references read as U+FFFD; a reference cut
    by a read is kept back for the next one."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.held = b""

    def read(self, size: int = -1) -> bytes:
        while True:
            chunk = self.raw.read(size if size and size > 0 else -1)
            data = self.held + chunk
            self.held = b""
            if not chunk:  # the end of the file
                return _CHAR_REF.sub(_valid_ref, data)
            amp = data.rfind(b"&", max(0, len(data) - 16))
            if amp != -1 and data.find(b";", amp) == -1:
                data, self.held = data[:amp], data[amp:]
            if data:
                return _CHAR_REF.sub(_valid_ref, data)


def _is_sample(elem: ET.Element) -> bool:
    """JMeter's own samples are <httpSample> and <sample>; a plug-in's is named after its
    class (a WebDriver sampler's com.googlecode...SampleResultWithSubs) with the same attributes."""
    return elem.tag in ("httpSample", "sample") or all(name in elem.attrib for name in ("t", "ts", "s", "lb"))


def _valid_ref(match: "re.Match[bytes]") -> bytes:
    text = match.group(1)
    code = int(text[1:], 16) if text[:1] == b"x" else int(text)
    allowed = code in (0x9, 0xA, 0xD) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or 0x10000 <= code <= 0x10FFFF
    return match.group(0) if allowed else _REPLACEMENT
# expat's codes for a document that ends too early: no element found, unclosed token, partial character.
_ENDS_EARLY = (3, 5, 6)


def read_xml(path: Path, into: Aggregate | None = None) -> Jtl:
    with open(path, "rb") as raw:
        return _read(_ValidRefs(raw), into)


def _read(source: _ValidRefs, into: Aggregate | None) -> Jtl:
    agg, notes, url = Aggregate() if into is None else into, [], None
    rows: dict[str, list] = {name: [] for name in ("ts_ms", "elapsed_ms", "ok", "code", "received", "sent",
                                                   "latency_ms", "connect_ms", "threads")}
    nonhttp: dict[str, int] = {}
    depth, root = 0, None
    try:
        for event, elem in ET.iterparse(source, events=("start", "end")):
            if event == "start":
                depth += 1
                root = elem if root is None else root
                continue
            depth -= 1
            if depth != 1 or not _is_sample(elem):
                continue
            for request, subs in _requests(elem, agg) if _in_window(elem, agg.window) else ():
                leaves = [sub for sub in subs if not any(c is not sub and _is_sample(c) for c in sub.iter())]
                for sample in leaves if agg.subsamples and leaves else [request]:
                    _xml_sample(sample, rows, nonhttp)
                url = url or request.findtext("java.net.URL")
            root.clear()
            if len(rows["ts_ms"]) >= BATCH:
                add(agg, _xml_batch(rows, nonhttp), None)
                rows = {name: [] for name in rows}
                nonhttp = {}
    except LookupError as exc:  # the XML declaration names an encoding Python does not know
        raise JtlError(f"not a readable XML JTL: {exc}") from None
    except ET.ParseError as exc:
        line = exc.position[0]
        if exc.code not in _ENDS_EARLY or agg.rows + len(rows["ts_ms"]) == 0:
            raise JtlError(f"not a well-formed XML JTL: {exc}") from None
        notes.append(f"the XML JTL is cut off at line {line} ({exc}), as when JMeter is killed while "
                     f"writing; the samples before it were read")
    add(agg, _xml_batch(rows, nonhttp), None)
    if agg.rows == 0:
        raise JtlError(no_sample(agg, "the XML JTL has no sample: JMeter ran no request"))
    return Jtl(agg, "xml", url, notes)


def _in_window(elem: ET.Element, window: tuple[int, int] | None) -> bool:
    """Whether a top-level sample belongs to the run being read (runs.py: one run of a JTL
    that several were appended to): by its start, as a transaction's requests start with it."""
    stamp = elem.get("ts", "")
    return window is None or not is_count(stamp) or window[0] <= int(stamp) < window[1]


def _requests(elem: ET.Element, agg: Aggregate):
    """(request, its nested samples) for a top-level sample: the sample itself, or for a
    transaction controller's, the requests among its children (nested transactions too)."""
    if not elem.get("rm", "").startswith(TRANSACTION):
        subs = [child for child in elem.iter() if child is not elem and _is_sample(child)]
        agg.sub_rows += len(subs)
        yield elem, subs
        return
    agg.transaction_rows += 1
    for child in elem:
        if _is_sample(child):
            agg.in_parents += not child.get("rm", "").startswith(TRANSACTION)
            yield from _requests(child, agg)


_XML_INT = {"ts": "ts_ms", "t": "elapsed_ms", "by": "received", "sby": "sent", "lt": "latency_ms",
            "ct": "connect_ms", "na": "threads"}


def _xml_sample(elem: ET.Element, rows: dict[str, list], nonhttp: dict[str, int]) -> None:
    attrs = elem.attrib
    for name in ("t", "ts", "s"):
        if name not in attrs:
            raise JtlError(f"an XML sample without the {name!r} attribute: {dict(attrs)}")
    ok = attrs["s"] == "true"
    rows["ok"].append(ok)
    for attr, name in _XML_INT.items():
        text = attrs.get(attr)
        if text is not None and not is_count(text):
            raise JtlError(f"an XML sample whose {attr!r} is not a whole number: {text[:40]!r}")
        rows[name].append(int(text) if text is not None else None)
    code = attrs.get("rc", "")
    rows["code"].append(int(code) if is_count(code) else -1)
    if rows["code"][-1] < 0 and not ok:
        nonhttp[code] = nonhttp.get(code, 0) + 1


def _xml_batch(rows: dict[str, list], nonhttp: dict[str, int]) -> Batch:
    """An attribute that some sample lacks (older JMeters write no sby or ct) is left out."""
    return Batch.of_lists({name: values for name, values in rows.items() if None not in values}, nonhttp)
