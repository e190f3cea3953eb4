"""`toolbench publish` takes a run's secrets out of every byte of the site: the credential
headers and the headers its scenario marks secret, URL tokens and userinfo, SSH users, key and
known-hosts paths, home folders' users and, when asked, private addresses; in plain text, JSON
escapes, HTML references and percent escapes alike. What is not secret stays, and the report
still renders. A real run of the engine against the bundled nginx, then its folder as a run
someone hands over (a raw file and manifest parts a run over SSH would have, written into it)."""
from __future__ import annotations

import html
import json
import shutil
import urllib.parse
from pathlib import Path

import pytest

from helpers.cli import cli
from helpers.scenarios import write

pytestmark = pytest.mark.integration

SCENARIO = """\
name: secrets
target: {server: nginx-static, workers: 1}
request:
  path: /?token=tok-QQ7&size=10
  headers: {Authorization: Bearer auth-ZZ9, Cookie: sid=cookie-YY8, X-Token: xtok-WW6, X-Plain: plain-visible}
  secret_headers: [X-Token]
matrix: {tool: [engine], concurrency: [2]}
stop: {duration: 1s}
repeat: 1
cooldown: 0s
order: as-written
placement: none
calibrate: false
probe: {interval: 250ms, baseline: 5}
monitor: {interval: 500ms}
"""
# What a run over SSH keeps in its scenario text and manifest, added to the real run's.
HOSTS = "hosts:\n  target: {address: 10.20.30.40, user: labuser, key: /home/labuser/.ssh/id_lab_key}\n"
KNOWN_HOSTS = "/srv/lab/lab_known_hosts"
SECRETS = ("auth-ZZ9", "cookie-YY8", "xtok-WW6", "tok-QQ7", "labuser", "id_lab_key", "lab_known_hosts",
           "pw-userinfo-55", "10.20.30.40", "homeowner9")


def encodings(value: str) -> set[bytes]:
    forms = {value, json.dumps(value)[1:-1], "".join(f"\\u{ord(c):04x}" for c in value), html.escape(value),
             "".join(f"&#{ord(c)};" for c in value), "".join(f"&#x{ord(c):X};" for c in value),
             "".join(f"%{ord(c):02X}" for c in value), urllib.parse.quote(value)}
    return {form.encode() for form in forms}


@pytest.fixture(scope="module")
def handed_over(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed (scripts/install.sh installs it)")
    folder = tmp_path_factory.mktemp("secrets")
    reports = folder / "reports"
    done = cli("run", str(write(folder, SCENARIO)), "--reports-dir", str(reports), "--json")
    assert done.returncode == 0, done.stderr
    run = Path(json.loads(done.stdout)["run_dir"])
    stored = b"".join(p.read_bytes() for p in run.rglob("*") if p.is_file())
    assert b"auth-ZZ9" in stored and b"xtok-WW6" in stored and b"tok-QQ7" in stored  # the run kept them
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["scenario"]["text"] += HOSTS
    manifest["environment"]["argv"] += ["--known-hosts", KNOWN_HOSTS]
    (run / "manifest.json").write_text(json.dumps(manifest))
    raw = run / "raw" / "notes"
    raw.mkdir()
    lines = ["ssh labuser@10.20.30.40 -i /home/labuser/.ssh/id_lab_key -o UserKnownHostsFile=" + KNOWN_HOSTS,
             "GET http://admin:pw-userinfo-55@example.test/x?size=10", "cwd /home/homeowner9 and ~homeowner9/x",
             "kept: plain-visible size=10 127.0.0.1"]
    for value in ("Bearer auth-ZZ9", "sid=cookie-YY8", "xtok-WW6", "tok-QQ7", "/home/labuser/.ssh/id_lab_key"):
        lines += [form.decode() for form in sorted(encodings(value))]
    (raw / "notes.json").write_text(json.dumps({"lines": lines, "headers": {"X-Token": "xtok-WW6"}}))
    (raw / "page.html").write_text("<pre>" + html.escape("\n".join(lines)) + "</pre>")
    (raw / "log.txt").write_text("\n".join(lines))
    return reports


def test_no_secret_leaves_in_any_byte_of_the_site(handed_over: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = cli("publish", str(handed_over), "--site", str(site), "--with-raw", "--redact-private-addresses")
    assert done.returncode == 0, done.stderr
    files = [p for p in site.rglob("*") if p.is_file()]
    assert any(p.name == "notes.json" for p in files) and any(p.name == "page.html.txt" for p in files)
    for path in files:
        data = path.read_bytes()
        for secret in SECRETS:
            for form in encodings(secret):
                assert form not in data, (path, secret, form)
    everything = b"".join(p.read_bytes() for p in files)
    assert b"plain-visible" in everything and b"size=10" in everything and b"127.0.0.1" in everything
    assert b"[redacted]" in everything and b"[user]" in everything and b"[private address]" in everything
    (run,) = [p for p in site.iterdir() if p.is_dir()]
    manifest = json.loads((run / "manifest.json").read_text())
    assert "X-Plain: plain-visible" in manifest["scenario"]["text"]
    assert "engine" in (run / "report.html").read_text()
    assert run.name in (site / "index.html").read_text()


def test_without_asking_private_addresses_stay(handed_over: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = cli("publish", str(handed_over), "--site", str(site))
    assert done.returncode == 0, done.stderr
    everything = b"".join(p.read_bytes() for p in site.rglob("*") if p.is_file())
    assert b"10.20.30.40" in everything  # in the scenario text of the manifest
    for secret in SECRETS[:-2]:
        assert secret.encode() not in everything, secret
