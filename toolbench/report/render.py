"""Renders reports from run directories on disk, never from live state."""
from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path
from typing import Any

import jinja2

from toolbench.errors import ToolbenchError
from toolbench.record import outfile, runfiles, store
from toolbench.report import compare, model
from toolbench.report.context import RunView
from toolbench.report.fmt import DISTURBED, DISTURBED_LEFT_OUT, SHORT_OF_RAMP
from toolbench.scenario.claims import ClaimSet

# Marks shown beside a flagged value, so that no flag is told by colour alone.
FLAG_MARKS = {"differs": "≠", "disagrees": "✗", "not met": "✗", "large change": "!", "outlier": "!", "unknown": "?",
              SHORT_OF_RAMP: "⏱", DISTURBED: "↯", DISTURBED_LEFT_OUT: "↯"}


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("toolbench.report", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals["flag_marks"] = FLAG_MARKS
    env.filters["local"] = local_href
    return env


_LOCAL_HREF = re.compile(r"[A-Za-z0-9_.~%/-]+")
_FRAGMENT = re.compile(r"#[A-Za-z0-9_-]+")  # an element of the page itself (toolbench.report.anchors)


def local_href(href: str) -> str:
    """Every link of a page goes through this: a path relative to the page, quoted (no scheme,
    no host, no leading slash, nothing a browser strips or reads as one), an id on the page, or
    "#" (nowhere)."""
    ok = (_LOCAL_HREF.fullmatch(href) is not None and not href.startswith("/")) or _FRAGMENT.fullmatch(href)
    return href if ok else "#"


def render_run(run_dir: Path, output: Path | None = None) -> Path:
    return render_runs([run_dir], output)


def render_runs(run_dirs: list[Path], output: Path | None = None, claims: ClaimSet | None = None) -> Path:
    output, _ = render_with_data(run_dirs, output, claims)
    return output


def render_with_data(run_dirs: list[Path], output: Path | None = None,
                     claims: ClaimSet | None = None) -> tuple[Path, model.ReportData]:
    """`claims`: a scenario's, shown instead of those stored with the runs (`report --claims-from`)."""
    if not run_dirs:
        raise ToolbenchError("no run to render")
    runs = [store.RunDir.open(Path(p)) for p in run_dirs]
    in_run = not output
    output = Path(output) if output else runs[0].path / "report.html"
    data = model.build(load_views(runs, output.parent), claims)
    write(output, page("report.html.j2", report=data), in_run=in_run)
    return output.resolve(), data


def load_views(runs: list[store.RunDir], base: Path) -> list[RunView]:
    """Each run with its link relative to the report's folder, and a short label when there are several."""
    manifests = [run.manifest() for run in runs]
    labels = compare.labels([(run.path.name, m) for run, m in zip(runs, manifests)]) if len(runs) > 1 else [""]
    return [RunView(name=run.path.name, label=label, href=_relative(run.path, base), manifest=manifest,
                    results=run.results(), raw_kept=(run.path / store.RAW).is_dir(), path=run.path)
            for run, manifest, label in zip(runs, manifests, labels)]


def _relative(path: Path, base: Path) -> str:
    return Path(os.path.relpath(path.resolve(), base.resolve())).as_posix()


def page(template: str, **values: Any) -> str:
    generated = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return environment().get_template(template).render(generated_at=generated, **values)


def write(output: Path, html: str, *, in_run: bool = False) -> None:
    """Written whole or not at all: a reader never sees half a report. Its temporary file is made
    fresh, so a link planted under its name is never written through; `in_run`: the folder is a
    run's (or a site's run), which must not be a link either. Elsewhere (`-o`) it is a file the
    user named: only ever a regular file, never a device or FIFO replaced (record.outfile)."""
    if not in_run:
        outfile.write_bytes(output, html.encode("utf-8"))
        return
    try:
        runfiles.replace(output.parent, output.name, html.encode("utf-8"))
    except OSError as exc:
        raise ToolbenchError(f"{output}: cannot write the report: {exc.strerror}") from None
