"""The redactor takes a run's secrets out in every encoding a copied file may hold them in, and
finds credentials by their shape where their values are not known; what is not secret stays."""
from __future__ import annotations

import html
import json
import urllib.parse

import pytest

from toolbench.report import secrets
from toolbench.report.redact import Redactor
from toolbench.report.secrets import Secrets

SECRET = 'Bearer s3cr/t"tok\'en&x'
USER = "alice"


def encodings(value: str) -> dict[str, str]:
    return {
        "plain": value,
        "json": json.dumps(value),
        "json, slashes escaped": json.dumps(value).replace("/", "\\/"),
        "json, every character escaped": "".join(f"\\u{ord(c):04X}" for c in value),
        "json inside json": json.dumps(json.dumps({"h": value})),
        "python repr": repr(value),
        "html": html.escape(value),
        "html, decimal references": "".join(f"&#{ord(c)};" for c in value),
        "html, hex references": "".join(f"&#x{ord(c):x};" for c in value),
        "html of json": html.escape(json.dumps(value)),
        "percent": urllib.parse.quote(value, safe=""),
        "percent, lower case": urllib.parse.quote(value, safe="").lower().replace("bearer", "Bearer"),
        "form": urllib.parse.quote_plus(value),
    }


@pytest.fixture()
def redactor() -> Redactor:
    return Redactor(["bench-host"], Secrets(values=(SECRET, "/home/alice/.ssh/id_lab"), users=(USER,)))


@pytest.mark.parametrize("form", list(encodings(SECRET)))
def test_a_known_secret_goes_in_every_encoding(redactor: Redactor, form: str) -> None:
    written = encodings(SECRET)[form]
    text = f"before {written} after"
    for out in (redactor.text(text), redactor.bytes(text.encode()).decode()):
        assert "s3cr" not in out and "tok" not in out, out
        assert out.startswith("before ") and out.endswith(" after")
        assert "[redacted]" in out


def test_a_non_ascii_secret_goes_in_its_encodings() -> None:
    value = "clé-😀-secret"
    redactor = Redactor([], Secrets(values=(value,)))
    for written in (value, json.dumps(value)[1:-1], html.escape(value), urllib.parse.quote(value),
                    "".join(f"&#{ord(c)};" for c in value)):
        assert redactor.text(f"<{written}>") == "<[redacted]>", written
        assert redactor.bytes(f"<{written}>".encode()) == b"<[redacted]>", written


@pytest.mark.parametrize(("text", "gone", "kept"), [
    ("-H 'Authorization: Basic dXNlcjpwdw=='", "dXNlcjpwdw", "Authorization: [redacted]"),
    ("proxy-authorization: Digest abc def\nnext line", "Digest", "next line"),
    ('{"Cookie": "sid=abc; theme=dark", "Accept": "text/html"}', "sid=abc", '"Accept": "text/html"'),
    ("{'x-api-key': 'k-123'}", "k-123", "x-api-key"),
    ("headers:\n  Set-Cookie: sid=zz\n  X-Keep: 1", "sid=zz", "X-Keep: 1"),
    ("X-Token: tok-9", "tok-9", "X-Token: [redacted]"),  # marked secret by the scenario
    ("Authorization&#34;: &#34;Bearer q1w2", "q1w2", "Authorization"),
    ("GET /a?token=abc123&size=10&API_KEY=zz99&amp;sig=s1 HTTP/1.1", "abc123", "size=10"),
    ("GET /a?token=abc123&size=10&API_KEY=zz99&amp;sig=s1 HTTP/1.1", "zz99", "HTTP/1.1"),
    ("GET /a?token=abc123&size=10&API_KEY=zz99&amp;sig=s1 HTTP/1.1", "s1 ", "&amp;sig=[redacted]"),
    ("url http://bob:pw0rd@example.test:8080/x ok", "pw0rd", "http://[redacted]@example.test:8080/x ok"),
    ('"https:\\/\\/bob:pw0rd@example.test\\/x"', "bob", "example.test"),
    ("ssh alice@10.0.0.7 -p 22", "alice", "[user]@10.0.0.7"),  # private addresses stay unless asked
    ("target on deploy7@10.0.0.9:2222: nginx not found", "deploy7", "[user]@10.0.0.9:2222"),
    ('"host": "ops.team@bench-b:22"', "ops.team", '"[user]@bench-b:22"'),
    ("mail me@example.com or git@github.com:org/repo", "[user]", "me@example.com"),
    ("/home/carol", "carol", "[user]"),
    ("/Users/carol/projects/x.py", "carol", "x.py"),
    ("file:///home/carol/x and ~carol/y", "carol", "~[user]/y"),
    ("PYTHONPATH=/home/carol", "carol", "PYTHONPATH="),
    ("key /home/alice/.ssh/id_lab and id_rsa", "id_lab", "id_rsa"),
])
def test_secrets_found_by_their_shape_go(text: str, gone: str, kept: str) -> None:
    redactor = Redactor([], Secrets(values=("/home/alice/.ssh/id_lab",),
                                    headers=(*secrets.Secrets().headers, "X-Token"), users=(USER,)))
    for out in (redactor.text(text), redactor.bytes(text.encode()).decode()):
        assert gone not in out, out
        assert kept in out, out


