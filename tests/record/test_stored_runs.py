"""Runs stored by earlier versions still load, migrated, and re-render (toolbench.record.migrate)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import toolbench
from toolbench.errors import SchemaError
from toolbench.record import migrate, store
from toolbench.record.manifest import MANIFEST_VERSION, RunStatus
from toolbench.record.schema import SCHEMA_VERSION, Status
from toolbench.report import render

STORED = Path(__file__).parents[1] / "fixtures" / "stored"
V1 = STORED / "v1-0.1.0"


def test_a_version_1_run_loads_through_the_migrations() -> None:
    run = store.RunDir.open(V1)
    manifest = run.manifest()
    assert manifest.manifest_version == MANIFEST_VERSION and manifest.status is RunStatus.COMPLETE
    assert manifest.scenario.description.startswith("a run stored by toolbench 0.1.0")
    assert [(t.label, t.version, t.kind) for t in manifest.targets] == [("nginx-static", "1.22.1", None)]
    assert manifest.tool_version("ab") == "2.3" and manifest.environment.cpu_count == 2
    assert [f.key for f in manifest.prerequisites.findings][0] == "ulimit nofile (soft)"
    results = run.results()
    assert len(results) == 8 and all(r.schema_version == SCHEMA_VERSION for r in results)
    ab = next(r for r in results if r.identity.cell_id == "ab-c4-ka-rep1")
    assert ab.outcome.status is Status.OK and ab.measurement.tool == "ab"
    assert ab.measurement.counts.requests_total == 9424 and ab.measurement.histogram_resolution_ms == 1.0


def test_a_version_1_run_loads_as_a_dataframe_with_the_old_column_names() -> None:
    frame = toolbench.load(V1)
    assert len(frame) == 8
    row = frame.set_index("identity.cell_id").loc["ab-c4-ka-rep1"]
    assert row["counts.requests_total"] == 9424 and row["outcome.status"] == "ok"
    assert "histogram" not in frame.columns and "measurement.tool" not in frame.columns


def test_a_version_1_run_re_renders(tmp_path: Path) -> None:
    out, data = render.render_with_data([V1], tmp_path / "report.html")
    html = out.read_text()
    assert "stored-v1" in html and "a run stored by toolbench 0.1.0" in html
    assert sum(s.cells for s in data.statuses) == 8
    assert sum(s.cells for s in data.statuses if s.status == "ok") == 8
    assert "9,424" in html or "9424" in html  # ab-c4-ka-rep1's request count, in the results table


def test_toolbench_report_works_on_a_copy(tmp_path: Path) -> None:
    copy = tmp_path / "v1"
    shutil.copytree(V1, copy)
    done = subprocess.run([sys.executable, "-m", "toolbench.cli.main", "report", str(copy)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (copy / "report.html").is_file()


@pytest.mark.parametrize("folder", sorted(p for p in STORED.iterdir() if p.is_dir()), ids=lambda p: p.name)
def test_every_stored_run_loads(folder: Path) -> None:
    run = store.RunDir.open(folder)
    assert run.manifest().scenario.name and run.results()


def test_versions_beyond_this_toolbench_are_refused() -> None:
    with pytest.raises(SchemaError, match=f"schema_version {SCHEMA_VERSION + 1} is not one this toolbench reads"):
        migrate.result({"schema_version": SCHEMA_VERSION + 1})
    with pytest.raises(SchemaError, match="manifest_version None"):
        migrate.manifest({})


def test_a_version_4_run_loads_without_a_machine_and_re_renders(tmp_path: Path) -> None:
    """Schema 4 and manifest 3 knew nothing of the machine: migrated, it is absent (never a
    quiet machine made up), and no cell is disturbed."""
    folder = STORED / "v4-0.1.0"
    assert '"schema_version": 4' in (folder / "results.jsonl").read_text()
    assert '"manifest_version": 3' in (folder / "manifest.json").read_text()
    run = store.RunDir.open(folder)
    manifest = run.manifest()
    assert manifest.manifest_version == MANIFEST_VERSION and manifest.machine is None
    results = run.results()
    assert [r.identity.cell_id for r in results] == ["engine-c4-ka-rep1", "engine-c4-close-rep1"]
    assert all(r.schema_version == SCHEMA_VERSION and r.machine is None for r in results)
    assert all(r.outcome.status is Status.OK and r.measurement.counts.requests_total for r in results)
    out, data = render.render_with_data([folder], tmp_path / "report.html")
    assert "stored-v4" in out.read_text() and sum(s.cells for s in data.statuses if s.status == "ok") == 2
