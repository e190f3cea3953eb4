"""Gatling's simulation.log of every version, each in its own layout: real runs of Gatling 2.0.3,
2.1.7, 2.3.1, 3.3.1, 3.12.0 (text) and 3.13.5 (binary), recorded by
tests/fixtures/gatling/record_layouts.py. Each reads to what a person reading the log writes down,
checked here apart from the parser and against Gatling's own console summary of the run."""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from conftest import FIXTURES
from toolbench.cli.commands import results_of
from toolbench.contract import registry
from toolbench.contract.adapter import RawOutput, raw_from_files
from toolbench.contract.checked import parse_checked
from toolbench.contract.runs_found import runs
from toolbench.errors import Notice, ParseError, ParserCrash, ToolbenchError
from toolbench.record.schema import Measurement

FOLDER = FIXTURES / "gatling"
ADAPTER = registry.get("gatling")
# Where each version writes a REQUEST record's kind, start, end (of its response) and status,
# read from its writer's source (adapters/gatling/layouts.py says the same, for the parser).
COLUMNS = {"2.0.3": (2, 5, 8, 9), "2.1.7": (2, 5, 8, 9), "2.3.1": (0, 5, 6, 7), "3.3.1": (0, 4, 5, 6),
           "3.12.0": (0, 3, 4, 5)}
TEXT = sorted(COLUMNS)
# Gatling's console summary: "> Global  (OK=100    KO=100   )" up to 3.12, a table since 3.13.
GLOBAL = re.compile(r"^> Global\s+\(OK=(\d+)\s+KO=(\d+)\s*\)|^> Global\s+\|\s+\d+ \|\s+(\d+) \|\s+(\d+)$", re.MULTILINE)


def files(version: str) -> list[Path]:
    return sorted(FOLDER.glob(f"{version}-mixed.*"))


def parsed(version: str) -> Measurement:
    return parse_checked(ADAPTER, raw_from_files(ADAPTER, f"{version}-mixed", files(version)))


def by_hand(version: str, text: str | None = None) -> dict:
    """The log's figures, read apart from the parser: its REQUEST records' counts and times."""
    kind, start, end, status = COLUMNS[version]
    rows = [line.split("\t") for line in (text or (FOLDER / f"{version}-mixed.log").read_text()).splitlines()]
    rows = [r for r in rows if len(r) > kind and r[kind] == "REQUEST"]
    took = [int(r[end]) - int(r[start]) for r in rows]
    return {"total": len(rows), "ok": sum(r[status] == "OK" for r in rows), "ko": sum(r[status] == "KO" for r in rows),
            "min": min(took), "max": max(took),
            "duration": (max(int(r[end]) for r in rows) - min(int(r[start]) for r in rows)) / 1000.0}


def console(version: str) -> tuple[int, int]:
    """Gatling's own count of the run's OK and KO requests, from its console output."""
    found = GLOBAL.findall((FOLDER / f"{version}-mixed.txt").read_text())[-1]  # the end-of-run summary
    ok, ko = (found[0], found[1]) if found[0] else (found[2], found[3])
    return int(ok), int(ko)


@pytest.mark.parametrize("version", TEXT)
def test_each_layout_reads_to_what_the_log_and_gatling_say(version):
    m, hand = parsed(version), by_hand(version)
    assert (m.counts.requests_total, m.counts.requests_ok, m.counts.requests_failed) == \
        (hand["total"], hand["ok"], hand["ko"]) == (200, 100, 100)
    assert (m.counts.requests_ok, m.counts.requests_failed) == console(version)
    assert m.counts.failures.http_4xx == 100  # GET /nope: Gatling's status check failed with the 404 in its message
    assert (m.latency.min_ms, m.latency.max_ms) == (hand["min"], hand["max"])
    assert m.timing.duration_s == hand["duration"]
    assert sum(s.requests for s in m.series) == 200


@pytest.mark.parametrize("version, named", [("2.0.3", None), ("2.1.7", None), ("2.3.1", None), ("3.3.1", "3.3.1"),
                                            ("3.12.0", "3.12.0")])
def test_the_version_is_the_one_the_log_names(version, named):
    m = parsed(version)
    assert m.tool_version == named
    said = any("names its format (2.0), not the Gatling version" in n for n in m.notes)
    assert said == (named is None)


@pytest.mark.parametrize("version, layout", [("2.0.3", "Gatling 2.0 or 2.1"), ("2.1.7", "Gatling 2.0 or 2.1"),
                                             ("2.3.1", "Gatling 2.2 or 2.3"), ("3.3.1", "Gatling 3.0 to 3.3"),
                                             ("3.12.0", "Gatling 3.4 to 3.12")])
