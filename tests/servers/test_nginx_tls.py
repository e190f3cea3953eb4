"""The bundled nginx over TLS and HTTP/2: a certificate made for each start (never shipped),
HTTP/1.1 and h2 on the TLS port by ALPN, h2c on a port of its own, and a plain target's config
as it was before the protocol was a dimension."""
from __future__ import annotations

import http.client
import socket
import ssl
import stat
import urllib.parse
from pathlib import Path
from typing import Iterator

import pytest

from toolbench.errors import TargetError
from toolbench.servers.nginx import nginx_static
from toolbench.servers.process import RunningTarget

ALL = frozenset({"http1", "https", "h2", "h2c"})


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningTarget, Path]]:
    workdir = tmp_path_factory.mktemp("nginx-tls")
    with nginx_static(workdir, serve=ALL) as target:
        yield target, workdir


def _tls(target: RunningTarget, alpn: list[str]) -> ssl.SSLSocket:
    parts = urllib.parse.urlsplit(target.url_for("https"))
    context = ssl.create_default_context(cafile=target.ca_file)
    context.set_alpn_protocols(alpn)
    raw = socket.create_connection((parts.hostname, parts.port), timeout=5)
    return context.wrap_socket(raw, server_hostname=parts.hostname)


def test_the_certificate_is_made_for_this_start_and_its_key_is_private(served: tuple[RunningTarget, Path]) -> None:
    target, workdir = served
    assert target.ca_file == str(workdir / "tls" / "cert.pem")
    assert stat.S_IMODE((workdir / "tls" / "key.pem").stat().st_mode) == 0o600
    assert b"BEGIN CERTIFICATE" in Path(target.ca_file).read_bytes()


def test_https_is_verified_against_the_made_certificate_and_answers(served: tuple[RunningTarget, Path]) -> None:
    target, _ = served
    parts = urllib.parse.urlsplit(target.url_for("https"))
    conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=5,
                                       context=ssl.create_default_context(cafile=target.ca_file))
    conn.request("GET", "/")
    answer = conn.getresponse()
    assert (answer.status, answer.read()) == (200, b"Hello, World!")
    assert conn.sock.version() in ("TLSv1.2", "TLSv1.3")
    conn.close()


def test_alpn_picks_h2_or_http11_on_the_same_port(served: tuple[RunningTarget, Path]) -> None:
    target, _ = served
    assert target.url_for("h2") == target.url_for("https")
    for offered, picked in ((["h2", "http/1.1"], "h2"), (["http/1.1"], "http/1.1")):
        with _tls(target, offered) as sock:
            assert sock.selected_alpn_protocol() == picked


def test_h2c_answers_the_http2_preface_with_its_settings(served: tuple[RunningTarget, Path]) -> None:
    target, _ = served
    parts = urllib.parse.urlsplit(target.url_for("h2c"))
    assert parts.scheme == "http" and parts.port != urllib.parse.urlsplit(target.base_url).port
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as sock:
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        frame = sock.recv(9)
    assert frame[3] == 0x4  # a SETTINGS frame: the server speaks HTTP/2 here without TLS


def test_each_tls_connection_is_logged_once_with_whether_it_resumed(served: tuple[RunningTarget, Path]) -> None:
    target, workdir = served
    log = workdir / "tls" / "handshakes.log"
    before = log.read_text().splitlines() if log.exists() else []
    with _tls(target, ["http/1.1"]) as sock:
        for _ in range(3):  # three requests on one connection: one line
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert b"Hello, World!" in sock.recv(4096)
    lines = log.read_text().splitlines()[len(before):]
    assert len(lines) == 1
    _, reused, version, _, protocol = lines[0].split(" ")
    assert (reused, protocol) == (".", "HTTP/1.1") and version.startswith("TLSv1.")


def test_a_plain_target_is_configured_as_before(tmp_path: Path) -> None:
    with nginx_static(tmp_path) as target:
        assert (target.urls, target.ca_file) == ({}, None)
        assert "ssl" not in (tmp_path / "nginx.conf").read_text()
        assert not (tmp_path / "tls").exists()
        with pytest.raises(TargetError, match="does not serve https"):
            target.url_for("https")
