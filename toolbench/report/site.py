"""A folder of runs as a static site: every run's folder with its report, and an
index page. Any static web host serves the result as it is: every link is relative."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from toolbench import store
from toolbench.errors import ToolbenchError
from toolbench.report import fmt, render
from toolbench.report.model import ReportData
from toolbench.report.view import IndexEntry

SKIPPED_FILES = ("report.html",)


@dataclass(frozen=True)
class Published:
    index: Path
    reports: tuple[Path, ...]
    problems: tuple[str, ...]  # runs that could not be rendered, each with its reason


def find_runs(runs_dir: Path) -> list[Path]:
    if not runs_dir.is_dir():
        raise ToolbenchError(f"{runs_dir}: no such folder")
    return sorted(p for p in runs_dir.iterdir() if p.is_dir() and (p / store.MANIFEST).is_file())


def publish(runs_dir: Path, site: Path | None = None) -> Published:
    """Renders every run below runs_dir into site (default: in place) and writes site/index.html."""
    runs = find_runs(runs_dir)
    if not runs:
        raise ToolbenchError(f"{runs_dir}: no run folders (folders with a {store.MANIFEST})")
    site = (site or runs_dir).resolve()
    in_place = site == runs_dir.resolve()
    for run in runs:
        if site.is_relative_to(run.resolve()):
            raise ToolbenchError(f"{site}: the site cannot be inside the run folder {run}")
    entries, reports, problems = [], [], []
    for run in runs:
        target = run if in_place else site / run.name
        try:
            if not in_place:
                sync_tree(run, target)
            output, data = render.render_with_data([target])
        except (ToolbenchError, OSError) as exc:
            problems.append(f"{run.name}: {exc}")
            entries.append(_entry_broken(run, str(exc)))
            continue
        reports.append(output)
        entries.append(_entry(target, output, site, data))
    entries.sort(key=lambda e: e.sort_date, reverse=True)
    index = site / "index.html"
    render.write(index, render.page("index.html.j2", entries=entries, title=f"toolbench runs: {runs_dir.name}"))
    return Published(index, tuple(reports), tuple(problems))


def _entry(run: Path, output: Path, site: Path, data: ReportData) -> IndexEntry:
    manifest = store.RunDir.open(run).manifest()
    started = manifest.started_at or ""
    cells = sum(s.cells for s in data.statuses)
    ok = sum(s.cells for s in data.statuses if s.status == "ok")
    headline = data.verdicts[0].headline if data.verdicts else ""
    return IndexEntry(title=data.title, href=Path(os.path.relpath(output, site)).as_posix(), date=fmt.when(started),
                      scenario=data.subtitle or data.title, status=manifest.status.value,
                      cells=f"{ok} of {cells} ok", headline=headline, sort_date=started)


def _entry_broken(run: Path, reason: str) -> IndexEntry:
    return IndexEntry(title=run.name, href="", date=fmt.ABSENT, scenario=fmt.ABSENT, status="not rendered",
                      cells=fmt.ABSENT, headline=reason, sort_date="")


def sync_tree(source: Path, target: Path) -> None:
    """Copies a run folder, skipping files already copied unchanged, the old report, and
    anything that is not a plain file (sockets or pipes a target server may have left)."""
    for folder, dirs, files in os.walk(source):
        rel = Path(folder).relative_to(source)
        (target / rel).mkdir(parents=True, exist_ok=True)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        for name in files:
            src = Path(folder) / name
            if (rel == Path(".") and name in SKIPPED_FILES) or not src.is_file() or name.endswith(".tmp"):
                continue
            dst = target / rel / name
            st = src.stat()
            if dst.exists() and dst.stat().st_size == st.st_size and dst.stat().st_mtime == st.st_mtime:
                continue
            shutil.copy2(src, dst)
