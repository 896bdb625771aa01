"""Run by ``test_disk_full.py`` inside a private mount namespace, with ``argv[1]`` a tiny
tmpfs: fill it, write until the store refuses, free it, and print what was seen (JSON).

Not a test module: it needs a file system of its own, which only a fresh mount
namespace gives without touching the machine's mounts.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import kubernetes

from sedna.embedded.apiserver import APIServer
from sedna.testing import wait_until

CMS = "/api/v1/namespaces/default/configmaps"


def _call(client: Any, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    params = client.param_serialize(
        method, path, header_params={"Content-Type": "application/json"}, body=body
    )
    resp = client.call_api(*params)
    data = resp.read()
    try:
        return int(resp.status), json.loads(data)
    except ValueError:
        return int(resp.status), data.decode()


def _serve(db: Path) -> tuple[APIServer, Any]:
    srv = APIServer(db_path=db)
    srv.store.health.probe_interval = 0.05
    srv.start()
    client = kubernetes.client.ApiClient(
        srv.client_configuration(), header_name="Authorization", header_value=f"Bearer {srv.token}"
    )
    return srv, client


def main(mount: Path) -> dict[str, Any]:
    db = mount / "state.db"
    srv, client = _serve(db)
    filler = mount / "filler"
    with filler.open("wb") as fh:  # leave a little room, then write until it is gone
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    os.truncate(filler, max(0, filler.stat().st_size - 256 * 1024))
    out: dict[str, Any] = {"created": [], "refused": None}
    blob = "x" * (96 * 1024)
    for i in range(64):
        status, body = _call(
            client, "POST", CMS, {"metadata": {"name": f"c{i}"}, "data": {"b": blob}}
        )
        if status == 201:
            out["created"].append(f"c{i}")
            continue
        out["refused"] = {"name": f"c{i}", "status": status, "message": body.get("message")}
        break
    refused = (out["refused"] or {}).get("name", "none")
    out["visible_after_refusal"] = _call(client, "GET", f"{CMS}/{refused}")[0]
    out["readyz_full"] = _call(client, "GET", "/readyz")
    filler.unlink()
    with contextlib.suppress(AssertionError, TimeoutError):
        wait_until(lambda: _call(client, "GET", "/readyz")[0] == 200, timeout=10)
    out["readyz_freed"] = _call(client, "GET", "/readyz")[0]
    out["retry"] = _call(client, "POST", CMS, {"metadata": {"name": refused}, "data": {"b": "y"}})[
        0
    ]
    client.close()
    srv.stop()
    srv, client = _serve(db)
    out["after_restart"] = {
        name: _call(client, "GET", f"{CMS}/{name}")[0] for name in [*out["created"], refused]
    }
    client.close()
    srv.stop()
    return out


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
