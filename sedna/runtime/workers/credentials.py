"""S3 credentials of a mount, from a Kubernetes secret, into env vars.

Sedna puts the access key and secret key into pods as plain env values
(KubeEdge lacked ``secretKeyRef`` support in 2021), which exposes them to
anyone who can read pods. Our default is ``secretKeyRef`` to the same
secret; the endpoint is not secret and stays a plain value. The ``env``
mode reproduces Sedna for edge nodes that cannot resolve secret
references; the manager warns at startup when it is chosen.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Literal

__all__ = [
    "ACCESS_KEY_ID",
    "S3_ENDPOINT_KEY",
    "S3_ENDPOINT_URL_ENV",
    "S3_USE_HTTPS_KEY",
    "SECRET_ACCESS_KEY",
    "CredentialInjection",
    "MissingEndpoint",
    "s3_secret_envs",
]

CredentialInjection = Literal["secretKeyRef", "env"]

S3_ENDPOINT_KEY = "s3-endpoint"
S3_USE_HTTPS_KEY = "s3-usehttps"
S3_ENDPOINT_URL_ENV = "S3_ENDPOINT_URL"
ACCESS_KEY_ID = "ACCESS_KEY_ID"
SECRET_ACCESS_KEY = "SECRET_ACCESS_KEY"


class MissingEndpoint(ValueError):
    """The secret has no ``s3-endpoint`` annotation; the Go GM silently drops all credentials."""


def _decoded(secret: Mapping[str, Any], key: str) -> str | None:
    data = secret.get("data") or {}
    if key in data:
        try:
            return base64.b64decode(str(data[key]), validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            return None
    string_data = secret.get("stringData") or {}
    if key in string_data:
        return str(string_data[key])
    return None


def s3_secret_envs(
    secret: Mapping[str, Any], mode: CredentialInjection = "secretKeyRef"
) -> list[dict[str, Any]]:
    """``S3_ENDPOINT_URL``, ``ACCESS_KEY_ID``, ``SECRET_ACCESS_KEY`` for ``secret``.

    The endpoint gets ``https://`` unless the ``s3-usehttps`` annotation is
    exactly ``"0"``. A key absent from the secret gives an empty variable as
    in Go (public buckets); no ``secretKeyRef`` is made for it, since a
    reference to a missing key would keep the pod from starting.
    """
    meta = secret.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    endpoint = str(annotations.get(S3_ENDPOINT_KEY) or "")
    if not endpoint:
        raise MissingEndpoint(
            f"secret {meta.get('name', '')} has no {S3_ENDPOINT_KEY!r} annotation"
        )
    scheme = "http" if annotations.get(S3_USE_HTTPS_KEY) == "0" else "https"
    envs: list[dict[str, Any]] = [{"name": S3_ENDPOINT_URL_ENV, "value": f"{scheme}://{endpoint}"}]
    for key in (ACCESS_KEY_ID, SECRET_ACCESS_KEY):
        value = _decoded(secret, key)
        if not value:
            envs.append({"name": key})
        elif mode == "env":
            envs.append({"name": key, "value": value})
        else:
            envs.append(
                {
                    "name": key,
                    "valueFrom": {"secretKeyRef": {"name": meta.get("name", ""), "key": key}},
                }
            )
    return envs
