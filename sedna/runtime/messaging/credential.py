"""Credentials for the LC, attached to the objects sent to it (Sedna's annotation).

Sedna's `InjectSecretAnnotations` writes into the informer's object and the secret's
annotation map; this never changes its inputs, because the objects it gets may share
nested parts with the informer caches.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from sedna.runtime.messaging.wire import CREDENTIAL_ANNOTATION


def attach_credential(obj: dict[str, Any], secret: Mapping[str, Any]) -> None:
    """Put the secret's annotations and decoded data, as JSON, under `sedna.io/credential`.

    The LC needs them to reach S3. `obj` may be a shallow copy of a cached object: its
    metadata and annotations are replaced by copies, not changed. Whether the result
    may travel unencrypted is the message layer's decision (`allowPlainCredentials`).
    """
    meta = secret.get("metadata") or {}
    data: dict[str, str] = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
    for k, v in (secret.get("data") or {}).items():
        try:
            data[str(k)] = base64.b64decode(str(v), validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            continue
    for k, v in (secret.get("stringData") or {}).items():
        data[str(k)] = str(v)
    new_meta = dict(obj.get("metadata") or {})
    annotations = dict(new_meta.get("annotations") or {})
    annotations[CREDENTIAL_ANNOTATION] = json.dumps(data, sort_keys=True, separators=(",", ":"))
    new_meta["annotations"] = annotations
    obj["metadata"] = new_meta
