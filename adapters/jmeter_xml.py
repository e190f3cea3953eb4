"""Reads JMeter's XML JTL as a stream: `<testResults>` with one `<httpSample>` (or
`<sample>`) per sample. Nested sub-results are not counted again; each sample is
dropped from memory once read."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from toolbench.adapters.jmeter_agg import Aggregate, Batch, Jtl, JtlError, add, is_count

BATCH = 65536
# expat's codes for a document that ends too early: no element found, unclosed token, partial character.
_ENDS_EARLY = (3, 5, 6)


def read_xml(path: Path, into: Aggregate | None = None) -> Jtl:
    agg, notes, url = Aggregate() if into is None else into, [], None
    rows: dict[str, list] = {name: [] for name in ("ts_ms", "elapsed_ms", "ok", "code", "received", "sent",
                                                   "latency_ms", "connect_ms", "threads")}
    nonhttp: dict[str, int] = {}
    depth, root = 0, None
    try:
        for event, elem in ET.iterparse(path, events=("start", "end")):
            if event == "start":
                depth += 1
                root = elem if root is None else root
                continue
            depth -= 1
            if depth != 1 or elem.tag not in ("httpSample", "sample"):
                continue
            _xml_sample(elem, rows, nonhttp)
            if url is None:
                url = elem.findtext("java.net.URL")
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
        raise JtlError("the XML JTL has no sample: JMeter ran no request")
    return Jtl(agg, "xml", url, notes)


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
