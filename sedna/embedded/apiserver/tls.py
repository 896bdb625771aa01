"""The server's certificates: a long-lived CA of its own and a serving certificate it signs.

The server speaks HTTPS because its clients insist on it for credentials: kubectl
(client-go) does not send a bearer token over plain HTTP, and a token sent in the clear
would be readable by anyone on the path anyway. The kubeconfig carries the CA (not the
serving certificate) as `certificate-authority-data`, so:

- both are kept in the PKI directory (0600 files) and reused at the next start: a
  client built before a restart keeps working;
- the serving certificate is renewed before it expires, at start and while running,
  and the kubeconfig stays valid, since the CA that signs the new one is the same;
- the CA itself lives ten years and is renewed a year before it ends, with the *same
  key*: certificates it signed verify against the old and the new CA certificate
  alike, so clients holding the old kubeconfig keep working while the rewritten one
  spreads.

Every decision reads an injectable clock, so a jump of the wall clock (a host
suspended for a year) is testable.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

Clock = Callable[[], datetime.datetime]

CA_LIFETIME = datetime.timedelta(days=3650)
CA_RENEW_BEFORE = datetime.timedelta(days=365)
SERVING_LIFETIME = datetime.timedelta(days=365)
SERVING_RENEW_BEFORE = datetime.timedelta(days=30)
# tolerated skew between this host and its clients
BACKDATE = datetime.timedelta(minutes=5)

CA_CERT, CA_KEY = "ca.crt", "ca.key"
SERVING_CERT, SERVING_KEY = "apiserver.crt", "apiserver.key"


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclass(frozen=True)
class ServerCert:
    """One issuance: the files to serve and the CA clients should trust."""

    cert_file: Path
    key_file: Path
    ca_file: Path
    ca_pem: bytes
    not_after: datetime.datetime
    ca_not_after: datetime.datetime

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx

    def renew_at(self) -> datetime.datetime:
        """When `ensure_pki` will next replace something."""
        return min(self.not_after - SERVING_RENEW_BEFORE, self.ca_not_after - CA_RENEW_BEFORE)


def _write_private(path: Path, data: bytes) -> None:
    """Write `data` readable by its owner only, replacing `path` atomically."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _load(cert_path: Path, key_path: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A certificate and its EC key from disk; ValueError when absent or unusable."""
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.public_key() != cert.public_key():
        raise ValueError("the key does not match the certificate")
    return cert, key


def _alt_names(host: str) -> list[x509.GeneralName]:
    alt: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    try:
        ip = ipaddress.ip_address(host)
        if not ip.is_unspecified and ip != ipaddress.ip_address("127.0.0.1"):
            alt.append(x509.IPAddress(ip))
    except ValueError:
        if host and host != "localhost":
            alt.append(x509.DNSName(host))
    return alt


def _make_ca(key: ec.EllipticCurvePrivateKey, now: datetime.datetime) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sedna-gm embedded apiserver CA")])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + CA_LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .sign(key, hashes.SHA256())
    )


def _make_serving(
    host: str,
    key: ec.EllipticCurvePrivateKey,
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    now: datetime.datetime,
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sedna-gm embedded apiserver")])
    # never outlive the CA that vouches for it
    not_after = min(now + SERVING_LIFETIME, ca.not_valid_after_utc)
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=False,
                crl_sign=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(_alt_names(host)), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )


def _serving_ok(
    cert: x509.Certificate, ca: x509.Certificate, host: str, now: datetime.datetime
) -> bool:
    """Still good to serve: signed by this CA, for this host, not due for renewal."""
    if cert.issuer != ca.subject or now < cert.not_valid_before_utc:
        return False
    if now >= cert.not_valid_after_utc - SERVING_RENEW_BEFORE:
        return False
    try:
        cert.verify_directly_issued_by(ca)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, TypeError, InvalidSignature, x509.ExtensionNotFound):
        return False
    return set(san) == set(_alt_names(host))


def ensure_pki(directory: Path, host: str, clock: Clock = utc_now) -> tuple[ServerCert, bool]:
    """Reuse the CA and serving certificate in `directory`, renewing what is due.

    Returns the certificate to serve and whether the CA certificate changed (its
    holders, the kubeconfigs, should then be rewritten).
    """
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    now = clock()
    ca_path, ca_key_path = directory / CA_CERT, directory / CA_KEY
    ca_changed = False
    try:
        ca, ca_key = _load(ca_path, ca_key_path)
    except ValueError:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = _make_ca(ca_key, now)
        _write_private(ca_key_path, _key_pem(ca_key))
        _write_private(ca_path, ca.public_bytes(serialization.Encoding.PEM))
        ca_changed = True
    if now >= ca.not_valid_after_utc - CA_RENEW_BEFORE or now < ca.not_valid_before_utc:
        ca = _make_ca(ca_key, now)  # same key: what it signed stays trusted
        _write_private(ca_path, ca.public_bytes(serialization.Encoding.PEM))
        ca_changed = True
    cert_path, key_path = directory / SERVING_CERT, directory / SERVING_KEY
    try:
        cert, _ = _load(cert_path, key_path)
        fresh = not _serving_ok(cert, ca, host, now)
    except ValueError:
        fresh = True
    if fresh:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _make_serving(host, key, ca, ca_key, now)
        _write_private(key_path, _key_pem(key))
        _write_private(cert_path, cert.public_bytes(serialization.Encoding.PEM))
    for p in (ca_path, ca_key_path, cert_path, key_path):
        os.chmod(p, 0o600)
    issued = ServerCert(
        cert_file=cert_path,
        key_file=key_path,
        ca_file=ca_path,
        ca_pem=ca.public_bytes(serialization.Encoding.PEM),
        not_after=cert.not_valid_after_utc,
        ca_not_after=ca.not_valid_after_utc,
    )
    return issued, ca_changed


def make_server_cert(directory: Path, host: str, clock: Clock = utc_now) -> ServerCert:
    """The certificate to serve from `directory` (see `ensure_pki`)."""
    return ensure_pki(directory, host, clock)[0]
