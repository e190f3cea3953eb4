"""`request.secret_headers`: header names a scenario marks secret, checked at the boundary with
file:line like every other key."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers.scenarios import write
from toolbench.errors import ScenarioError
from toolbench.scenario import read as scenario

TEXT = """\
name: demo
target: {{server: nginx-static}}
request:
  headers: {{X-Token: abc}}
  secret_headers: {names}
matrix: {{tool: [engine]}}
"""


def test_secret_header_names_are_read(tmp_path: Path) -> None:
    loaded = scenario.load(write(tmp_path, TEXT.format(names="[X-Token, X-Other]")))
    assert loaded.request.secret_headers == ("X-Token", "X-Other")
    without = TEXT.format(names="").replace("  secret_headers: \n", "")
    assert scenario.load(write(tmp_path, without)).request.secret_headers == ()


@pytest.mark.parametrize(("names", "message"), [
    ("X-Token", r"s.yaml:5: request.secret_headers: expected a list of header names"),
    ("[X-Token, 'bad name']", r"s.yaml:5: request.secret_headers\[1\]: not a header name: 'bad name'"),
    ("[\"X:y\"]", r"s.yaml:5: request.secret_headers\[0\]: not a header name"),
])
def test_a_bad_secret_header_name_is_refused_with_its_line(tmp_path: Path, names: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        scenario.load(write(tmp_path, TEXT.format(names=names)))
