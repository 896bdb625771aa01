"""The codec against the shapes Go's encoding/json produces and accepts."""

from __future__ import annotations

import base64
import json

import pytest

from sedna.runtime.messaging.wire import (
    FrameError,
    Header,
    Reason,
    decode_frame,
    decode_payload,
    encode_frame,
    encode_payload,
    has_credential,
    object_header,
)

from .helpers import GO_HELLO


def test_encode_matches_go_write_json() -> None:
    header = Header(namespace="default", kind="model", name="m", operation="insert")
    payload = b'{"kind":"Model"}'
    expected = (
        '{"header":{"namespace":"default","resourceKind":"model","resourceName":"m",'
        '"operation":"insert"},"content":"' + base64.b64encode(payload).decode() + '"}\n'
    )
    assert encode_frame(header, payload) == expected


def test_roundtrip_and_kind_is_lower_cased() -> None:
    obj = {"kind": "JointInferenceService", "metadata": {"name": "j", "namespace": "ns"}}
    header = object_header(obj, "insert")
    assert header == Header("ns", "jointinferenceservice", "j", "insert")
    assert header.key == "jointinferenceservice/ns/j"
    text = encode_frame(header, encode_payload(obj))
    decoded = decode_frame(text)
    assert decoded is not None
    assert decoded[0] == header
    assert decode_payload(decoded[1], header) == obj


def test_go_lc_hello_is_accepted_and_ignored() -> None:
    assert decode_frame(GO_HELLO) is None
    assert decode_frame('{"operation":""}') is None


def test_upper_case_kind_from_lc_is_lower_cased() -> None:
    text = json.dumps(
        {
            "header": {
                "namespace": "a",
                "resourceKind": "Dataset",
                "resourceName": "d",
                "operation": "status",
            },
            "content": base64.b64encode(b"{}").decode(),
        }
    )
    decoded = decode_frame(text)
    assert decoded is not None and decoded[0].kind == "dataset"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("[]", Reason.INVALID_JSON),
        ('"x"', Reason.INVALID_JSON),
        ('{"namespace":"x"}', Reason.MISSING_HEADER),
        ('{"header": "x"}', Reason.MISSING_HEADER),
        (
            '{"header":{"namespace":"","resourceKind":"","resourceName":"","operation":""},'
            '"content":""}',
            Reason.MISSING_FIELD,
        ),
        (
            '{"header":{"namespace":"a","resourceKind":"k","resourceName":"n",'
            '"operation":"status"}}',
            Reason.MISSING_FIELD,
        ),
        (
            '{"header":{"namespace":"a","resourceKind":"k","resourceName":"n",'
            '"operation":"status"},"content":"YQ"}',
            Reason.INVALID_BASE64,
        ),
    ],
)
def test_malformed_frames(text: str, reason: Reason) -> None:
    with pytest.raises(FrameError) as exc:
        decode_frame(text)
    assert exc.value.reason is reason


def test_payload_must_be_a_json_object_and_errors_quote_no_bytes() -> None:
    header = Header("a", "k", "n", "status")
    for raw in (b"[1]", b"\xffsecret", b'{"pw": "secret"'):
        with pytest.raises(FrameError) as exc:
            decode_payload(raw, header)
        assert exc.value.reason is Reason.PAYLOAD_NOT_JSON
        assert "secret" not in str(exc.value)


def test_has_credential() -> None:
    assert has_credential({"metadata": {"annotations": {"sedna.io/credential": "{}"}}})
    assert not has_credential({"metadata": {"annotations": {"other": "x"}}})
    assert not has_credential({"metadata": {}})
    assert not has_credential({})


def test_payload_is_compact_utf8_json_whatever_the_encoder() -> None:
    obj = {"kind": "Model", "metadata": {"name": "模型", "labels": {"a": "<&>"}}, "n": [1, 2.5]}
    expected = '{"kind":"Model","metadata":{"name":"模型","labels":{"a":"<&>"}},"n":[1,2.5]}'
    assert encode_payload(obj) == expected.encode()
    # orjson refuses integers beyond 64 bits: json encodes them, same shape
    assert encode_payload({"big": 2**70, 1: "x"}) == b'{"big":1180591620717411303424,"1":"x"}'


def test_payload_refuses_what_json_cannot_encode() -> None:
    import datetime

    with pytest.raises(TypeError):
        encode_payload({"at": datetime.datetime(2026, 1, 1)})
    circular: dict[str, object] = {}
    circular["self"] = circular
    with pytest.raises(ValueError, match="circular"):
        encode_payload(circular)
