"""The forms of existing output that issue 14 found `toolbench parse` refusing or
miscounting, each over a recorded real file (tests/fixtures/<tool>/README.md names how)."""
import warnings

import pytest

from conftest import FIXTURES
from toolbench import registry
from toolbench.cli.commands import _parse_group
from toolbench.errors import Notice, ToolbenchError
from toolbench.runs_found import runs

JM = FIXTURES / "jmeter"


def parsed(*paths, tool=None):
    """(results, notes) of `toolbench parse` over the files."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", Notice)
        found = runs(list(paths), registry.adapters(), registry.get(tool) if tool else None)
        results = [_parse_group(run.adapter, run.name, run.paths) for run in found]
    return results, [str(w.message) for w in seen]


@pytest.mark.parametrize("tool", [None, "jmeter"])
def test_an_empty_companion_file_is_noted_and_skipped(tool):
    results, notes = parsed(JM / "5.6.3-kpi-errors-kpi.jtl", JM / "5.6.3-kpi-errors-error.jtl", tool=tool)
    assert [r.identity.cell_id for r in results] == ["5.6.3-kpi-errors-kpi"]
    assert results[0].measurement.counts.requests_total == 200
    assert f"{JM / '5.6.3-kpi-errors-error.jtl'}: empty, skipped" in notes


def test_only_empty_files_is_an_error():
    with pytest.raises(ToolbenchError, match="every file given is empty"):
        parsed(JM / "5.6.3-kpi-errors-error.jtl")


def test_a_whole_last_row_without_a_line_break_is_read_and_a_cut_one_left_out():
    whole = parsed(JM / "5.6.3-kpi-errors-kpi.jtl")[0][0].measurement
    unended = parsed(JM / "5.6.3-no-final-newline.jtl")[0][0].measurement
    assert unended.counts.requests_total == whole.counts.requests_total == 200
    assert unended.latency == whole.latency
    assert "the last line (201) has no line break but is a whole record: it was read" in unended.notes
    cut = parsed(JM / "5.6.3-csv-truncated.jtl")[0][0].measurement
    assert cut.counts.requests_total == 1121 and any("(1123) is cut off" in note for note in cut.notes)
