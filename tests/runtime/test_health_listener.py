"""The health listener against hostile peers, and who may read /metrics.

Everything goes through real sockets to a running `HealthServer`. Bounds are checked
by events (a connection closed, a count reached), never by how long something took.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.waiting import poll, wait_until

from sedna.runtime import Metrics
from sedna.runtime.health import MAX_HEAD_BYTES, HealthServer
from sedna.runtime.metrics_auth import BearerAuthenticator, file_tokens

TOKEN = "right-token"


def get(port: int, path: str, authorization: str | None = None) -> tuple[int, str, dict[str, str]]:
    headers = {"Authorization": authorization} if authorization is not None else {}
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(), dict(err.headers)


def raw(port: int, request: bytes, source: str = "127.0.0.1") -> bytes:
    """Send `request` as is and read the whole answer (the server closes after one)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0)) as s:
        s.sendall(request)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def slow(port: int, source: str = "127.0.0.1") -> socket.socket:
    """A slowloris: a request line and half a header, then nothing."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    s.sendall(b"GET /healthz HTTP/1.1\r\nX-a: ")
    return s


def closed_by_server(s: socket.socket) -> bool:
    """True once the server closed `s` (what it sent before, e.g. a 408, is read away)."""
    s.settimeout(20)
    try:
        while s.recv(4096):
            pass
    except ConnectionResetError:
        pass
    return True


def still_open(s: socket.socket) -> bool:
    s.setblocking(False)
    try:
        return s.recv(1) != b""  # data would be a bug too, but not an EOF
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        s.setblocking(True)


@pytest.fixture()
def health() -> Iterator[HealthServer]:
    server = HealthServer(
        "127.0.0.1",
        0,
        Metrics().registry,
        authenticator=BearerAuthenticator(lambda: {TOKEN}),
        workers=1,
        backlog=1,
        max_connections=16,
        max_per_peer=8,
        request_timeout=60,  # longer than any test: lorises stay until a bound evicts them
    )
    server.add_liveness("ping", lambda: True)
    server.add_readiness("ready", lambda: True)
    server.start()
    yield server
    server.stop()


# -- slow and many peers --------------------------------------------------------------


def test_slow_senders_hold_no_worker_and_the_probes_answer(health: HealthServer) -> None:
    """Regression: 20 slow senders filled the 4 workers and 16 slots; probes were closed."""
    assert health.server is not None
    lorises = [slow(health.port, f"127.0.0.{2 + i % 4}") for i in range(12)]
    try:
        wait_until(lambda: health.server is not None and health.server.pending == 12, 10,
                   "the server to hold every slow connection")  # fmt: skip
        # one worker, and twelve unfinished requests: the probes are answered all the same
        for _ in range(5):
            assert get(health.port, "/healthz")[0] == 200
            assert get(health.port, "/readyz")[0] == 200
        assert get(health.port, "/metrics", f"Bearer {TOKEN}")[0] == 200
        assert all(still_open(s) for s in lorises)  # nobody evicted them: no bound was hit
    finally:
        for s in lorises:
            s.close()


def test_a_request_must_be_complete_within_the_deadline_across_reads() -> None:
    """A byte every few moments kept the old per-read timeout from ever firing."""
    server = HealthServer("127.0.0.1", 0, Metrics().registry, request_timeout=0.5)
    server.start()
    s = slow(server.port)
    stop = threading.Event()

    def trickle() -> None:  # far more often than the deadline: only a total deadline cuts it
        while not stop.wait(0.05):
            try:
                s.send(b"a")
            except OSError:
                return

    sender = threading.Thread(target=trickle, daemon=True)
    sender.start()
    try:
        s.settimeout(30)
        answer = s.recv(4096)
        assert answer.startswith(b"HTTP/1.0 408") or answer == b""
        assert closed_by_server(s)
        assert server.server is not None and server.server.evicted >= 1
    finally:
        stop.set()
        sender.join(5)
        s.close()
        server.stop()


def test_one_address_holds_at_most_its_share_and_evicts_only_its_own(
    health: HealthServer,
) -> None:
    other = slow(health.port, "127.0.0.9")
    lorises = [slow(health.port, "127.0.0.2") for _ in range(12)]  # the limit is 8
    try:
        # the four oldest of 127.0.0.2 are closed; the newest eight and the other stay
        for s in lorises[:4]:
            assert closed_by_server(s)
        wait_until(lambda: health.server is not None and health.server.pending == 9, 10,
                   "eight lorises and the other peer")  # fmt: skip
        assert all(still_open(s) for s in lorises[4:])
        assert still_open(other)
        # a probe from the same address as the flood is still answered
        assert raw(health.port, b"GET /healthz HTTP/1.0\r\n\r\n", "127.0.0.2").startswith(
            b"HTTP/1.0 200"
        )
    finally:
        for s in [other, *lorises]:
            s.close()


def test_when_all_slots_are_taken_the_busiest_address_loses_its_oldest(
    health: HealthServer,
) -> None:
    """max_connections 16: two addresses with 8 each fill it; a third peer gets in."""
    a = [slow(health.port, "127.0.0.2") for _ in range(8)]
    b = [slow(health.port, "127.0.0.3") for _ in range(7)]
    try:
        wait_until(lambda: health.server is not None and health.server.pending == 15, 10,
                   "fifteen connections")  # fmt: skip
        c = slow(health.port, "127.0.0.4")  # 16: full, nobody is evicted
        d = slow(health.port, "127.0.0.5")  # 17: the oldest of 127.0.0.2 goes
        assert closed_by_server(a[0])
        wait_until(lambda: health.server is not None and health.server.pending == 16, 10,
                   "the bound")  # fmt: skip
        assert all(still_open(s) for s in [*a[1:], *b, c, d])
        for s in (c, d):
            s.close()
    finally:
        for s in [*a, *b]:
            s.close()


def test_an_oversized_head_is_refused(health: HealthServer) -> None:
    big = b"GET /healthz HTTP/1.0\r\nX-a: " + b"a" * (MAX_HEAD_BYTES + 10)
    with socket.create_connection(("127.0.0.1", health.port), timeout=10) as s:
        with contextlib.suppress(OSError):  # closed while we were still sending: refused too
            s.sendall(big)
        try:
            answer = s.recv(4096)
        except ConnectionResetError:
            answer = b""
    assert answer.startswith(b"HTTP/1.0 431") or answer == b""
    assert get(health.port, "/healthz")[0] == 200


def test_a_peer_that_does_not_read_its_answer_is_cut_off() -> None:
    """The answer has a deadline in all too: /metrics to a reader that never reads."""
    metrics = Metrics()
    for i in range(40000):  # an answer (about 4 MB) far larger than the socket buffers
        metrics.lc_queue_depth.labels(node=f"node-with-a-long-name-{i:05d}").set(i)
    server = HealthServer("127.0.0.1", 0, metrics.registry, workers=1, backlog=0, write_timeout=0.5)
    server.start()
    try:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
        s.connect(("127.0.0.1", server.port))
        s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        # the one worker is freed for the probe once the write deadline passes
        poll(lambda: raw(server.port, b"GET /healthz HTTP/1.0\r\n\r\n").startswith(
            b"HTTP/1.0 200"), 30, interval=0.1, failure="the probe answers")  # fmt: skip
        s.close()
    finally:
        server.stop()


# -- /metrics authentication ---------------------------------------------------------


def test_metrics_wants_the_token_and_the_probes_do_not(health: HealthServer) -> None:
    code, body, headers = get(health.port, "/metrics")
    assert code == 401
    assert headers["WWW-Authenticate"].startswith("Bearer")
    assert "lc_queue_depth" not in body
    assert get(health.port, "/metrics", "Bearer wrong-token")[0] == 401
    code, body, _ = get(health.port, "/metrics", f"Bearer {TOKEN}")
    assert code == 200
    assert "gm_ready" in body
    for path in ("/healthz", "/livez", "/readyz"):
        assert get(health.port, path)[0] == 200
        assert get(health.port, path, "Bearer wrong-token")[0] == 200


@pytest.mark.parametrize(
    "authorization",
    [
        "",
        "Bearer",
        "Bearer ",
        f"Basic {TOKEN}",
        f"Bearer  {TOKEN}",
        f"Bearer {TOKEN} extra",
        f"{TOKEN}",
        f"Bearer {TOKEN[:-1]}",
        f"Bearer {TOKEN}x",
        "Bearer " + "a" * 5000,
        "Bearer tök",
    ],
)
def test_malformed_authorization_is_refused(health: HealthServer, authorization: str) -> None:
    request = f"GET /metrics HTTP/1.0\r\nAuthorization: {authorization}\r\n\r\n".encode()
    assert raw(health.port, request).startswith(b"HTTP/1.0 401")


def test_two_authorization_headers_are_refused_even_if_one_is_right(
    health: HealthServer,
) -> None:
    request = (
        f"GET /metrics HTTP/1.0\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Authorization: Bearer other\r\n\r\n"
    ).encode()
    assert raw(health.port, request).startswith(b"HTTP/1.0 401")
    ok = f"GET /metrics HTTP/1.0\r\nauthorization: bearer {TOKEN}\r\n\r\n".encode()
    assert raw(health.port, ok).startswith(b"HTTP/1.0 200")  # names are case-insensitive


def test_no_token_source_refuses_everyone() -> None:
    def broken() -> set[str]:
        raise RuntimeError("the source broke")

    for source in (lambda: set(), broken):
        auth = BearerAuthenticator(source)
        assert auth.status([f"Bearer {TOKEN}"]) == 401
        assert auth.status(["Bearer "]) == 401


def test_token_file_is_reread_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "token"
    tokens = file_tokens(path)
    assert tokens() == frozenset()  # absent: nobody
    path.write_text("one\n")
    assert tokens() == {"one"}
    # a mounted Secret changes by a new file swapped in: a new inode
    new = tmp_path / "token.new"
    new.write_text("two\n\nthree\n")
    os.replace(new, path)
    assert tokens() == {"two", "three"}
    path.unlink()
    assert tokens() == frozenset()


def test_auth_none_serves_metrics_to_anyone() -> None:
    server = HealthServer("127.0.0.1", 0, Metrics().registry, authenticator=None)
    server.start()
    try:
        assert get(server.port, "/metrics")[0] == 200
    finally:
        server.stop()


def test_a_connection_evicted_while_it_is_readable_does_not_stop_the_listener(
    health: HealthServer,
) -> None:
    """An accept that evicts a connection whose bytes arrived in the same round: the
    listener goes on (it used to look the evicted one up and die, probes and all)."""
    peers: list[socket.socket] = []
    try:
        for _ in range(40):
            for s in peers[-8:]:
                with contextlib.suppress(OSError):
                    s.sendall(b"a")  # readable in the next round
            peers.append(slow(health.port, "127.0.0.2"))  # at the limit: evicts the oldest
        assert raw(health.port, b"GET /healthz HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.0 200")
    finally:
        for s in peers:
            s.close()
