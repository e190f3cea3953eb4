"""Pass/fail criteria over a run's figures: parsed (spec, expr), evaluated (evaluate), and
kept in the run folder as criteria.json so that reports and `toolbench check` read them back."""
from __future__ import annotations

import json
from pathlib import Path

from toolbench.errors import StoreError
from toolbench.record import runfiles
from toolbench.scenario.criteria.evaluate import Evaluation, Verdict

FILE = "criteria.json"
VERSION = 1


def save(run_dir: Path, evaluations: list[Evaluation]) -> None:
    runfiles.save_json(run_dir, FILE, {"criteria_version": VERSION, "evaluations": [e.to_dict() for e in evaluations]})


def forget(run_dir: Path) -> None:
    """No criteria now: an earlier part of a resumed run may have left verdicts that no longer hold."""
    runfiles.forget(run_dir, FILE)


def load(run_dir: Path) -> list[Evaluation] | None:
    """The evaluations stored with the run; None when it has none (no criteria, or an older run)."""
    path = run_dir / FILE
    if not path.is_file() and not path.is_symlink():  # a link is read by runfiles, which refuses it
        return None
    try:
        data = json.loads(runfiles.read_text(run_dir, FILE))
        return [Evaluation.from_dict(e) for e in data["evaluations"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StoreError(f"{path}: unreadable: {exc}") from None


__all__ = ["FILE", "Evaluation", "Verdict", "forget", "load", "save"]
