"""Renders reports from run directories on disk, never from live state."""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import jinja2

from toolbench import store
from toolbench.errors import ToolbenchError
from toolbench.report import model


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("toolbench.report", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env


def render_run(run_dir: Path, output: Path | None = None) -> Path:
    return render_runs([run_dir], output)


def render_runs(run_dirs: list[Path], output: Path | None = None) -> Path:
    if not run_dirs:
        raise ToolbenchError("no run to render")
    runs = [store.RunDir.open(Path(p)) for p in run_dirs]
    output = output or runs[0].path / "report.html"
    base = output.parent
    data = model.build([model.RunView.load(run, os.path.relpath(run.path, base)) for run in runs])
    html = _environment().get_template("report.html.j2").render(
        report=data, generated_at=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_suffix(".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(output)
    return output.resolve()
