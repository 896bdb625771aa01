"""The Dataset feature through the real Manager, the real websocket and a test LC.

What a Go LC needs from the GM's Dataset controller: every Dataset arrives as an
`insert` on the LC of its node (with the credential annotation when a secret is
named), a delete and a move reach the right LCs, and the LC's sample-count reports
become the Dataset's status. Bad input gets an Event or a log line and nothing stops.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import GMFactory, LCFactory
from .helpers import (
    SAMPLE,
    SAMPLE_NODE,
    Api,
    LogCapture,
    deliver_sample,
    report_samples,
    sample_dataset,
    wait_until,
)

CREDENTIAL = "sedna.io/credential"


def secret(name: str) -> dict[str, Any]:
    def b64(s: str) -> str:
        return base64.b64encode(s.encode()).decode()

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "annotations": {"s3-endpoint": "minio.example:9000", "s3-usehttps": "0"},
        },
        "type": "Opaque",
        "data": {"ACCESS_KEY_ID": b64("AKID"), "SECRET_ACCESS_KEY": b64("s3cr3t")},
    }


def test_sample_reaches_the_lc_of_its_node_as_insert(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    lc = make_lc(gm, SAMPLE_NODE)
    other = make_lc(gm, "edge1")
    m = deliver_sample(api, lc, sample_dir)
    assert (m.kind, m.namespace, m.name) == ("dataset", api.ns, SAMPLE)
    # content is base64 of the object's JSON, as Go's []byte marshals
    assert json.loads(base64.b64decode(m.content, validate=True)) == m.payload
    assert m.payload["kind"] == "Dataset"
    assert m.payload["apiVersion"] == "sedna.io/v1alpha1"
    spec = {"url": "/code/data/train.txt", "format": "txt", "nodeName": "edge0"}
    assert m.payload["spec"] == spec
    assert CREDENTIAL not in (m.payload["metadata"].get("annotations") or {})

    # a spec edit is sent again as insert (the message layer maps updates, too)
    api.datasets.patch(api.ns, SAMPLE, {"spec": {"url": "/code/data/train2.txt"}})
    m = lc.wait_for("insert", pred=lambda m: m.payload["spec"]["url"].endswith("train2.txt"))
    assert m.kind == "dataset"
    assert other.messages() == []


def test_credential_secret_is_attached_as_annotation(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    api.create(secret("mysecret"))
    gm = make_gm()
    lc = make_lc(gm, SAMPLE_NODE)
    m = deliver_sample(api, lc, sample_dir, credentialName="mysecret")
    cred = json.loads(m.payload["metadata"]["annotations"][CREDENTIAL])
    assert cred == {
        "s3-endpoint": "minio.example:9000",
        "s3-usehttps": "0",
        "ACCESS_KEY_ID": "AKID",
        "SECRET_ACCESS_KEY": "s3cr3t",
    }
    # only the message carries it, never the stored Dataset
    assert CREDENTIAL not in (api.dataset()["metadata"].get("annotations") or {})


def test_missing_credential_secret_is_an_event_and_the_dataset_still_goes(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    lc = make_lc(gm, SAMPLE_NODE)
    m = deliver_sample(api, lc, sample_dir, credentialName="nosuch")
    assert CREDENTIAL not in (m.payload["metadata"].get("annotations") or {})
    msg = api.wait_event("CredentialNotFound", "spec.credentialName")
    assert f"{api.ns}/nosuch" in msg and SAMPLE_NODE in msg

    # once the secret exists, the next change carries it
    api.create(secret("nosuch"))
    api.datasets.patch(api.ns, SAMPLE, {"metadata": {"labels": {"touch": "1"}}})
    lc.wait_for("insert", pred=lambda m: CREDENTIAL in m.payload["metadata"].get("annotations", {}))


def test_delete_reaches_the_lc(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    lc = make_lc(gm, SAMPLE_NODE)
    deliver_sample(api, lc, sample_dir)
    api.datasets.delete(api.ns, SAMPLE)
    m = lc.wait_for("delete")
    assert (m.kind, m.namespace, m.payload["kind"]) == ("dataset", api.ns, "Dataset")


def test_node_change_moves_the_dataset(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    old = make_lc(gm, SAMPLE_NODE)
    new = make_lc(gm, "edge1")
    deliver_sample(api, old, sample_dir)

    api.set_node("edge1")
    old.wait_for("delete")
    m = new.wait_for("insert")
    assert m.payload["spec"]["nodeName"] == "edge1"
    assert [x.operation for x in old.messages()] == ["insert", "delete"]

    # moved to no node: the last node forgets it, the Dataset gets an Event
    api.set_node("")
    new.wait_for("delete")
    api.wait_event("MissingNodeName", "spec.nodeName")


def test_missing_node_name_is_an_event_and_nothing_is_sent(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    lc = make_lc(gm, SAMPLE_NODE)
    api.create(sample_dataset(sample_dir, nodeName=""))
    msg = api.wait_event("MissingNodeName", "spec.nodeName")
    assert "no LC" in msg

    # messages to a node keep their order: once this one arrives, nothing else came first
    api.create({**sample_dataset(sample_dir), "metadata": {"name": "marker"}})
    lc.wait_for("insert", name="marker")
    assert [m.name for m in lc.messages()] == ["marker"]
    api.datasets.delete(api.ns, SAMPLE)  # a delete of a node-less Dataset goes nowhere either


def test_lc_report_updates_status(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path
) -> None:
    gm = make_gm()
    lc = make_lc(gm, SAMPLE_NODE)
    deliver_sample(api, lc, sample_dir)

    lc.report(api.ns, {"numberOfSamples": 42})
    status = wait_until(lambda: api.status().get("numberOfSamples") == 42 and api.status())
    assert set(status) == {"numberOfSamples", "updateTime"}
    assert status["updateTime"].endswith("Z") and "T" in status["updateTime"]

    # an LC-given time is kept (as metav1.Time: UTC, whole seconds)
    lc.report(api.ns, {"numberOfSamples": 43, "updateTime": "2024-05-01T12:00:00.5+02:00"})
    wait_until(lambda: api.status().get("numberOfSamples") == 43)
    assert api.status()["updateTime"] == "2024-05-01T10:00:00Z"

    # our own status writes are not echoed back to the LC: the marker is the next message
    api.create({**sample_dataset(sample_dir), "metadata": {"name": "marker"}})
    lc.wait_for("insert", name="marker")
    assert [(m.operation, m.name) for m in lc.messages()] == [
        ("insert", SAMPLE),
        ("insert", "marker"),
    ]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"numberOfSamples": -1}, "numberOfSamples"),
        ({"numberOfSamples": "12"}, "numberOfSamples"),
        ({"numberOfSamples": 1.5}, "numberOfSamples"),
        ({"numberOfSamples": True}, "numberOfSamples"),
        ({}, "numberOfSamples"),
        ({"numberOfSamples": 3, "updateTime": 5}, "updateTime"),
        ({"numberOfSamples": 3, "updateTime": "yesterday"}, "updateTime"),
    ],
)
def test_malformed_report_is_logged_and_an_event(
    api: Api,
    make_gm: GMFactory,
    make_lc: LCFactory,
    sample_dir: Path,
    logs: LogCapture,
    payload: dict[str, Any],
    field: str,
) -> None:
    gm = make_gm()
    lc = make_lc(gm, SAMPLE_NODE)
    deliver_sample(api, lc, sample_dir)

    lc.report(api.ns, payload)
    logs.wait(f"node {SAMPLE_NODE}", f"Dataset {api.ns}/{SAMPLE}", f"content.{field}")
    msg = api.wait_event("InvalidReport", f"content.{field}")
    assert SAMPLE_NODE in msg
    assert "numberOfSamples" not in api.status()

    # the connection and the feature go on
    report_samples(api, lc, 7)


def test_non_object_report_is_refused_by_the_message_layer(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path, logs: LogCapture
) -> None:
    gm = make_gm()
    lc = make_lc(gm, SAMPLE_NODE)
    deliver_sample(api, lc, sample_dir)
    lc.report(api.ns, [1, 2])
    logs.wait(SAMPLE_NODE, SAMPLE, "not a JSON object")
    report_samples(api, lc, 8)


def test_report_for_unknown_dataset_or_from_another_node_is_logged(
    api: Api, make_gm: GMFactory, make_lc: LCFactory, sample_dir: Path, logs: LogCapture
) -> None:
    # the handler's own checks: the message layer would refuse these reports first
    gm = make_gm(websocket={"authorizeReports": False})
    lc = make_lc(gm, SAMPLE_NODE)
    stranger = make_lc(gm, "edge1")
    deliver_sample(api, lc, sample_dir)

    lc.report(api.ns, {"numberOfSamples": 1}, name="nosuch")
    logs.wait(f"node {SAMPLE_NODE}", f"Dataset {api.ns}/nosuch", "no such dataset")

    stranger.report(api.ns, {"numberOfSamples": 99})
    logs.wait("node edge1", f"Dataset {api.ns}/{SAMPLE}", "on node 'edge0'", "ignored")
    report_samples(api, lc, 5)
    assert api.status()["numberOfSamples"] == 5
