"""examples/model_refs: a plugin on the declarative layer keeps each Model's count of the
IncrementalLearningJobs that use it, through create, change and delete, on a real API
server; and it stays as short as the docs say."""

from __future__ import annotations

import copy
import importlib
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from sedna.rbac import grants, ordered_verbs
from sedna.runtime import (
    EVENTS,
    INCREMENTAL_LEARNING_JOBS,
    MODELS,
    ApiAccess,
    GMConfig,
    KubeClient,
    ResourceClient,
)
from sedna.testing import GMHarness, poll

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "model_refs"
FEATURE_MODULE = EXAMPLE / "sedna_model_refs" / "__init__.py"
KOPF_LINES = 38


@pytest.fixture(scope="module")
def model_refs() -> Iterator[ModuleType]:
    """The example's plugin module, as its installed entry point would load it."""
    sys.path.insert(0, str(EXAMPLE))
    try:
        yield importlib.import_module("sedna_model_refs")
    finally:
        sys.path.remove(str(EXAMPLE))


def feature_lines(path: Path) -> int:
    """Non-blank, non-comment lines: how the docs count a feature's code."""
    lines = path.read_text().splitlines()
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def model(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Model",
        "metadata": {"name": name},
        "spec": {"url": f"/models/{name}.pb", "format": "pb"},
    }


def job(sample_dir: Path, name: str, initial: str, deploy: str) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load(
        (sample_dir / "incrementallearningjob_v1alpha1.yaml").read_text()
    )
    obj = copy.deepcopy(obj)
    obj["metadata"] = {"name": name}
    obj["spec"]["initialModel"] = {"name": initial}
    obj["spec"]["deploySpec"]["model"] = {"name": deploy}
    return obj


def counts(models: ResourceClient, namespace: str, names: list[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in names:
        metrics = (models.get(namespace, name).get("status") or {}).get("metrics") or []
        out[name] = next((m["value"] for m in metrics if m["key"] == "referencingJobs"), None)
    return out


def test_the_feature_is_shorter_than_kopfs_and_the_docs_say_by_how_much() -> None:
    lines = feature_lines(FEATURE_MODULE)
    assert lines <= KOPF_LINES
    page = (ROOT / "docs" / "concepts" / "declarative.md").read_text()
    assert re.search(rf"\b{lines} lines\b", page), f"the page should say {lines} lines"
    assert f"{KOPF_LINES} in kopf" in page


def test_its_rbac_comes_from_what_it_declares(model_refs: ModuleType) -> None:
    feature = model_refs.feature.feature()
    assert feature.kinds == ["Model"]
    assert feature.access == [
        ApiAccess("sedna.io", ["models"], ["get", "list", "watch"]),
        ApiAccess("sedna.io", ["incrementallearningjobs"], ["list", "watch"]),
        ApiAccess("sedna.io", ["models/status"], ["update"]),
    ]
    # what `sedna-gm rbac` grants with it, besides the runtime core's own access
    mine = {
        (g.group, g.resource, tuple(ordered_verbs(g.verbs)))
        for g in grants(GMConfig(namespace="ml"), [feature])
        if g.group == "sedna.io"
    }
    assert mine == {
        ("sedna.io", "models", ("get", "list", "watch")),
        ("sedna.io", "incrementallearningjobs", ("list", "watch")),
        ("sedna.io", "models/status", ("update",)),
    }


def test_each_model_counts_the_jobs_that_use_it(
    model_refs: ModuleType,
    sedna_gm: Callable[..., GMHarness],
    sedna_kube: KubeClient,
    sedna_namespace: str,
    sample_dir: Path,
) -> None:
    ns = sedna_namespace
    models, jobs = sedna_kube.resource(MODELS), sedna_kube.resource(INCREMENTAL_LEARNING_JOBS)
    models.create(ns, model("a"))
    theirs = models.create(ns, model("b"))
    theirs["status"] = {"metrics": [{"key": "accuracy", "value": "0.9"}]}
    models.replace_status(ns, "b", theirs)  # another writer's metric, to be kept
    sedna_gm(features={"model_refs": {}}, plugins={"model_refs": model_refs})

    def expect(want: dict[str, str | None]) -> None:
        poll(
            lambda: counts(models, ns, list(want)) == want,
            10.0,
            interval=0.05,
            failure=lambda _: f"counts {counts(models, ns, list(want))}, want {want}",
        )

    expect({"a": "0", "b": "0"})  # create of a Model
    jobs.create(ns, job(sample_dir, "j1", "a", "a"))  # one job naming "a" twice
    jobs.create(ns, job(sample_dir, "j2", "a", "b"))
    expect({"a": "2", "b": "1"})  # create of jobs

    j2 = jobs.get(ns, "j2")
    j2["spec"]["initialModel"] = {"name": "b"}
    jobs.replace(ns, "j2", j2)
    expect({"a": "1", "b": "1"})  # change of a job's model reference: old and new

    jobs.delete(ns, "j1")
    expect({"a": "0", "b": "1"})  # delete of a job
    status = models.get(ns, "b")["status"]
    assert {"key": "accuracy", "value": "0.9"} in status["metrics"]
    assert not models.get(ns, "b")["metadata"].get("annotations")  # nothing of ours

    models.delete(ns, "a")
    models.create(ns, model("a"))  # delete and create of a Model
    expect({"a": "0"})


def test_a_job_naming_a_missing_model_is_no_error(
    model_refs: ModuleType,
    sedna_gm: Callable[..., GMHarness],
    sedna_kube: KubeClient,
    sedna_namespace: str,
    sample_dir: Path,
) -> None:
    ns = sedna_namespace
    models, jobs = sedna_kube.resource(MODELS), sedna_kube.resource(INCREMENTAL_LEARNING_JOBS)
    gm = sedna_gm(features={"model_refs": {}}, plugins={"model_refs": model_refs})
    jobs.create(ns, job(sample_dir, "j", "later", "later"))
    models.create(ns, model("present"))
    poll(
        lambda: counts(models, ns, ["present"]) == {"present": "0"},
        10.0,
        interval=0.05,
        failure="the Model created after the job was never counted",
    )
    models.create(ns, model("later"))  # the missing Model appears: counted then
    poll(
        lambda: counts(models, ns, ["later"]) == {"later": "1"},
        10.0,
        interval=0.05,
        failure="the Model the job named before it existed was never counted",
    )
    assert gm.manager is not None
    gm.manager.container.events().flush(2.0)
    warnings = [e for e in sedna_kube.resource(EVENTS).list(ns)["items"] if e["type"] == "Warning"]
    assert warnings == []
