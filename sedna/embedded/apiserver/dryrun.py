"""The `dryRun` option of the write verbs, read and checked as kube-apiserver does.

`kubectl --dry-run=server` and client-go's `DryRun: []string{"All"}` send it; a server
that ignored it would really create, change or delete what the user only meant to
try. Its only valid value is `All`; anything else is refused before the write, with
kube's 422 naming `dryRun` on the verb's options kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import APIError, bad_request

DRY_RUN_ALL = "All"
# the options kind each verb decodes its query into (kube's error names it)
OPTIONS_KIND = {
    "create": "CreateOptions",
    "update": "UpdateOptions",
    "patch": "PatchOptions",
    "delete": "DeleteOptions",
    "deletecollection": "DeleteOptions",
}


def _go_strings(values: Iterable[str]) -> str:
    """Go's `%#v` of a []string, as `field.NotSupported` prints the value."""
    quoted = ", ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)
    return "[]string{" + quoted + "}"


def dry_run(verb: str, query: Iterable[str], options: Mapping[str, Any] | None = None) -> bool:
    """True for a dry run; 422 for a value other than `All`.

    `query` holds the request's `dryRun` parameters; a delete may carry them in its
    DeleteOptions body instead (`options`), as kubectl's does.
    """
    values = list(query)
    if options is not None and "dryRun" in options:
        body = options["dryRun"]
        if body is not None and (
            not isinstance(body, list) or not all(isinstance(v, str) for v in body)
        ):
            # kube fails to decode such a body at all; a 400 says so without a 500
            raise bad_request("invalid DeleteOptions body: dryRun must be a list of strings")
        values = list(body or ()) + values
    if any(v != DRY_RUN_ALL for v in values):
        shown = _go_strings(values)
        raise _invalid(verb, f'Unsupported value: {shown}: supported values: "{DRY_RUN_ALL}"')
    return bool(values)


def _invalid(verb: str, detail: str) -> APIError:
    kind = OPTIONS_KIND.get(verb, "CreateOptions")
    return APIError(
        422,
        "Invalid",
        f'{kind}.meta.k8s.io "" is invalid: dryRun: {detail}',
        name="",
        group="meta.k8s.io",
        kind=kind,
        causes=[{"reason": "FieldValueNotSupported", "message": detail, "field": "dryRun"}],
    )
