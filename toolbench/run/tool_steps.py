"""The steps an adapter asks for after its tool (toolbench.contract.adapter.Step): each runs on the
tool's host, in the tool's folder, once the tool has exited, its stdout streamed into the
cell's folder. A step that fails is said in one line, by role; it never hides the tool's run."""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Sequence

from toolbench.contract.adapter import Step
from toolbench.contract.host import Host
from toolbench.errors import HostError
from toolbench.record.derive import error_line
from toolbench.record.exits import exit_words


def command_lines(steps: Sequence[Step]) -> str:
    """The steps as a reader of command.txt reruns them, after the tool's own line."""
    return "".join(f"{shlex.join(step.argv)} > {shlex.quote(step.stdout)}\n" for step in steps)


def run(steps: Sequence[Step], host: Host, tool_dir: Path, workdir: Path) -> tuple[dict[str, Path], dict[str, str]]:
    """Runs the steps in order: what each wrote (role -> path in `workdir`) and why each that
    failed did. Ctrl-C during a step is raised on, as during the tool."""
    files: dict[str, Path] = {}
    errors: dict[str, str] = {}
    for step in steps:
        said = shlex.join(step.argv)
        try:
            done = host.run(step.argv, cwd=tool_dir, stdout=workdir / step.stdout, stderr=workdir / step.stderr,
                            timeout_s=step.timeout_s)
        except HostError as exc:
            errors[step.role] = f"{said}: {exc}"
            continue
        if done.interrupted:
            raise KeyboardInterrupt
        files[step.role] = workdir / step.stdout
        if done.timed_out:
            errors[step.role] = f"{said}: still running after {step.timeout_s:g}s, killed"
        elif done.exit_code != 0:
            why = error_line((workdir / step.stderr).read_text(errors="replace"))
            errors[step.role] = f"{said}: {exit_words(done.exit_code)}" + (f": {why}" if why else "")
    return files, errors