def test_what_is_not_read_is_said(version, layout):
    notes = parsed(version).notes
    assert f"the layout of {layout})" in notes[0]
    four_times = any("its other two, when the request was sent whole and when the response began" in n for n in notes)
    assert four_times == version.startswith(("2.0", "2.1"))
    unread = next((n for n in notes if n.startswith("not read: ")), "")
    assert ("200 REQUEST records' extra columns" in unread) == version.startswith("2.")  # the status, as extra info
    assert ("1 ASSERTION records" in unread) == (version != "2.0.3")  # 2.0 keeps no assertion in its log


@pytest.mark.parametrize("version", TEXT)
def test_each_layout_is_told_from_its_files(version):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Notice)
        found = runs(files(version), registry.adapters())
    assert [(run.adapter.name, sorted(run.paths)) for run in found] == [("gatling", files(version))]


def test_a_binary_log_of_gatling_3_13_is_named_in_one_line():
    log = FOLDER / "3.13.5-mixed.log"
    head = log.read_text(errors="replace")[:65536]
    assert ADAPTER.classify(log, head) == "log" and not ADAPTER.recognizes(log, head)
    with pytest.raises(ParseError) as caught:
        parsed("3.13.5")
    message = str(caught.value)
    assert not isinstance(caught.value, ParserCrash) and "\n" not in message and "\x00" not in message
    assert "Gatling 3.13.5's binary simulation.log (Gatling 3.13 and later write one), which toolbench cannot read" \
        in message and "text simulation.log of Gatling 2.0 to 3.12" in message
    with pytest.raises(ToolbenchError, match=r"^[^\n]*3.13.5-mixed.log: Gatling 3.13.5's binary simulation.log"):
        runs(files("3.13.5"), registry.adapters())  # without --tool: named, not "a binary file"


def test_the_console_output_alone_is_named_not_quoted():
    txt = FOLDER / "3.12.0-mixed.txt"
    last = txt.read_text().strip().splitlines()[-1]
    with pytest.raises(ParseError) as caught:
        ADAPTER.parse(raw_from_files(ADAPTER, "console", [txt]))
    assert "Gatling's console output, which toolbench does not read" in str(caught.value)
    assert "said" not in str(caught.value) and last not in str(caught.value)
    with pytest.raises(ToolbenchError, match=r"3.12.0-mixed.txt: Gatling's console output, which toolbench does not"):
        runs([txt], registry.adapters())


def test_gatling_said_quotes_only_its_stderr():
    stdout = (FOLDER / "3.10.5-ok.txt").read_text()
    with pytest.raises(ParseError) as caught:
        ADAPTER.parse(RawOutput(stdout=stdout, stderr="", source="run"))
    assert stdout.strip().splitlines()[-1] not in str(caught.value)
    with pytest.raises(ParseError, match="Gatling said: Exception in thread"):
        ADAPTER.parse(RawOutput(stdout=stdout, stderr="x\nException in thread \"main\"\n", source="run"))


def test_logs_put_together_are_one_result_per_run_or_merged(tmp_path):
    versions = ["2.1.7", "3.3.1", "3.12.0"]
    together = tmp_path / "simulation.log"
    together.write_bytes(b"".join((FOLDER / f"{v}-mixed.log").read_bytes() for v in versions))
    with pytest.raises(ParseError, match="line .*: a second RUN record: the log holds several runs"):
        ADAPTER.parse(RawOutput(files={"log": together}, source="together"))
    each = results_of(ADAPTER, "together", [together])
    assert [r.identity.cell_id for r in each] == ["together-run1", "together-run2", "together-run3"]
    for result, version in zip(each, versions):
        alone = parsed(version)
        assert result.measurement.counts == alone.counts and result.measurement.histogram == alone.histogram
        assert result.measurement.timing.duration_s == alone.timing.duration_s
        assert result.measurement.tool_version == alone.tool_version
        said = f"run {versions.index(version) + 1} of the 3 in the log"
        assert any(n.startswith(said) for n in result.measurement.notes)
    merged = results_of(ADAPTER, "together", [together], merge_runs=True)[0].measurement
    assert merged.counts.requests_total == 600 and merged.counts.requests_failed == 300
    assert merged.timing.duration_s == pytest.approx(sum(parsed(v).timing.duration_s for v in versions))
    assert merged.series == [] and merged.tool_version is None
    assert any(n.startswith("the 3 runs of the log merged") for n in merged.notes)
    tally = ADAPTER.timings(RawOutput(files={"log": together}, part="run2"))
    assert tally is not None and tally.requests == 200


def test_a_log_whose_trailing_blanks_an_editor_trimmed_reads_the_same(tmp_path):
    text = (FOLDER / "3.3.1-mixed.log").read_text()
    trimmed = "".join(line.rstrip() + "\n" for line in text.splitlines())
    assert trimmed != text  # an OK record ends in "OK\t ": the tab and blank go
    path = tmp_path / "simulation.log"
    path.write_text(trimmed)
    m = parse_checked(ADAPTER, RawOutput(files={"log": path}, source="trimmed"))
    assert m.counts == parsed("3.3.1").counts and by_hand("3.3.1", trimmed)["ok"] == 100
