"""generateName as kube-apiserver applies it: the base cut to 58 characters, then 5
random characters, then the usual name validation."""

from __future__ import annotations

import json
import re

import kubernetes
import pytest

from .helpers import api_error, pod

ApiClient = kubernetes.client.ApiClient
SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"


def _create(api_client: ApiClient, namespace: str, generate_name: str) -> str:
    body = pod("")
    body["metadata"] = {"generateName": generate_name}
    name = kubernetes.client.CoreV1Api(api_client).create_namespaced_pod(namespace, body)
    return str(name.metadata.name)


def test_long_base_is_cut_to_58(api_client: ApiClient, namespace: str) -> None:
    # what a controller makes of a job named with 253 characters: `<job>-train-`
    base = "j" * 253 + "-train-"
    name = _create(api_client, namespace, base[:253])
    assert len(name) == 63
    assert re.fullmatch("j{58}" + SUFFIX, name)


def test_worker_pod_of_a_job_with_a_long_name(api_client: ApiClient, namespace: str) -> None:
    """The generateName a controller builds for a job's worker (`<job>-<type>-`) at the
    longest kube accepts as a prefix (253 characters): the pod name is 63 long."""
    job = "a" + "b" * 244 + "c"
    name = _create(api_client, namespace, f"{job}-train-")
    assert re.fullmatch(re.escape(job[:58]) + SUFFIX, name)


def test_prefix_validated_as_kube_masks_its_trailing_dash(
    api_client: ApiClient, namespace: str
) -> None:
    """kube turns the last two characters of `...-` into one `a` before checking, so a
    254-character prefix ending in a dash passes (and is cut to 58)."""
    name = _create(api_client, namespace, "a" * 253 + "-")
    assert re.fullmatch("a{58}" + SUFFIX, name)


@pytest.mark.parametrize(
    "generate_name",
    ["Bad_Name-", "-x-", "a" * 254, "x/y-", "..-"],
)
def test_invalid_generate_name_is_422_on_the_field(
    api_client: ApiClient, namespace: str, generate_name: str
) -> None:
    exc = api_error(lambda: _create(api_client, namespace, generate_name))
    assert exc.status == 422, exc.body
    body = json.loads(exc.body)
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "metadata.generateName"
