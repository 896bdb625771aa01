"""The feature against a real API server, with the fixtures of sedna.testing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sedna_model_check.check import problem_of
from sedna_model_check.options import ModelCheckOptions

from sedna.runtime import EVENTS, MODELS, KubeClient
from sedna.testing import GMHarness, poll


def model(name: str, fmt: str, url: str) -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Model",
        "metadata": {"name": name},
        "spec": {"format": fmt, "url": url},
    }


def test_problems_name_the_field() -> None:
    options = ModelCheckOptions(formats=["pb"])
    assert problem_of(model("m", "pb", "s3://b/m.pb"), options) is None
    assert problem_of(model("m", "h5", "s3://b/m"), options) == "spec.format: 'h5' is not one of pb"
    assert problem_of(model("m", "pb", "ftp://x/m"), options) == (
        "spec.url: scheme 'ftp' is not one of s3, http, https, file"
    )


def test_each_model_gets_its_verdict_as_an_event(
    sedna_gm: Callable[..., GMHarness], sedna_kube: KubeClient, sedna_namespace: str
) -> None:
    sedna_gm(features={"model_check": {"formats": ["pb"]}})
    models = sedna_kube.resource(MODELS)
    models.create(sedna_namespace, model("good", "pb", "s3://models/good.pb"))
    models.create(sedna_namespace, model("bad", "h5", "s3://models/bad.h5"))

    def verdicts() -> dict[str, tuple[str, str]]:
        items = sedna_kube.resource(EVENTS).list(sedna_namespace)["items"]
        return {e["involvedObject"]["name"]: (e["type"], e["reason"]) for e in items}

    seen = poll(
        lambda: len(verdicts()) == 2 and verdicts(), 10.0, interval=0.05, failure="no verdicts"
    )
    assert seen == {"good": ("Normal", "ModelValid"), "bad": ("Warning", "SyncFailed")}
