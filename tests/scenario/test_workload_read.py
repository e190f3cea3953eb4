"""`workload:` read at the boundary: a full workload into its types, and each refusal as one line
naming the file, the line and the key path."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from toolbench.errors import ScenarioError
from toolbench.scenario import read as scenario
from toolbench.scenario import workload_parts, workload_read
from toolbench.scenario.workload import Checks, Extract, Stage, ThinkTime

GOOD = """\
name: w
target: {server: nginx-static}
matrix: {tool: [ab]}
workload:
  order: sequence
  data: {file: data/users.csv, per: user, at_end: recycle}
  think: {uniform: [20ms, 80ms]}
  stages:
    - {duration: 2s, users: 4}
    - {duration: 1s, users: 0}
  requests:
    - name: login
      method: POST
      path: /login
      headers: {Content-Type: application/json}
      body_file: bodies/login.json
      extract: {token: {json: $.token}}
      checks: {status: [200], contains: token}
    - name: search
      path: /api/search
      query: {q: "${term}"}
      headers: {Authorization: "Bearer ${token}"}
      checks: {status: [200], json: {path: $.count, equals: 3}, max_bytes: 65536}
"""
USERS = "user,password,term\nalice,pw1,apple\nbob,pw2,banana pie\n"
LOGIN = '{"user": "${user}", "password": "${password}"}'


def folder(tmp_path: Path, text: str = GOOD, users: str = USERS) -> Path:
    """The scenario in a folder of its own, with its data file and body beside it; returns its path."""
    here = tmp_path / "sc"
    (here / "data").mkdir(parents=True)
    (here / "bodies").mkdir()
    (here / "data" / "users.csv").write_text(users)
    (here / "bodies" / "login.json").write_text(LOGIN)
    path = here / "s.yaml"
    path.write_text(text)
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        scenario.load(path)
    return getattr(caught.value, "problems", [str(caught.value)])


def test_a_full_workload_reads_into_its_types(tmp_path: Path) -> None:
    s = scenario.load(folder(tmp_path))
    w = s.workload
    assert w is not None and w.order == "sequence"
    login, search = w.requests
    assert (login.name, login.method, login.path, login.body, login.body_file) == \
        ("login", "POST", "/login", LOGIN, "bodies/login.json")
    assert login.extract == (Extract("token", json_path="$.token"),)
    assert login.checks == Checks(status=(200,), contains="token")
    assert search.query == {"q": "${term}"} and search.headers == {"Authorization": "Bearer ${token}"}
    assert search.checks == Checks(status=(200,), json_path="$.count", json_equals=3, max_bytes=65536)
    assert search.variables() == {"term", "token"}
    assert w.data is not None and w.data.columns == ("user", "password", "term") and w.data.rows == 2
    assert Path(w.data.path) == (tmp_path / "sc" / "data" / "users.csv").resolve() and w.data.given == "data/users.csv"
    assert w.think == ThinkTime(0.02, 0.08)
    assert w.stages == (Stage(2.0, users=4), Stage(1.0, users=0))
    assert w.features() == {"sequence", "data", "extract", "think", "checks", "stages", "per_request"}
    # The first request stands for the scenario's one request; the stages set the load and the stop.
    assert (s.request.method, s.request.path, s.request.body) == ("POST", "/login", LOGIN)
    assert s.matrix.concurrency == (4,) and s.matrix.rate == (None,) and s.stop.duration_s == 3.0


def test_a_mix_with_rate_stages_and_a_constant_think_time(tmp_path: Path) -> None:
    text = (GOOD.replace("order: sequence", "order: mix").replace("users: 4", "rate: 50").replace("users: 0", "rate: 0")
            .replace("      extract: {token: {json: $.token}}\n", "").replace("Bearer ${token}", "Bearer ${user}")
            .replace("{uniform: [20ms, 80ms]}", "50ms").replace("matrix: {tool: [ab]}", "matrix: {tool: [ab], "
                                                                "concurrency: [7]}")
            + "      weight: 3\n")
    s = scenario.load(folder(tmp_path, text))
    assert [r.weight for r in s.workload.requests] == [1.0, 3.0] and s.workload.think == ThinkTime(0.05, 0.05)
    assert s.matrix.rate == (50.0,) and s.matrix.concurrency == (7,) and s.stop.duration_s == 3.0
    assert s.request.path == "/login"


def test_the_first_request_carries_its_query_encoded_in_its_path(tmp_path: Path) -> None:
    text = GOOD.replace("    - name: login", "    - name: home\n      path: /p/${user}\n      query: {q: a b}\n"
                        "    - name: login")
    s = scenario.load(folder(tmp_path, text))
    assert s.request.path == "/p/$%7Buser%7D?q=a%20b" and s.workload.requests[0].path == "/p/${user}"


def test_without_stages_the_scenario_keeps_its_matrix_and_stop(tmp_path: Path) -> None:
    text = GOOD.replace("  stages:\n    - {duration: 2s, users: 4}\n    - {duration: 1s, users: 0}\n", "") + \
        "stop: {duration: 4s}\n"
    s = scenario.load(folder(tmp_path, text.replace("[ab]}", "[ab], concurrency: [3]}")))
    assert s.matrix.concurrency == (3,) and s.stop.duration_s == 4.0 and s.workload.stages == ()


REFUSED = [
    ("target: {server: nginx-static}", "target: {server: nginx-static, path: /x}",
     r"2: target: path: a workload gives each request its own path"),
    ("      method: POST", "      methd: POST", r"13: workload\.requests\[0\]\.methd: unknown key"),
    ("      method: POST", "      method: FETCH", r"13: workload\.requests\[0\]\.method: expected one of GET, POST"),
    ("name: search", "name: login", r"19: workload\.requests\[1\]\.name: a second request named 'login'"),
    ("name: login", "name: Login!", r"12: workload\.requests\[0\]\.name: not a request name: 'Login!'"),
    ("status: [200], json", "status: [200, 600], json",
     r"23: workload\.requests\[1\]\.checks\.status\[1\]: expected an HTTP status from 100 to 599, got 600"),
    ("checks: {status: [200], contains: token}", "checks: {}",
     r"18: workload\.requests\[0\]\.checks: expected at least one check"),
    ("checks: {status: [200], contains: token}", "checks: {status: [200], size: 3}",
     r"18: workload\.requests\[0\]\.checks\.size: unknown key"),
    ("      body_file: bodies/login.json\n", "      body_file: bodies/login.json\n      body: x\n",
     r"16: workload\.requests\[0\]\.body_file: give either `body` or `body_file`, not both"),
    ("path: /api/search", "path: /api/search?q=1", r"20: workload\.requests\[1\]\.path: give the query under `query:`"),
    ("path: /api/search", "path: api/search", r"20: workload\.requests\[1\]\.path: expected a path starting with '/'"),
    ("path: /api/search", "path: /api/${Term}", r"20: workload\.requests\[1\]\.path: `\$\{` starts no variable"),
    ("path: /api/search", "path: /api/search#top", r"20: workload\.requests\[1\]\.path: a fragment"),
    ('{Authorization: "Bearer ${token}"}', '{"Bad Header": "Bearer ${token}"}',
     r"22: workload\.requests\[1\]\.headers\.Bad Header: not a header name"),
    ('{Authorization: "Bearer ${token}"}', '{Authorization: "Bearer ${token}\\u00e9"}',
     r"22: workload\.requests\[1\]\.headers\.Authorization: header Authorization: value .* non-ASCII"),
    ('query: {q: "${term}"}', 'query: {q: "${nope}"}',
     r"19: workload\.requests\[1\]: \$\{nope\}: it is neither a column of the data file \(columns: user, password, "
     r"term\) nor extracted by an earlier request"),
    ('query: {q: "${term}"}', 'query: {q: "a\\u0007"}', r"21: workload\.requests\[1\]\.query\.q: query value"),
    ("{Content-Type: application/json}", '{Content-Type: application/json, X-T: "${token}"}',
     r"12: workload\.requests\[0\]: \$\{token\}: it is extracted by 'login', not by a request before this one"),
    ("extract: {token: {json: $.token}}", "extract: {term: {json: $.token}}",
     r"12: workload\.requests\[0\]: extract 'term': already a column of the data file"),
    ("extract: {token: {json: $.token}}", "extract: {token: {regex: '(a)(b)'}}",
     r"17: workload\.requests\[0\]\.extract\.token\.regex: expected exactly one group \(the value taken\), got 2"),
    ("extract: {token: {json: $.token}}", "extract: {token: {regex: '(a'}}",
     r"17: workload\.requests\[0\]\.extract\.token\.regex: not a regex"),
    ("extract: {token: {json: $.token}}", "extract: {token: {json: $.a, regex: '(a)'}}",
     r"17: workload\.requests\[0\]\.extract\.token: give exactly one of `json`"),
    ("extract: {token: {json: $.token}}", "extract: {Token: {json: $.token}}",
     r"17: workload\.requests\[0\]\.extract\.Token: not a variable name"),
    ("path: $.count", "path: count", r"23: workload\.requests\[1\]\.checks\.json\.path: not a JSON path"),
    ("equals: 3}", "equals: null}",
     r"23: workload\.requests\[1\]\.checks\.json\.equals: expected a text, a number or true/false"),
    ("order: sequence", "order: mix", r"17: workload\.requests\[0\]\.extract: extract needs order: sequence"),
    ("order: sequence", "order: random", r"5: workload\.order: expected one of sequence, mix, got 'random'"),
    ("max_bytes: 65536}", "max_bytes: 65536}\n      weight: 3",
     r"24: workload\.requests\[1\]\.weight: a weight needs order: mix"),
    ("[20ms, 80ms]", "[80ms, 20ms]", r"7: workload\.think\.uniform: the least, 0\.08s, is more than the most, 0\.02s"),
    ("[20ms, 80ms]", "[20ms]", r"7: workload\.think\.uniform: expected two durations"),
    ("think: {uniform: [20ms, 80ms]}", "think: {normal: [20ms, 80ms]}", r"7: workload\.think\.normal: unknown key"),
    ("{duration: 1s, users: 0}", "{duration: 1s, rate: 5}",
     r"10: workload\.stages\[1\]\.rate: every stage gives users \(a closed model\) or every one a rate"),
    ("{duration: 2s, users: 4}", "{duration: 0s, users: 4}",
     r"9: workload\.stages\[0\]\.duration: expected a positive duration"),
    ("{duration: 2s, users: 4}", "{duration: 2s, users: 4, rate: 3}",
     r"9: workload\.stages\[0\]: expected \{duration, users\} or \{duration, rate\}"),
    ("{duration: 2s, users: 4}", "{duration: 2s, users: 0}", r"9: workload\.stages: no stage has any load"),
    ("matrix: {tool: [ab]}", "matrix: {tool: [ab], concurrency: [5]}",
     r"3: matrix\.concurrency: the workload's stages set the users \(the concurrency\): give no matrix\.concurrency"),
    ("matrix: {tool: [ab]}", "matrix: {tool: [ab], rate: [5]}", r"3: matrix\.rate: the workload's stages set"),
    ("name: w\n", "name: w\nstop: {duration: 1s}\n",
     r"2: stop: the workload's stages set the duration: give no `stop`"),
    ("name: w\n", "name: w\nrequest: {path: /}\n", r"6: workload: give either `request` or `workload`, not both"),
    ("per: user", "per: session", r"6: workload\.data\.per: expected one of user, iteration, got 'session'"),
    ("data/users.csv", "data/nope.csv", r"6: workload\.data\.file: 'data/nope\.csv': cannot read"),
    ("data/users.csv", "/etc/passwd", r"6: workload\.data\.file: expected a path relative to the scenario's folder"),
    ("data/users.csv", "../outside.csv", r"6: workload\.data\.file: '\.\./outside\.csv' leads outside the scenario's"),
    ("data/users.csv", "data/../../sc/../outside.csv", r"6: workload\.data\.file: .* leads outside"),
    ("bodies/login.json", "../outside.json", r"16: workload\.requests\[0\]\.body_file: '\.\./outside\.json' leads "
                                             "outside"),
]


@pytest.mark.parametrize("old, new, expected", REFUSED, ids=[r[2][:50] for r in REFUSED])
def test_each_refusal_names_its_file_line_and_key(tmp_path: Path, old: str, new: str, expected: str) -> None:
    assert old in GOOD
    (tmp_path / "outside.csv").write_text(USERS)
    (tmp_path / "outside.json").write_text(LOGIN)
    found = problems(folder(tmp_path, GOOD.replace(old, new, 1)))
    assert any(re.match(r".*/sc/s\.yaml:" + expected, p) for p in found), found
    assert all(len(p.splitlines()) == 1 for p in found)


def test_a_symlink_out_of_the_scenario_folder_is_refused_and_one_inside_it_is_followed(tmp_path: Path) -> None:
    (tmp_path / "outside.csv").write_text(USERS)
    path = folder(tmp_path, GOOD.replace("data/users.csv", "data/link.csv"))
    link = tmp_path / "sc" / "data" / "link.csv"
    link.symlink_to(tmp_path / "outside.csv")
    assert any(re.match(r".*/s\.yaml:6: workload\.data\.file: 'data/link\.csv' leads outside", p)
               for p in problems(path))
    link.unlink()
    link.symlink_to(tmp_path / "sc" / "data" / "users.csv")
    assert scenario.load(path).workload.data.rows == 2


def test_a_body_file_that_is_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    path = folder(tmp_path, GOOD.replace("bodies/login.json", "bodies/pipe"))
    os.mkfifo(tmp_path / "sc" / "bodies" / "pipe")
    assert any(re.match(r".*:16: workload\.requests\[0\]\.body_file: 'bodies/pipe' is not a regular file", p)
               for p in problems(path))


@pytest.mark.parametrize("users, expected", [
    ("user,password,term\nalice,pw1\n", r"data/users\.csv:2: 2 values, the header names 3"),
    ("user,password,term\nalice,pw1,a\nbob,pw2,b,extra\n", r"data/users\.csv:3: 4 values, the header names 3"),
    ("user,password,term\n", r"data/users\.csv: expected at least one row after the header"),
    ("", r"data/users\.csv:1: expected a header row"),
    ("User,password,term\na,b,c\n", r"data/users\.csv:1: not a variable name: 'User'"),
    ("user,user,term\na,b,c\n", r"data/users\.csv:1: a column named twice"),
    ("\ufeffuser,password,term\na,b,c\n", r"data/users\.csv:1: starts with a byte-order mark"),
    ('user,password,term\na,"b\nc",d\n', r"data/users\.csv:3: a value with a control character or a line break"),
])
def test_the_data_file_is_a_csv_with_a_header_of_variables_and_rows_as_wide(tmp_path: Path, users: str,
                                                                            expected: str) -> None:
    found = problems(folder(tmp_path, users=users))
    assert any(re.match(r".*/s\.yaml:6: workload\.data\.file: " + expected, p) for p in found), found


def test_a_data_file_that_is_not_utf8_is_refused_with_its_line(tmp_path: Path) -> None:
    path = folder(tmp_path)
    (tmp_path / "sc" / "data" / "users.csv").write_bytes(b"user,password,term\na,b,\xff\n")
    assert any(re.match(r".*:6: workload\.data\.file: data/users\.csv:2: not UTF-8 text", p) for p in problems(path))


def test_files_past_their_bound_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = folder(tmp_path)
    monkeypatch.setattr(workload_parts, "MAX_CSV_BYTES", len(USERS) - 1)
    monkeypatch.setattr(workload_read, "MAX_BODY_BYTES", len(LOGIN) - 1)
    found = problems(path)
    assert any(re.match(r".*:6: workload\.data\.file: 'data/users\.csv': larger than", p) for p in found), found
    assert any(re.match(r".*:16: workload\.requests\[0\]\.body_file: 'bodies/login\.json': larger than", p)
               for p in found), found
    monkeypatch.setattr(workload_parts, "MAX_CSV_BYTES", len(USERS))
    monkeypatch.setattr(workload_read, "MAX_BODY_BYTES", len(LOGIN))
    assert scenario.load(path).workload.data.rows == 2


def test_several_errors_of_one_workload_are_all_reported(tmp_path: Path) -> None:
    text = GOOD.replace("method: POST", "method: FETCH").replace("status: [200], json", "status: [99], json")
    found = problems(folder(tmp_path, text))
    assert [p.split(": ")[1] for p in found] == ["workload.requests[0].method", "workload.requests[1].checks.status[0]"]
