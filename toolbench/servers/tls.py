"""The certificate a bundled target serves over TLS: made for each start of the target, in its
folder of the run, never a key shipped in the package. Self-signed (EC P-256), valid for the
address it listens on; the tools that can be told to trust a certificate are given this file."""
from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from toolbench.errors import TargetError

VALID_DAYS = 7  # a run's target; a longer life would only make a leaked key useful for longer


@dataclass(frozen=True)
class Certificate:
    cert: Path  # PEM, also what a tool is told to trust (it is its own authority)
    key: Path  # PEM, mode 600


def make(folder: Path, address: str) -> Certificate:
    """A fresh key and self-signed certificate for `address` (an IPv4 literal) in `folder`/tls."""
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError as exc:  # it comes with paramiko, in the [run] extra
        raise TargetError(f"TLS target: needs the cryptography package ({exc})") from None
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"toolbench target {address}")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.IPv4Address(address)),
                                                        x509.DNSName("localhost")]), critical=False)
            # Not a CA: rustls (oha) refuses a CA certificate as the server's own (CaUsedAsEndEntity),
            # while Go, OpenSSL and Python trust a self-signed end-entity certificate given as their CA file.
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    tls = folder / "tls"
    tls.mkdir(parents=True, exist_ok=True)
    paths = Certificate(cert=tls / "cert.pem", key=tls / "key.pem")
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    fd = os.open(paths.key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    return paths
