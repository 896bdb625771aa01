"""The embedded API server's CA and serving certificate: kept across restarts (0600
files), renewed before they expire, at start and while running, without breaking a
client built from an earlier kubeconfig."""

from __future__ import annotations

import base64
import datetime
import socket
import ssl
import stat
from pathlib import Path

import kubernetes
import pytest
import yaml
from cryptography import x509

from sedna.embedded.apiserver import APIServer
from sedna.embedded.apiserver.tls import ensure_pki
from sedna.embedded.mode import EmbeddedMode
from sedna.runtime.config import GMConfig
from sedna.testing import wait_until

DAY = datetime.timedelta(days=1)
PKI_FILES = ("ca.crt", "ca.key", "apiserver.crt", "apiserver.key")


class Clock:
    """A wall clock the test moves (a host suspended for a year, a jump of NTP)."""

    def __init__(self, offset: datetime.timedelta = datetime.timedelta()) -> None:
        self.offset = offset

    def __call__(self) -> datetime.datetime:
        return datetime.datetime.now(datetime.UTC) + self.offset


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _client(kubeconfig: Path) -> kubernetes.client.ApiClient:
    cfg = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    cfg.retries = 3  # a keep-alive connection to the stopped server is retried
    return kubernetes.client.ApiClient(cfg)


def _reaches(client: kubernetes.client.ApiClient) -> bool:
    try:
        kubernetes.client.CoreV1Api(client).read_namespace("default", _request_timeout=5)
    except Exception:
        return False
    return True


def _handshake(port: int, ca_pem: bytes) -> None:
    """A TLS handshake that verifies the served chain against `ca_pem` (raises if not)."""
    ctx = ssl.create_default_context(cadata=ca_pem.decode())
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        ctx.wrap_socket(raw, server_hostname="127.0.0.1"),
    ):
        pass


def _ca_of(kubeconfig: Path) -> bytes:
    cfg = yaml.safe_load(kubeconfig.read_text())
    return base64.b64decode(cfg["clusters"][0]["cluster"]["certificate-authority-data"])


def _config(state: Path, port: int) -> GMConfig:
    section = {"enabled": True, "port": port, "stateDir": str(state), "simulate": {"nodes": []}}
    return GMConfig.model_validate({"embedded": section, "websocket": {"auth": "token"}})


@pytest.fixture()
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


def test_a_client_built_before_a_restart_keeps_working(state: Path, tmp_path: Path) -> None:
    config = _config(state, _free_port())
    mode = EmbeddedMode(config)
    prepared = mode.prepare()
    kubeconfig = tmp_path / "before-restart"
    kubeconfig.write_bytes(Path(prepared.kubeConfig).read_bytes())
    client = _client(kubeconfig)
    try:
        assert _reaches(client)
        mode.stop()
        again = EmbeddedMode(config)
        again.prepare()
        try:
            assert _reaches(client)
            assert _ca_of(Path(prepared.kubeConfig)) == _ca_of(kubeconfig)
        finally:
            again.stop()
    finally:
        client.close()
        mode.stop()
    for name in PKI_FILES:
        mode_bits = stat.S_IMODE((state / "pki" / name).stat().st_mode)
        assert mode_bits == 0o600, (name, oct(mode_bits))


def test_expired_serving_certificate_is_renewed_at_start(tmp_path: Path) -> None:
    """The state of a host that was off for 400 days: its certificate has expired."""
    pki, port = tmp_path / "pki", _free_port()
    old = APIServer("127.0.0.1", port, pki_dir=pki, cert_clock=Clock(-400 * DAY), tokens=["t0k"])
    kubeconfig = tmp_path / "kubeconfig"
    old.write_kubeconfig(kubeconfig)
    ca_before = (pki / "ca.crt").read_bytes()
    expired = x509.load_pem_x509_certificate((pki / "apiserver.crt").read_bytes())
    assert expired.not_valid_after_utc < datetime.datetime.now(datetime.UTC)
    old.stop()
    srv = APIServer("127.0.0.1", port, pki_dir=pki, tokens=["t0k"])
    srv.start()
    client = _client(kubeconfig)
    try:
        assert _reaches(client)  # the kubeconfig of 400 days ago still works
        assert (pki / "ca.crt").read_bytes() == ca_before
    finally:
        client.close()
        srv.stop()


