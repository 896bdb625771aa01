"""Bearer tokens before the upgrade, wss, and credentials that never go out in the clear."""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from sedna.runtime.config import ConfigError, TLSConfig, WebsocketConfig
from sedna.runtime.messaging import CREDENTIAL_ANNOTATION, MessageLayer
from sedna.runtime.metrics import Metrics

from .conftest import LayerFactory
from .helpers import FakeLC, obj, sample, wait_until

TOKEN = "tok-3f9a1c"
SECRET = "AKIA-SUPER-SECRET-VALUE"
CRED = {CREDENTIAL_ANNOTATION: json.dumps({"ACCESS_KEY_ID": "AKIA", "SECRET_ACCESS_KEY": SECRET})}


def _status_of(exc: pytest.ExceptionInfo[InvalidStatus]) -> int:
    return int(exc.value.response.status_code)


def test_no_token_gets_401_and_no_websocket(make_layer: LayerFactory, metrics: Metrics) -> None:
    layer = make_layer(auth="token", token_provider=lambda: {TOKEN})
    with pytest.raises(InvalidStatus) as exc:
        FakeLC(layer.port, "n")
    assert _status_of(exc) == 401
    assert exc.value.response.headers["WWW-Authenticate"].startswith("Bearer")
    with pytest.raises(InvalidStatus) as exc:
        FakeLC(layer.port, "n", token="wrong")
    assert _status_of(exc) == 401
    assert layer.connected_nodes() == []
    assert sample(metrics, "lc_messages_rejected_total", reason="unauthorized") == 2


def test_valid_token_connects(make_layer: LayerFactory, logs: list[str]) -> None:
    tokens = {TOKEN}
    layer = make_layer(auth="token", token_provider=lambda: tokens)
    lc = FakeLC(layer.port, "n", token=TOKEN)
    layer.send("n", "insert", obj("Model", "m"))
    assert lc.recv().header["resourceName"] == "m"
    # Rotation: the provider is asked on every attempt.
    tokens.clear()
    tokens.add("next")
    with pytest.raises(InvalidStatus):
        FakeLC(layer.port, "n2", token=TOKEN)
    FakeLC(layer.port, "n3", token="next")
    assert TOKEN not in "".join(logs)


def test_token_file_from_settings(make_layer: LayerFactory, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    layer = make_layer(auth="token", tokenFile=str(token_file))
    FakeLC(layer.port, "n", token=TOKEN)


def test_token_auth_without_a_source_is_a_config_error(metrics: Metrics) -> None:
    with pytest.raises(ConfigError, match=r"websocket\.auth"):
        MessageLayer(WebsocketConfig(auth="token"), metrics=metrics)
    with pytest.raises(ConfigError, match="tokenSecret"):
        MessageLayer(WebsocketConfig(auth="token", tokenSecret="ns/s"), metrics=metrics)


def test_missing_node_name_gets_400(make_layer: LayerFactory) -> None:
    layer = make_layer()
    with pytest.raises(InvalidStatus) as exc:
        connect(f"ws://127.0.0.1:{layer.port}/", open_timeout=5, legacy=True)
    assert _status_of(exc) == 400


def test_auth_none_warns_at_start(make_layer: LayerFactory, logs: list[str]) -> None:
    layer = make_layer(auth="none", port=0)  # port 0: the warning names the port bound
    warnings = [line for line in logs if "LCs are not authenticated" in line]
    assert len(warnings) == 1 and warnings[0].startswith("WARNING")
    assert layer.port > 0
    assert f"anyone who reaches 127.0.0.1:{layer.port} can receive" in warnings[0]


def test_credentials_refused_on_plain_ws(
    make_layer: LayerFactory, metrics: Metrics, logs: list[str]
) -> None:
    layer = make_layer()
    lc = FakeLC(layer.port, "n")
    layer.send("n", "insert", obj("IncrementalLearningJob", "job-1", annotations=CRED))
    assert layer.queue_depth("n") == 0
    assert sample(metrics, "lc_messages_rejected_total", reason="plain_credentials") == 1
    errors = [line for line in logs if line.startswith("ERROR")]
    assert len(errors) == 1
    assert "incrementallearningjob default/job-1" in errors[0]
    assert "allowPlainCredentials" in errors[0]
    assert lc.nothing_waiting()
    assert SECRET not in "".join(logs)


def test_credentials_allowed_on_plain_ws_when_configured(
    make_layer: LayerFactory, logs: list[str]
) -> None:
    layer = make_layer(allowPlainCredentials=True)
    lc = FakeLC(layer.port, "n")
    layer.send("n", "insert", obj("Model", "m", annotations=CRED))
    got = lc.recv()
    assert got.payload["metadata"]["annotations"] == CRED
    assert SECRET not in "".join(logs)


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for localhost/127.0.0.1, made with the cryptography package."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sedna-gm-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_wss_with_self_signed_certificate_carries_credentials(
    make_layer: LayerFactory, tmp_path: Path, logs: list[str]
) -> None:
    pytest.importorskip("cryptography")
    cert, key = _self_signed(tmp_path)
    layer = make_layer(
        auth="token",
        token_provider=lambda: [TOKEN],
        tls={"certFile": str(cert), "keyFile": str(key)},
    )
    client_ctx = ssl.create_default_context(cafile=str(cert))
    lc = FakeLC(layer.port, "secure", token=TOKEN, ssl_context=client_ctx)
    layer.send("secure", "insert", obj("Model", "m", annotations=CRED))
    assert lc.recv().payload["metadata"]["annotations"] == CRED
    assert SECRET not in "".join(logs)
    # A client that does not trust the certificate cannot connect.
    with pytest.raises(ssl.SSLError):
        FakeLC(layer.port, "x", token=TOKEN, ssl_context=ssl.create_default_context())
    # Plain ws to the wss port does not get a websocket.
    with pytest.raises(Exception):  # noqa: B017 - the failure mode is the OS's
        FakeLC(layer.port, "y", token=TOKEN)
    wait_until(lambda: layer.connected_nodes() == ["secure"], what="only the TLS client")


def test_missing_certificate_is_a_config_error(metrics: Metrics, tmp_path: Path) -> None:
    layer = MessageLayer(
        WebsocketConfig(
            auth="none",
            port=0,
            tls=TLSConfig(certFile=str(tmp_path / "nope.crt"), keyFile=str(tmp_path / "nope.key")),
        ),
        metrics=metrics,
    )
    with pytest.raises(ConfigError, match=r"websocket\.tls"):
        layer.start()