def test_what_is_not_secret_stays(redactor: Redactor) -> None:
    text = ("Authorization is needed; tokens=3 a-cookie-jar GET /a?size=10&id=7 :root{x} --root /opt "
            "vm.swappiness 127.0.0.1 ::1 10.0.0.7 alice_b")
    assert redactor.text(text) == text
    assert redactor.data({"Accept": "*/*", "n": 3, "ok": True}) == {"Accept": "*/*", "n": 3, "ok": True}


def test_json_values_under_a_secret_header_go(redactor: Redactor) -> None:
    found = redactor.data({"headers": {"AUTHORIZATION": "Negotiate xyz", "Accept": "*/*"},
                           "argv": ["ab", "-H", "Cookie: a=b"]})
    assert found == {"headers": {"AUTHORIZATION": "[redacted]", "Accept": "*/*"},
                     "argv": ["ab", "-H", "Cookie: [redacted]"]}


def test_private_addresses_go_only_when_asked() -> None:
    text = ("gen 10.1.2.3:22, 172.16.0.9 192.168.1.1. 169.254.0.1 fe80::1%eth0 fd12::3 | "
            "127.0.0.1 ::1 8.8.8.8 172.32.0.1")
    assert Redactor([]).text(text) == text
    out = Redactor([], private_addresses=True).text(text)
    assert out == ("gen [private address]:22, [private address] [private address]. [private address] "
                   "[private address] [private address] | 127.0.0.1 ::1 8.8.8.8 172.32.0.1")
    assert Redactor([], private_addresses=True).bytes(text.encode()).decode() == out


def test_a_runs_secrets_are_read_from_its_manifest() -> None:
    scenario = """\
name: s
hosts:
  generator: {address: 10.0.0.2, user: benchuser, key: ~/.ssh/id_lab}
target: {url: "http://127.0.0.1:8080"}
request:
  path: /p?access_token=tok-abc&n=1
  headers: {Authorization: Bearer b-123, X-Custom: c-456, X-Plain: visible}
  secret_headers: [X-Custom]
profiles:
  other: {request: {headers: {Cookie: "sid=p-789"}}}
"""
    manifest = {"scenario": {"text": scenario},
                "environment": {"argv": ["toolbench", "run", "s.yaml", "--known-hosts", "/srv/lab/kh_file"]},
                "generators": [{"name": "g", "host": "otheruser@10.0.0.3:22"}, {"host": 7}]}
    found = secrets.of_manifest(manifest)
    for value in ("Bearer b-123", "c-456", "tok-abc", "sid=p-789", "~/.ssh/id_lab", "/srv/lab/kh_file"):
        assert value in found.values, value
    assert "visible" not in found.values
    assert set(found.users) == {"benchuser", "otheruser"}
    assert "X-Custom" in found.headers and "Authorization" in found.headers
    assert secrets.of_manifest({"scenario": {"text": "a: *x"}}) == Secrets()  # what does not read gives nothing
    assert secrets.of_manifest(["not", "a", "manifest"]) == Secrets()


def test_a_short_known_value_is_taken_out_by_its_shape_only() -> None:
    redactor = Redactor([], Secrets(values=("a", "xyz"), users=("bo",)))
    text = 'status complete, nginx-static; Cookie: a\n{"X-Api-Key": "xyz"} bo@h bobcat'
    assert redactor.text(text) == ('status complete, nginx-static; Cookie: [redacted]\n'
                                   '{"X-Api-Key": "[redacted]"} [user]@h bobcat')


def test_a_secret_written_as_yaml_writes_it_goes_from_the_scenario_text() -> None:
    """Folded over lines, quoted, escaped: the value the scenario gives, however its text spells it."""
    text = ("request:\n  headers:\n    X-Api-Key: k-1 k-2\n      k-3\n"
            "    Authorization: \"Bearer \\x41\\u0042C\\U00000044\"\n    X-Token: 'it''s-a-secret'\n"
            "  secret_headers: [X-Token]\n  path: /x?n=1\n")
    found = secrets.of_manifest({"scenario": {"text": text}})
    redactor = Redactor([], found)
    assert set(found.values) >= {"k-1 k-2 k-3", "Bearer ABCD", "it's-a-secret"}
    for out in (redactor.text(text), redactor.bytes(text.encode()).decode(),
                json.loads(redactor.bytes(json.dumps(text).encode()))):
        for part in ("k-1", "k-3", "ABCD", "\\x41", "a-secret"):
            assert part not in out, (part, out)
        assert "path: /x?n=1" in out


def test_a_rendered_page_keeps_its_markup() -> None:
    """A user named like a word of the page's CSS or script (`root`) goes from its text only."""
    page = b"<style>:root { --fg: #1d1f21; } a ~ b {}</style><p>ssh root@h runs as root</p>"
    out = Redactor([], Secrets(users=("root",)), private_addresses=True).page(page)
    assert out == b"<style>:root { --fg: #1d1f21; } a ~ b {}</style><p>ssh [user]@h runs as [user]</p>"


def test_a_workloads_credentials_are_read_from_its_requests() -> None:
    """A workload's requests carry headers and query parameters too: a literal credential in any of
    them is a known value, and a query value named like a credential is one."""
    text = """\
workload:
  requests:
    - name: a
      path: /a
      headers: {X-Api-Key: wk-111, X-Plain: shown}
      query: {api_key: qk-222, page: "3"}
    - name: b
      path: /b
      headers: {Authorization: "Bearer ${token}"}
"""
    found = secrets.of_manifest({"scenario": {"text": text}})
    assert {"wk-111", "qk-222", "Bearer ${token}"} <= set(found.values)
    assert "shown" not in found.values and "3" not in found.values
