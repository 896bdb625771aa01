"""Pure helpers: Go path and URL rules, names, metrics, backoff, active counts."""

from __future__ import annotations

from typing import Any

import pytest

from sedna.runtime.workers import (
    active_deployment_count,
    active_pod_count,
    backoff_for,
    backoff_for_requeues,
    convert_k8s_valid_name,
    convert_map_to_metrics,
    node_ip,
    s3_secret_envs,
)
from sedna.runtime.workers.paths import go_clean, go_join, go_split
from sedna.runtime.workers.urls import ParsedURL, parse_url


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("/model/", "modelz"),
        ("/incremental_learning/data/", "incremental-learning-dataz"),
        ("sedna-model-hot-update-volume", "sedna-model-hot-update-volume"),
        ("ABC..def", "abc-def"),
        ("///", ""),
        ("a" * 70, "a" * 63),
        ("x" * 62 + "/y", "x" * 62 + "z"),
        ("/données/", "donn-esz"),
    ],
)
def test_convert_k8s_valid_name(name: str, expected: str) -> None:
    assert convert_k8s_valid_name(name) == expected


def test_go_paths() -> None:
    assert go_join("/downloads", "bucket/a//b/../c/") == "/downloads/bucket/a/c"
    assert go_join("/home/data", "") == "/home/data"
    assert go_join("", "") == ""
    assert go_clean("") == "."
    assert go_clean("//a/./b/..") == "/a"
    assert go_clean("../x") == "../x"
    assert go_split("/a/b/c.txt") == ("/a/b/", "c.txt")
    assert go_split("/a/b/") == ("/a/b/", "")
    assert go_split("file") == ("", "file")


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        ("s3://Bucket/a%20b/m.pb?x=1#f", ParsedURL("s3", "Bucket", "/a b/m.pb")),
        ("HTTP://user:pw@host:8080/p", ParsedURL("http", "host:8080", "/p")),
        ("/data/x.txt", ParsedURL("", "", "/data/x.txt")),
        ("data/x.txt", ParsedURL("", "", "data/x.txt")),
        ("s3://bucket", ParsedURL("s3", "bucket", "")),
        ("http://[::1]:80/x", ParsedURL("http", "[::1]:80", "/x")),
        ("1abc/x:y", ParsedURL("", "", "1abc/x:y")),
    ],
)
def test_parse_url_like_go(raw: str, parsed: ParsedURL) -> None:
    assert parse_url(raw) == parsed


@pytest.mark.parametrize(
    "raw", [":x", "1abc:/x", "a:b/c:d", "rel:x", "http://h:p/", "http://h o/", "/x%2", "x\x7f"]
)
def test_parse_url_errors(raw: str) -> None:
    with pytest.raises(ValueError):
        parse_url(raw)


def test_secret_without_keys_gives_empty_vars() -> None:
    secret = {"metadata": {"name": "s", "annotations": {"s3-endpoint": "e", "s3-usehttps": "1"}}}
    assert s3_secret_envs(secret) == [
        {"name": "S3_ENDPOINT_URL", "value": "https://e"},
        {"name": "ACCESS_KEY_ID"},
        {"name": "SECRET_ACCESS_KEY"},
    ]
    secret["stringData"] = {"ACCESS_KEY_ID": "a"}
    assert s3_secret_envs(secret, "env")[1] == {"name": "ACCESS_KEY_ID", "value": "a"}


def test_convert_map_to_metrics_like_go_json() -> None:
    metrics = convert_map_to_metrics(
        {
            "precision": 0.5,
            "recall": 1.0,
            "count": 3,
            "name": "plain string",
            "nested": {"b": [1, 2.5e-7], "a": "<&>"},
            "big": 1e21,
            "flag": True,
            "none": None,
        }
    )
    assert metrics == [
        {"key": "precision", "value": "0.5"},
        {"key": "recall", "value": "1"},
        {"key": "count", "value": "3"},
        {"key": "name", "value": "plain string"},
        {"key": "nested", "value": '{"a":"\\u003c\\u0026\\u003e","b":[1,2.5e-07]}'},
        {"key": "big", "value": "1e+21"},
        {"key": "flag", "value": "true"},
        {"key": "none", "value": "null"},
    ]


class _Queue:
    def __init__(self, n: int) -> None:
        self.n = n

    def num_requeues(self, item: Any) -> int:
        return self.n


def test_backoff() -> None:
    assert [backoff_for_requeues(n) for n in range(8)] == [0, 10, 20, 40, 80, 160, 320, 360]
    assert backoff_for_requeues(10_000) == 360
    assert backoff_for(_Queue(3), "ns/job") == 40


def test_active_counts_and_node_ip() -> None:
    pods = [
        {"status": {"phase": "Running"}},
        {"status": {"phase": "Pending"}},
        {"status": {"phase": "Succeeded"}},
        {"status": {"phase": "Failed"}},
        {"status": {"phase": "Running"}, "metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}},
    ]
    assert active_pod_count(pods) == 2
    progressing = {"status": {"conditions": [{"type": "Available"}, {"type": "Progressing"}]}}
    assert active_deployment_count([progressing, {}, {"status": {"conditions": []}}]) == 1
    assert node_ip({"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}) == (
        "10.0.0.1"
    )
    assert node_ip({}) is None
