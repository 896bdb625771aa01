"""Protobuf request bodies: the decoder on hand-built bytes, raw requests, and kubectl's
imperative ``create`` (which sends built-in kinds as protobuf) with every kubectl found."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from sedna.embedded.apiserver import protobuf
from sedna.embedded.apiserver.errors import APIError

from .helpers import call, expect_status
from .test_kubectl import KUBECTL_PARAMS, Kubectl, kubeconfig_for, make_runner

ApiClient = kubernetes.client.ApiClient
PROTOBUF = "application/vnd.kubernetes.protobuf"


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def ld(number: int, payload: bytes | str) -> bytes:
    """A length-delimited field (wire type 2)."""
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(data)) + data


def vi(number: int, value: int) -> bytes:
    """A varint field (wire type 0)."""
    return varint(number << 3) + varint(value)


def entry(number: int, key: str, value: bytes | str) -> bytes:
    """One map<string, ...> entry."""
    return ld(number, ld(1, key) + ld(2, value))


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """``k8s\\x00`` + runtime.Unknown{typeMeta, raw, contentEncoding "", contentType ""}."""
    type_meta = ld(1, api_version) + ld(2, kind)
    return b"k8s\x00" + ld(1, type_meta) + ld(2, raw) + ld(3, b"") + ld(4, b"")


def meta(name: str, namespace: str = "", *extra: bytes) -> bytes:
    """ObjectMeta as Go marshals it: empty strings present, an empty creationTimestamp."""
    return ld(1, ld(1, name) + ld(2, "") + ld(3, namespace) + ld(8, b"") + b"".join(extra))


def decode_error(body: bytes) -> APIError:
    with pytest.raises(APIError) as info:
        protobuf.decode(body)
    return info.value


# --- the decoder ---------------------------------------------------------------------


def test_decode_configmap_with_labels_annotations_binary_data() -> None:
    raw = (
        meta(
            "c",
            "ns",
            entry(11, "app", "web"),
            entry(11, "tier", "front"),
            entry(12, "note", "x" * 200),  # a length needing a two-byte varint
        )
        + entry(2, "a", "b")
        + entry(2, "empty", "")
        + entry(3, "bin", b"\x00\xff")
        + vi(4, 1)
    )
    obj = protobuf.decode(envelope("v1", "ConfigMap", raw))
    assert obj == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "c",
            "namespace": "ns",
            "labels": {"app": "web", "tier": "front"},
            "annotations": {"note": "x" * 200},
        },
        "data": {"a": "b", "empty": ""},
        "binaryData": {"bin": base64.b64encode(b"\x00\xff").decode()},
        "immutable": True,
    }


def test_decode_secret_namespace_serviceaccount() -> None:
    secret = protobuf.decode(
        envelope(
            "v1",
            "Secret",
            meta("s", "", ld(2, "s-"))
            + entry(2, "k", b"\x01\x02")
            + ld(3, "Opaque")
            + entry(4, "plain", "text"),
        )
    )
    assert secret["metadata"] == {"name": "s", "generateName": "s-"}
    assert secret["data"] == {"k": "AQI="} and secret["stringData"] == {"plain": "text"}
    assert secret["type"] == "Opaque"

    ns = protobuf.decode(envelope("v1", "Namespace", meta("n") + ld(2, ld(1, "kubernetes"))))
    assert ns == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "n"},
        "spec": {"finalizers": ["kubernetes"]},
    }

    sa = protobuf.decode(
        envelope(
            "v1",
            "ServiceAccount",
            meta("sa", "ns", ld(14, "f1"), ld(14, "f2"))
            + ld(2, ld(1, "Secret") + ld(3, "tok"))
            + ld(3, ld(1, "pull"))
            + vi(4, 0),
        )
    )
    assert sa["metadata"]["finalizers"] == ["f1", "f2"]
    assert sa["secrets"] == [{"kind": "Secret", "name": "tok"}]
    assert sa["imagePullSecrets"] == [{"name": "pull"}]
    assert sa["automountServiceAccountToken"] is False  # a sent false stays false


def test_unknown_fields_of_every_wire_type_are_skipped() -> None:
    unknown = (
        vi(99, 300)  # varint
        + varint(98 << 3 | 1)
        + b"\x00" * 8  # fixed64
        + ld(97, b"\xff\xfe anything")  # length-delimited
        + varint(96 << 3 | 5)
        + b"\x00" * 4  # fixed32
    )
    raw = meta("c", "", unknown, ld(17, b"\x0a\x01x")) + unknown + entry(2, "a", "b")
    body = envelope("v1", "ConfigMap", raw) + vi(50, 1)  # and in the envelope
    obj = protobuf.decode(body)
    assert obj["metadata"] == {"name": "c"} and obj["data"] == {"a": "b"}


def test_later_map_entries_win_and_missing_key_or_value_default() -> None:
    raw = meta("c") + entry(2, "a", "1") + entry(2, "a", "2") + ld(2, ld(1, "k")) + ld(2, b"")
    assert protobuf.decode(envelope("v1", "ConfigMap", raw))["data"] == {"a": "2", "k": "", "": ""}


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b"k8s\x00" + ld(1, ld(1, "v1") + ld(2, "ConfigMap")) + b"\x12\x50abc", "truncated field"),
        (envelope("v1", "ConfigMap", meta("c"))[:-5], "truncated"),
        (envelope("v1", "ConfigMap", meta("c") + varint(99 << 3)), "truncated varint"),
        (envelope("v1", "ConfigMap", meta("c") + varint(99 << 3) + b"\xff" * 11), "longer than 10"),
        (envelope("v1", "ConfigMap", varint(99 << 3 | 3)), "unsupported wire type 3"),
        (envelope("v1", "ConfigMap", b"\x00\x00"), "field number 0"),
        (envelope("v1", "ConfigMap", vi(1, 5)), "field metadata: wire type 0"),
        (envelope("v1", "ConfigMap", ld(4, b"x")), "field immutable: wire type 2"),
        (envelope("v1", "ConfigMap", ld(1, ld(1, b"\xff"))), "field name: invalid UTF-8"),
        (b'{"kind": "ConfigMap"}', "missing the k8s"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_malformed_bodies_are_400(body: bytes, detail: str) -> None:
    err = decode_error(body)
    assert err.code == 400 and err.reason == "BadRequest"
    assert err.message.startswith("invalid protobuf body: ") and detail in err.message


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (envelope("v1", "Pod", b""), "(got v1 Pod)"),
        (envelope("apps/v1", "Deployment", b""), "(got apps/v1 Deployment)"),
        (envelope("v2", "ConfigMap", b""), "(got v2 ConfigMap)"),
        (b"k8s\x00", "(got <no apiVersion> <no kind>)"),
        (
            b"k8s\x00" + ld(1, ld(1, "v1") + ld(2, "Secret")) + ld(3, "gzip"),
            "content encoding 'gzip'",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_kinds_not_decoded_are_415(body: bytes, named: str) -> None:
    err = decode_error(body)
    assert err.code == 415 and err.reason == "UnsupportedMediaType"
    assert named in err.message and "application/json" in err.message
    assert "ConfigMap, Namespace, Secret, ServiceAccount" in err.message


# --- over HTTP -------------------------------------------------------------------------


def test_protobuf_create_over_http(api_client: ApiClient, namespace: str) -> None:
    raw = meta("pb", namespace, entry(11, "app", "x")) + entry(2, "k", "v")
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    status, body = call(
        api_client, "POST", path, envelope("v1", "ConfigMap", raw), content_type=PROTOBUF
    )
    assert status == 201, body
    assert body["data"] == {"k": "v"} and body["metadata"]["labels"] == {"app": "x"}
    _, got = call(api_client, "GET", f"{path}/pb")
    assert got["data"] == {"k": "v"}


def test_truncated_protobuf_over_http_is_400(api_client: ApiClient, namespace: str) -> None:
    body = envelope("v1", "ConfigMap", meta("t", namespace))[:-3]
    st = expect_status(
        api_client,
        400,
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        body,
        content_type=PROTOBUF,
    )
    assert st["reason"] == "BadRequest"


# --- kubectl ---------------------------------------------------------------------------


@pytest.fixture(params=KUBECTL_PARAMS)
def kubectl(request: pytest.FixtureRequest, apiserver: Any, tmp_path: Path, namespace: str) -> Any:
    binary = request.param
    assert binary is not None
    return make_runner(binary, kubeconfig_for(apiserver, tmp_path), namespace, tmp_path)


def test_kubectl_create_imperatively(kubectl: Kubectl, namespace: str) -> None:
    ns = f"{namespace}-made"
    assert f"namespace/{ns} created" in kubectl("create", "namespace", ns)
    try:
        got = json.loads(kubectl("get", "namespace", ns, "-o", "json"))
        assert got["metadata"]["name"] == ns
    finally:
        kubectl("delete", "namespace", ns, "--wait=false")

    out = kubectl("create", "secret", "generic", "s", "--from-literal=a=b", "--from-literal=c=dd")
    assert "secret/s created" in out
    secret = json.loads(kubectl("get", "secret", "s", "-o", "json"))
    assert secret["data"] == {"a": "Yg==", "c": "ZGQ="}
    assert secret["metadata"]["namespace"] == namespace

    assert "configmap/c created" in kubectl("create", "configmap", "c", "--from-literal=a=b")
    cm = json.loads(kubectl("get", "configmap", "c", "-o", "json"))
    assert cm["data"] == {"a": "b"}

    assert "serviceaccount/sa created" in kubectl("create", "serviceaccount", "sa")
    assert "sa" in kubectl("get", "serviceaccounts", "-o", "name")

    kubectl("label", "configmap", "c", "tier=front")
    kubectl("annotate", "configmap", "c", "note=hi")
    cm = json.loads(kubectl("get", "configmap", "c", "-o", "json"))
    assert cm["metadata"]["labels"] == {"tier": "front"}
    assert cm["metadata"]["annotations"]["note"] == "hi"


def test_kubectl_create_of_undecoded_kind_says_why(kubectl: Kubectl) -> None:
    out = kubectl("create", "deployment", "d", "--image=nginx", check=False)
    # kubectl 1.2x sends protobuf and gets the 415; older ones send JSON and succeed.
    assert "created" in out or "protobuf is decoded only for" in out, out
