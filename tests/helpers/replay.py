"""A host that replays recorded tool runs (tests/fixtures/<tool>/...) to the runner, and a
target starter that starts nothing: the runner's logic (retries, resume, interrupts, status,
targets that fail) runs in milliseconds without a single process.

Each `start` takes the next Replay: its recorded stdout, stderr and output files are copied
where the tool would have written them, and `wait` ends as the recorded run did (its exit
code, a hang killed at the hard limit, or Ctrl-C)."""
from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from toolbench.contract.host import Captured, Completed, Facts, Limit
from toolbench.errors import TargetError
from toolbench.scenario.targets import TargetSpec
from toolbench.servers.process import RunningTarget

FIXTURES = Path(__file__).parents[1] / "fixtures"


@dataclass(frozen=True)
class Replay:
    """One recorded run of a tool: `case` names its files, e.g. ab/2.3-keepalive ->
    2.3-keepalive.txt (stdout) and 2.3-keepalive.stderr.txt; `outputs` maps the file name the
    tool writes to the suffix of its recording (`{"percentiles.csv": ".csv"}`)."""

    case: str
    exit_code: int | None = 0
    outputs: Mapping[str, str] = field(default_factory=dict)
    hang: bool = False  # still running at the hard limit: killed
    interrupt: bool = False  # Ctrl-C while it ran
    wall_s: float = 1.0

    def files(self) -> tuple[Path, Path]:
        base = FIXTURES / self.case
        return base.with_name(base.name + ".txt"), base.with_name(base.name + ".stderr.txt")


@dataclass
class _Replayed:
    replay: Replay
    pid: int = 0
    started: float = 0.0

    def wait(self, timeout_s: float) -> Completed:
        if self.replay.hang:
            return Completed(None, True, timeout_s)
        if self.replay.interrupt:
            return Completed(None, False, self.replay.wall_s, interrupted=True)
        return Completed(self.replay.exit_code, False, self.replay.wall_s, cpu_user_s=0.1, cpu_system_s=0.1)


class ReplayHost:
    """`versions` maps a program to the recording of its version output (`{"ab": "ab/2.3-version"}`);
    such a program is found at /replay/<program>, and answers there."""

    label = "replay"
    remote = False

    def __init__(self, replays: Sequence[Replay], versions: Mapping[str, str]) -> None:
        self.replays = list(replays)
        self.versions = dict(versions)
        self.argvs: list[list[str]] = []  # every command started, in order

    def which(self, program: str) -> str | None:
        return f"/replay/{program}" if program in self.versions else None

    def capture(self, argv: list[str], timeout_s: float = 10.0) -> Captured:
        program = argv[0].removeprefix("/replay/")
        if program not in self.versions:
            return Captured(1, "", f"{argv[0]}: not recorded")
        out, err = Replay(self.versions[program]).files()
        return Captured(0, out.read_text(), err.read_text() if err.exists() else "")

    def workspace(self, workdir: Path) -> Path:
        return workdir

    def stage(self, workdir: Path, tool_dir: str | Path, names: Sequence[str]) -> None:
        pass

    def collect(self, tool_dir: str | Path, names: Sequence[str], workdir: Path) -> None:
        pass

    def start(self, argv: list[str], cwd: Path, stdout: Path, stderr: Path,
              env: dict[str, str] | None = None) -> _Replayed:
        if not self.replays:
            raise AssertionError(f"no recorded run left for {argv}")
        replay = self.replays.pop(0)
        self.argvs.append(list(argv))
        out, err = replay.files()
        shutil.copyfile(out, stdout)
        if err.exists():
            shutil.copyfile(err, stderr)
        else:
            stderr.write_bytes(b"")
        for name, suffix in replay.outputs.items():
            base = FIXTURES / replay.case
            shutil.copyfile(base.with_name(base.name + suffix), Path(cwd) / name)
        return _Replayed(replay)

    def run(self, argv: list[str], cwd: Path, stdout: Path, stderr: Path, timeout_s: float,
            env: dict[str, str] | None = None) -> Completed:
        return self.start(argv, cwd, stdout, stderr, env).wait(timeout_s)

    def with_limits(self, wanted: Mapping[str, int]) -> "ReplayHost":
        return self

    def process_limits(self, raised: bool = True) -> dict[str, Limit]:
        return {}

    def facts(self) -> Facts:
        return Facts(hostname="replay", cpu_count=2, cpu_model="replay", memory_bytes=1 << 30, kernel="replay",
                     os="replay")

    def close(self) -> None:
        pass


class ReplayTargets:
    """A target starter that starts nothing: each target 'runs' at a closed loopback port
    (no process of its own, so no server monitor); the names in `fail` fail to start with
    their message. `events` records every start and stop, in order."""

    def __init__(self, fail: Mapping[str, str] | None = None) -> None:
        self.fail = dict(fail or {})
        self.events: list[tuple[str, str, int]] = []

    @contextlib.contextmanager
    def __call__(self, spec: TargetSpec, workdir: Path, max_concurrency: int) -> Iterator[RunningTarget]:
        name = spec.name or spec.kind
        self.events.append(("start", name, max_concurrency))
        if name in self.fail:
            raise TargetError(f"{name}: {self.fail[name]}")
        try:
            yield RunningTarget(base_url="http://127.0.0.1:9", label=spec.display, version=f"{name} 1.0")
        finally:
            self.events.append(("stop", name, max_concurrency))
