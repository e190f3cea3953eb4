"""Every registered adapter, fed mutated and garbage versions of its recorded output,
gives a Measurement that holds the schema's invariants, or a ParseError: nothing else,
no crash of the parser (a ParserCrash fails this test), no crash of the process.

Inputs go the way `toolbench parse` takes them (files on disk, grouped and classified
by the adapter), so that a crash found here is one a user can meet. The budget is fixed
and the examples derandomized, so a CI run tries the same inputs every time; the count
is printed at the end of the session's output."""
from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.recordings import recorded_runs
from toolbench.contract import registry
from toolbench.contract.adapter import Adapter, raw_from_files
from toolbench.contract.checked import parse_checked
from toolbench.errors import ParseError, ParserCrash
from toolbench.record import invariants
from toolbench.record.schema import Identity, Measurement, Outcome, RunResult, Status

# The CI budget, the same inputs every run; TOOLBENCH_PROPERTY_EXAMPLES=N tries N random
# ones per adapter instead, new ones each time, when hunting for defects.
HUNTING = "TOOLBENCH_PROPERTY_EXAMPLES" in os.environ
EXAMPLES_PER_ADAPTER = int(os.environ.get("TOOLBENCH_PROPERTY_EXAMPLES", "300"))
NUMBER = re.compile(rb"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
SUBSTITUTES = (b"-1", b"1e400", b"nan", b"1e5", b"-", b"inf", b"Infinity", b"NaN", b"-0", b"1.5", b"0",
               b"99999999999999999999999999", b"1" * 5000, b"4294967296", b"9223372036854775808",
               b"1e-400", b"0x10", b"\xff", b"", b"-9999999999")
TOKENS = (b"UTF-8", b"utf-8", b"true", b"false", b"Aggregated", b'"', b"{", b"[", b"}", b",", b"\t", b"%",
          b"ms", b"requests", b"Transactions")
REPLACEMENTS = (b"x-no-such-encoding", b"", b"true", b"false", b"null", b'"x"', b"[]", b"{}", b"-1",
                b"\xff\xfe", b"\n", b"\r\n")
JSON_VALUE = re.compile(rb'(?<=:)\s*("[^"\n]*"|[^,}\]\n]+)')
JSON_VALUES = (b"null", b'"x"', b"[]", b"{}", b"true", b"-1", b"1e400", b'{"a": 1}', b"[1, -2]", b'"1e5"')
INSERTS = (b"x" * 200_000, b'"', b"\n", b",", b"\x00", b"\r", b"\xff", b"-", b"\n\n\n", b"[", b"{")

TRIED: Counter[str] = Counter()


positions = st.integers(0, 1 << 20)
substitute = st.sampled_from(SUBSTITUTES)
mutation = st.one_of(
    # The numbers are what parsers get wrong most: one, every one on a line, every one in the file.
    st.tuples(st.just("number"), positions, substitute),
    st.tuples(st.just("number"), positions, substitute),
    st.tuples(st.just("line_numbers"), positions, substitute),
    st.tuples(st.just("line_numbers"), positions, substitute),
    st.tuples(st.just("all_numbers"), substitute),
    st.tuples(st.just("flip"), positions, st.integers(0, 255)),
    st.tuples(st.just("truncate"), positions),
    st.tuples(st.just("delete_line"), positions),
    st.tuples(st.just("duplicate_line"), positions, st.integers(1, 3)),
    st.tuples(st.just("swap_lines"), positions, positions),
    st.tuples(st.just("insert"), positions, st.one_of(st.sampled_from(INSERTS), st.binary(max_size=64))),
    st.tuples(st.just("token"), st.sampled_from(TOKENS), st.sampled_from(REPLACEMENTS), positions),
    st.tuples(st.just("json_value"), positions, st.sampled_from(JSON_VALUES)),
    st.tuples(st.just("random"), st.binary(max_size=512)),
    st.tuples(st.just("empty"),),
)


def mutate(data: bytes, change: tuple) -> bytes:
    kind, *args = change
    if kind == "flip":
        if not data:
            return bytes([args[1]])
        at = args[0] % len(data)
        return data[:at] + bytes([args[1]]) + data[at + 1:]
    if kind == "truncate":
        return data[: args[0] % (len(data) + 1)]
    if kind in ("number", "json_value"):
        found = list((NUMBER if kind == "number" else JSON_VALUE).finditer(data))
        if not found:
            return data
        m = found[args[0] % len(found)]
        return data[: m.start()] + args[1] + data[m.end():]
    if kind == "all_numbers":
        return NUMBER.sub(lambda _: args[0], data)
    if kind == "line_numbers":
        lines = data.splitlines(keepends=True)
        numbered = [i for i, line in enumerate(lines) if NUMBER.search(line)]
        if not numbered:
            return data
        i = numbered[args[0] % len(numbered)]
        lines[i] = NUMBER.sub(lambda _: args[1], lines[i])
        return b"".join(lines)
    if kind in ("delete_line", "duplicate_line", "swap_lines"):
        lines = data.splitlines(keepends=True)
        if not lines:
            return data
        i = args[0] % len(lines)
        if kind == "delete_line":
            del lines[i]
        elif kind == "duplicate_line":
            lines[i:i + 1] = [lines[i]] * (args[1] + 1)
        else:
            j = args[1] % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
        return b"".join(lines)
    if kind == "insert":
        at = args[0] % (len(data) + 1)
        return data[:at] + args[1] + data[at:]
    if kind == "token":
        token, replacement, which = args
        starts = [m.start() for m in re.finditer(re.escape(token), data)]
        if not starts:
            return data
        at = starts[which % len(starts)]
        return data[:at] + replacement + data[at + len(token):]
    if kind == "random":
        return args[0]
    return b""  # empty


def case(adapter: Adapter) -> st.SearchStrategy:
    groups = recorded_runs(adapter)
    garbage = st.tuples(st.just(None), st.just(0), st.lists(mutation, min_size=1, max_size=2))
    if not groups:
        return garbage
    recorded = st.tuples(st.sampled_from(range(len(groups))), positions, st.lists(mutation, min_size=1, max_size=4))
    return st.one_of(recorded, recorded, recorded, garbage)


def run_case(adapter: Adapter, groups: list[list[Path]], group_index: int | None, file_pick: int,
             changes: list[tuple]) -> str:
    """Writes the (mutated) group to a fresh folder and parses it as `toolbench parse` does."""
    with tempfile.TemporaryDirectory(prefix="tb-prop-") as tmp:
        folder = Path(tmp)
        if group_index is None:
            originals = [(folder / "garbage.txt", b"")]
        else:
            originals = [(folder / p.name, p.read_bytes()) for p in groups[group_index]]
        target = file_pick % len(originals)
        paths = []
        for i, (path, data) in enumerate(originals):
            if i == target:
                for change in changes:
                    data = mutate(data, change)
            path.write_bytes(data)
            paths.append(path)
        name = adapter.group_name(paths[0])
        raw = raw_from_files(adapter, name, paths)
        try:
            m = parse_checked(adapter, raw)
        except ParserCrash:
            raise
        except ParseError:
            return "parse error"
    assert isinstance(m, Measurement)
    invariants.check(m)
    result = RunResult(Identity(scenario="p", cell_id="c", tool=m.tool), Outcome(Status.OK), m)
    json.dumps(result.to_dict(), allow_nan=False)  # what `toolbench parse` prints must be JSON
    return "measurement"


@pytest.mark.parametrize("name", sorted(registry.adapters()))
def test_mutated_output_gives_a_valid_measurement_or_a_parse_error(name: str) -> None:
    adapter = registry.adapters()[name]
    groups = recorded_runs(adapter)

    @settings(max_examples=EXAMPLES_PER_ADAPTER, deadline=None, derandomize=not HUNTING, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case(adapter))
    def one(drawn: tuple) -> None:
        group_index, file_pick, changes = drawn
        TRIED[name] += 1
        TRIED[f"{name}: {run_case(adapter, groups, group_index, file_pick, changes)}"] += 1

    one()


@pytest.fixture(scope="module", autouse=True)
def _report(request: pytest.FixtureRequest):
    """Prints how many inputs were tried, past pytest's capture, at the end of the module."""
    yield
    total = sum(n for key, n in TRIED.items() if ":" not in key)
    detail = ", ".join(f"{key} {n}" for key, n in sorted(TRIED.items()) if ":" in key)
    line = f"property test: {total} inputs tried ({detail})"
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        print(line)
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        reporter.write_line(line)
