"""mTLS: with websocket.tls.clientCAFile an LC proves its node with a certificate whose CN
is its Node-Name; another CN, or no certificate, gets no websocket."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from websockets.exceptions import ConnectionClosed, InvalidMessage, InvalidStatus

from sedna.runtime.metrics import Metrics

from .conftest import LayerFactory
from .helpers import FakeLC, obj, sample
from .test_security import _self_signed


def _pem(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _key_pem(key: Any) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _ca(tmp_path: Path) -> tuple[Any, x509.Certificate, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lc-ca")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    return key, cert, _pem(tmp_path / "ca.crt", cert.public_bytes(serialization.Encoding.PEM))


def _client(tmp_path: Path, ca_key: Any, ca: x509.Certificate, cn: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
        .issuer_name(ca.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    return (
        _pem(tmp_path / f"{cn}.crt", cert.public_bytes(serialization.Encoding.PEM)),
        _pem(tmp_path / f"{cn}.key", _key_pem(key)),
    )


def test_the_certificate_cn_must_be_the_node_name(
    make_layer: LayerFactory, metrics: Metrics, tmp_path: Path
) -> None:
    server_cert, server_key = _self_signed(tmp_path)
    ca_key, ca, ca_file = _ca(tmp_path)
    layer = make_layer(
        tls={"certFile": str(server_cert), "keyFile": str(server_key), "clientCAFile": str(ca_file)}
    )

    def ctx(cn: str | None) -> ssl.SSLContext:
        c = ssl.create_default_context(cafile=str(server_cert))
        if cn is not None:
            cert, key = _client(tmp_path, ca_key, ca, cn)
            c.load_cert_chain(cert, key)
        return c

    lc = FakeLC(layer.port, "edge-node", ssl_context=ctx("edge-node"))
    layer.send("edge-node", "insert", obj("Model", "m"))
    assert lc.recv().header["resourceName"] == "m"
    with pytest.raises(InvalidStatus) as exc:
        FakeLC(layer.port, "edge-node-2", ssl_context=ctx("other-node"))
    assert exc.value.response.status_code == 403
    assert sample(metrics, "lc_messages_rejected_total", reason="node_mismatch") == 1
    # TLS 1.3 refuses a missing client certificate after the handshake: the client sees
    # it at the upgrade, or as a connection closed under its first read
    with pytest.raises((ssl.SSLError, OSError, InvalidMessage, ConnectionClosed)):
        FakeLC(layer.port, "edge-node-3", ssl_context=ctx(None)).recv(timeout=2)
