"""A run as JUnit XML, the test-report format Jenkins and GitLab read: one test suite for the
cells (a failed cell fails, an unsupported one is skipped, and so is a disturbed one: it did not
fail, and its figures are not to be trusted) and one for the criteria (a
criterion not met fails; an unknown one fails too, typed `unknown`: it did not pass)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from toolbench.errors import ToolbenchError
from toolbench.record import outfile
from toolbench.record.schema import RunResult, Status
from toolbench.scenario.criteria import Evaluation, Verdict

# XML 1.0 has no way to carry these, not even escaped; a tool's error may hold them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
SKIPPED = (Status.UNSUPPORTED, Status.DISTURBED)


@dataclass(frozen=True)
class Cells:
    results: list[RunResult]  # the latest record of each cell
    missing: list[str]  # planned cells with no record (the run stopped before them)


def clean(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value)


def document(name: str, cells: Cells, evaluations: list[Evaluation]) -> ET.Element:
    root = ET.Element("testsuites", name=clean(name))
    root.append(_cells_suite(f"{name}: cells", cells))
    root.append(_criteria_suite(f"{name}: criteria", evaluations))
    root.set("tests", str(sum(int(s.get("tests", "0")) for s in root)))
    root.set("failures", str(sum(int(s.get("failures", "0")) for s in root)))
    root.set("errors", "0")
    return root


def _suite(name: str, cases: list[ET.Element]) -> ET.Element:
    suite = ET.Element("testsuite", name=clean(name), tests=str(len(cases)),
                       failures=str(sum(1 for c in cases if c.find("failure") is not None)), errors="0",
                       skipped=str(sum(1 for c in cases if c.find("skipped") is not None)))
    suite.extend(cases)
    return suite


def _cells_suite(name: str, cells: Cells) -> ET.Element:
    cases = []
    for r in cells.results:
        case = ET.Element("testcase", name=clean(r.identity.cell_id), classname=clean(f"cells.{r.identity.label}"))
        if r.measurement.timing.wall_s is not None:
            case.set("time", f"{r.measurement.timing.wall_s:.3f}")
        status = r.outcome.status
        if status in SKIPPED:
            said = f"disturbed: {r.outcome.error}" if status is Status.DISTURBED else r.outcome.error
            ET.SubElement(case, "skipped").text = clean(said or status.value)
        elif status is not Status.OK:
            failure = ET.SubElement(case, "failure", type=status.value,
                                    message=clean(f"{status.value.replace('_', ' ')}: {r.outcome.error or ''}"))
            failure.text = clean(r.outcome.error or status.value)
        cases.append(case)
    for cell_id in cells.missing:
        case = ET.Element("testcase", name=clean(cell_id), classname="cells")
        ET.SubElement(case, "failure", type="not_run", message="not run: the run stopped before this cell")
        cases.append(case)
    return _suite(name, cases)


def _criteria_suite(name: str, evaluations: list[Evaluation]) -> ET.Element:
    cases = []
    for e in evaluations:
        case = ET.Element("testcase", name=clean(f"{e.criterion} [{e.subject}]"), classname="criteria")
        if e.verdict is not Verdict.PASSED:
            failure = ET.SubElement(case, "failure", type=e.verdict.value,
                                    message=clean(f"{e.verdict.value}: {e.criterion}: {e.detail}"))
            failure.text = clean(f"{e.where}: {e.criterion} at {e.subject}: {e.verdict.value}: {e.detail}")
        else:
            ET.SubElement(case, "system-out").text = clean(e.detail)
        cases.append(case)
    return _suite(name, cases)


def write(path: Path, name: str, cells: Cells, evaluations: list[Evaluation]) -> None:
    """Written whole or not at all, and only as a regular file (record.outfile); a folder, a
    device or a FIFO given for the file is an error."""
    if path.is_dir():
        raise ToolbenchError(f"{path}: is a folder; --junit takes the XML file to write")
    tree = ET.ElementTree(document(name, cells, evaluations))
    ET.indent(tree)
    with outfile.written(path) as tmp:
        tree.write(tmp, encoding="utf-8", xml_declaration=True)
