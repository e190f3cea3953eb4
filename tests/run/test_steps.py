"""The steps an adapter asks for after its tool (Invocation.steps), run by the executor for
real on this machine: their output becomes the parser's input, and one that fails is said."""
from __future__ import annotations

from pathlib import Path

import pytest

from toolbench.contract.adapter import Adapter, Found, Invocation, Step
from toolbench.contract.cell import Cell
from toolbench.contract.checked import parse_checked
from toolbench.errors import AdapterError, ParseError
from toolbench.hosts.local import LocalHost
from toolbench.record.schema import Counts, Measurement
from toolbench.run.execute import staged
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec

CELL = Cell(scenario="s", tool="stepper", concurrency=1, keepalive=True, repetition=1, request=RequestSpec(),
            stop=StopSpec(duration_s=1.0), timeout_s=10, url="http://127.0.0.1:9/")


class Stepper(Adapter):
    """A tool (sh) that writes a binary file, then steps that convert it, as vegeta's do."""

    name = "stepper"

    def __init__(self, script: str, steps: tuple[Step, ...]) -> None:
        self.script, self.steps = script, steps

    def detect(self, host, path=None):
        return Found("sh", "1")

    def build(self, cell, workdir, found):
        return Invocation(argv=["sh", "-c", self.script], outputs={"bin": "out.bin"}, steps=self.steps)

    def parse(self, raw):
        n = len(raw.files["text"].read_text().split())
        return Measurement(tool=self.name, counts=Counts(requests_total=n, requests_ok=n))


def run(adapter: Adapter, workdir: Path, timeout_s: float = 10.0):
    host = LocalHost()

    def start(argv, env, tool_dir):
        return host.run(argv, cwd=tool_dir, stdout=workdir / "stdout.txt", stderr=workdir / "stderr.txt",
                        timeout_s=timeout_s, env=env), None

    completed, raw, _ = staged(adapter, Found("sh", "1"), CELL, workdir, host, start)
    return completed, raw


def test_a_step_reads_what_the_tool_wrote_and_its_stdout_is_parsed(tmp_path):
    adapter = Stepper("printf 'a b c' > out.bin", (Step("text", ["cat", "out.bin"], "out.txt"),))
    completed, raw = run(adapter, tmp_path)
    assert completed.exit_code == 0 and raw.step_errors == {}
    assert raw.files == {"bin": tmp_path / "out.bin", "text": tmp_path / "out.txt"}
    assert parse_checked(adapter, raw).counts.requests_total == 3
    assert (tmp_path / "command.txt").read_text() == "sh -c 'printf '\"'\"'a b c'\"'\"' > out.bin'\ncat out.bin > out.txt\n"


def test_a_failing_step_is_a_parse_error_of_the_cell_naming_it(tmp_path):
    adapter = Stepper("true", (Step("text", ["cat", "out.bin"], "out.txt"),))
    completed, raw = run(adapter, tmp_path)
    assert completed.exit_code == 0
    assert raw.step_errors["text"].startswith("cat out.bin: exit code 1: cat: out.bin: No such file")
    with pytest.raises(ParseError, match=r"stepper: cannot parse output .*cat out.bin: exit code 1"):
        parse_checked(adapter, raw)


def test_after_a_killed_tool_the_steps_run_and_the_adapter_reads_what_there_is(tmp_path):
    adapter = Stepper("printf 'a b' > out.bin; sleep 30", (Step("text", ["cat", "out.bin"], "out.txt"),
                                                          Step("slow", ["sleep", "30"], "slow.txt", timeout_s=0.5)))
    completed, raw = run(adapter, tmp_path, timeout_s=1.0)
    assert completed.timed_out and raw.exit_code is None
    assert raw.step_errors == {"slow": "sleep 30: still running after 0.5s, killed"}
    assert parse_checked(adapter, raw).counts.requests_total == 2


def test_a_step_file_is_a_plain_name_in_the_cell_folder():
    for bad in ("../out.txt", "sub/out.txt", ""):
        with pytest.raises(AdapterError, match="not a valid name"):
            Invocation(argv=["x"], steps=(Step("text", ["cat"], bad),))
    with pytest.raises(AdapterError, match="not a valid name"):
        Invocation(argv=["x"], steps=(Step("../role", ["cat"], "out.txt"),))
    with pytest.raises(AdapterError, match="may not write stdout.txt"):
        Invocation(argv=["x"], steps=(Step("text", ["cat"], "stdout.txt"),))