def test_running_server_renews_after_a_clock_jump(tmp_path: Path) -> None:
    clock = Clock(-400 * DAY)
    srv = APIServer(
        "127.0.0.1", 0, pki_dir=tmp_path / "pki", cert_clock=clock, cert_check_interval=0.05
    )
    srv.start()
    try:
        ca = srv.cert.ca_pem
        with pytest.raises(ssl.SSLCertVerificationError, match="expired"):
            _handshake(srv.port, ca)
        clock.offset = datetime.timedelta()  # the clock jumps 400 days ahead
        wait_until(lambda: _handshake_ok(srv.port, ca), what="the renewed certificate served")
        assert srv.cert.ca_pem == ca  # the same CA: every kubeconfig stays valid
    finally:
        srv.stop()


def _handshake_ok(port: int, ca_pem: bytes) -> bool:
    try:
        _handshake(port, ca_pem)
    except ssl.SSLError:
        return False
    return True


def test_ca_near_its_end_is_renewed_with_the_same_key(state: Path) -> None:
    """Nine and a half years on, the CA is renewed; clients trusting the old CA
    certificate still verify the server, and the kubeconfig is rewritten."""
    clock = Clock()
    mode = EmbeddedMode(_config(state, 0), cert_clock=clock)
    prepared = mode.prepare()
    try:
        server = mode.server
        assert server is not None
        old_ca = _ca_of(Path(prepared.kubeConfig))
        clock.offset = 3470 * DAY
        assert server.check_certificates()
        new_ca = _ca_of(Path(prepared.kubeConfig))
        assert new_ca != old_ca and new_ca == (state / "pki" / "ca.crt").read_bytes()
        old, new = (x509.load_pem_x509_certificate(p) for p in (old_ca, new_ca))
        assert old.public_key() == new.public_key() and old.subject == new.subject
        assert new.not_valid_after_utc > old.not_valid_after_utc
        served = x509.load_pem_x509_certificate((state / "pki" / "apiserver.crt").read_bytes())
        served.verify_directly_issued_by(old)
        served.verify_directly_issued_by(new)
        assert served.not_valid_after_utc <= new.not_valid_after_utc
        assert not server.check_certificates()  # nothing more is due
    finally:
        mode.stop()


@pytest.mark.parametrize("damage", ["garbage", "empty", "swapped-keys", "open-modes"])
def test_damaged_pki_is_replaced(tmp_path: Path, damage: str) -> None:
    pki = tmp_path / "pki"
    ensure_pki(pki, "127.0.0.1")
    if damage == "garbage":
        (pki / "ca.crt").write_bytes(b"-----BEGIN CERTIFICATE-----\nnot base64!\n")
    elif damage == "empty":
        (pki / "apiserver.key").write_bytes(b"")
    elif damage == "swapped-keys":
        ca_key = (pki / "ca.key").read_bytes()
        (pki / "ca.key").write_bytes((pki / "apiserver.key").read_bytes())
        (pki / "apiserver.key").write_bytes(ca_key)
    for name in PKI_FILES:
        (pki / name).chmod(0o644)
    srv = APIServer("127.0.0.1", 0, pki_dir=pki)
    srv.start()
    try:
        _handshake(srv.port, srv.cert.ca_pem)
    finally:
        srv.stop()
    for name in PKI_FILES:
        assert stat.S_IMODE((pki / name).stat().st_mode) == 0o600, name


def test_serving_certificate_follows_the_address(tmp_path: Path) -> None:
    pki = tmp_path / "pki"
    first, _ = ensure_pki(pki, "127.0.0.1")
    issued, ca_changed = ensure_pki(pki, "10.1.2.3")
    assert not ca_changed and issued.ca_pem == first.ca_pem
    served = x509.load_pem_x509_certificate(issued.cert_file.read_bytes())
    san = served.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "10.1.2.3" in {str(ip) for ip in san.get_values_for_type(x509.IPAddress)}
