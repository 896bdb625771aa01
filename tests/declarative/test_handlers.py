"""The declarative layer against a real API server: when each handler runs, what it is
given, status from its return, related objects through an index, and what a broken
handler or index function gets (a Warning Event naming it, a retry with backoff)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from sedna.runtime import (
    DATASETS,
    EVENTS,
    MODELS,
    ApiAccess,
    DeclarativeFeature,
    FakeClock,
    HandlerContext,
    KubeClient,
    UpstreamMessage,
)
from sedna.testing import GMHarness, LCBase, poll

Obj = Mapping[str, Any]


def model(name: str, fmt: str = "pb") -> dict[str, Any]:
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Model",
        "metadata": {"name": name},
        "spec": {"url": f"/models/{name}", "format": fmt},
    }


def dataset(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    return {
        "apiVersion": "sedna.io/v1alpha1",
        "kind": "Dataset",
        "metadata": meta,
        "spec": {"url": "/data/train.txt", "format": "txt", "nodeName": "edge0"},
    }


def plugin(feature: DeclarativeFeature) -> object:
    """A plugin object as an entry point's module would be: its `sedna_features` hook."""
    return SimpleNamespace(sedna_features=feature.hook())


def run(gm: Callable[..., GMHarness], feature: DeclarativeFeature, **kw: Any) -> GMHarness:
    return gm(features={feature.name: {}}, plugins={feature.name: plugin(feature)}, **kw)


def warnings(kube: KubeClient, namespace: str) -> list[tuple[str, str, str]]:
    return [
        (e["involvedObject"]["name"], e["reason"], e["message"])
        for e in kube.resource(EVENTS).list(namespace)["items"]
        if e["type"] == "Warning"
    ]


class Calls:
    """What the handlers were called with, from the controller's worker threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[str, ...]] = []

    def add(self, *call: str) -> None:
        with self.lock:
            self.seen.append(call)

    def __call__(self) -> list[tuple[str, ...]]:
        with self.lock:
            return list(self.seen)


def test_add_change_and_delete_handlers_get_the_objects_they_are_about(
    sedna_gm: Callable[..., GMHarness], sedna_kube: KubeClient, sedna_namespace: str
) -> None:
    calls = Calls()
    feature = DeclarativeFeature("decl_events")

    @feature.on_add(MODELS)
    def added(obj: Obj, ctx: HandlerContext) -> Mapping[str, Any]:
        calls.add("add", obj["spec"]["format"])
        return {"metrics": [{"key": "seen", "value": "yes"}]}

    @feature.on_change(MODELS)
    def changed(old: Obj, new: Obj, ctx: HandlerContext) -> None:
        calls.add("change", old["spec"]["format"], new["spec"]["format"])

    @feature.on_delete(MODELS)
    def deleted(obj: Obj, ctx: HandlerContext) -> None:
        calls.add("delete", obj["spec"]["format"], ctx.key)

    run(sedna_gm, feature)
    models = sedna_kube.resource(MODELS)
    models.create(sedna_namespace, model("m", "pb"))
    poll(
        lambda: (models.get(sedna_namespace, "m").get("status") or {}).get("metrics"),
        10.0,
        interval=0.05,
        failure="the add handler's status was never written",
    )
    current = models.get(sedna_namespace, "m")
    current["spec"]["format"] = "onnx"
    models.replace(sedna_namespace, "m", current)
    poll(lambda: len(calls()) >= 2, 10.0, interval=0.05, failure=lambda _: f"calls {calls()}")
    models.delete(sedna_namespace, "m")
    poll(lambda: len(calls()) >= 3, 10.0, interval=0.05, failure=lambda _: f"calls {calls()}")
    # the feature's own status write was no change; the delete got the last version
    assert calls() == [
        ("add", "pb"),
        ("change", "pb", "onnx"),
        ("delete", "onnx", f"{sedna_namespace}/m"),
    ]
    assert feature.feature().access == [
        ApiAccess("sedna.io", ["models"], ["get", "list", "watch"]),
        ApiAccess("sedna.io", ["models/status"], ["update"]),
    ]


def test_a_related_change_reruns_reconcile_and_an_unchanged_status_is_not_written(
    sedna_gm: Callable[..., GMHarness], sedna_kube: KubeClient, sedna_namespace: str
) -> None:
    runs = Calls()
    feature = DeclarativeFeature("decl_related")

    @feature.index(DATASETS, of=MODELS)
    def model_of(ds: Obj) -> Iterable[str]:
        return [ds["metadata"]["labels"]["model"]]  # a Dataset without the label raises

    @feature.reconcile(MODELS)
    def count(obj: Obj, ctx: HandlerContext) -> Mapping[str, Any]:
        names = sorted(d["metadata"]["name"] for d in ctx.related(model_of, obj))
        runs.add(obj["metadata"]["name"], *names)
        return {"metrics": [{"key": "datasets", "value": ",".join(names) or "-"}]}

    run(sedna_gm, feature)
    models, datasets = sedna_kube.resource(MODELS), sedna_kube.resource(DATASETS)
    models.create(sedna_namespace, model("m"))

    def value() -> str | None:
        metrics = (models.get(sedna_namespace, "m").get("status") or {}).get("metrics") or []
        return next((m["value"] for m in metrics if m["key"] == "datasets"), None)

    def expect(want: str) -> None:
        poll(lambda: value() == want, 10.0, interval=0.05, failure=lambda _: f"saw {value()}")

    expect("-")
    datasets.create(sedna_namespace, dataset("d1", {"model": "m"}))
    datasets.create(sedna_namespace, dataset("broken"))  # its index function raises
    datasets.create(sedna_namespace, dataset("d2", {"model": "m"}))
    expect("d1,d2")
    poll(
        lambda: (
            ("broken", "IndexError", "index decl_related:model_of raised KeyError: 'labels'")
            in warnings(sedna_kube, sedna_namespace)
        ),
        10.0,
        interval=0.05,
        failure=lambda _: f"warnings {warnings(sedna_kube, sedna_namespace)}",
    )
    d1 = datasets.get(sedna_namespace, "d1")
    d1["metadata"]["labels"] = {"model": "other"}
    datasets.replace(sedna_namespace, "d1", d1)  # the old name's Model is re-run too
    expect("d2")
    version = models.get(sedna_namespace, "m")["metadata"]["resourceVersion"]
    before = len(runs())
    d2 = datasets.get(sedna_namespace, "d2")
    d2["spec"]["format"] = "csv"
    datasets.replace(sedna_namespace, "d2", d2)  # related, but the count stays the same
    poll(lambda: len(runs()) > before, 10.0, interval=0.05, failure="reconcile not re-run")
    assert models.get(sedna_namespace, "m")["metadata"]["resourceVersion"] == version


def test_a_handler_that_raises_gets_an_event_naming_it_and_is_retried_with_backoff(
    sedna_gm: Callable[..., GMHarness], sedna_kube: KubeClient, sedna_namespace: str
) -> None:
    clock = FakeClock()
    failures = [RuntimeError("the registry is down")]
    feature = DeclarativeFeature("decl_retry")

    @feature.on_add(MODELS)
    def register(obj: Obj, ctx: HandlerContext) -> Mapping[str, Any]:
        if failures:
            raise failures.pop()
        return {"metrics": [{"key": "registered", "value": "yes"}]}

    run(sedna_gm, feature, clock=clock)
    models = sedna_kube.resource(MODELS)
    models.create(sedna_namespace, model("m"))
    message = (
        "sync failed: HandlerError: handler register raised RuntimeError: the registry is"
        " down; retrying"
    )
    poll(
        lambda: ("m", "SyncError", message) in warnings(sedna_kube, sedna_namespace),
        10.0,
        interval=0.05,
        failure=lambda _: f"warnings {warnings(sedna_kube, sedna_namespace)}",
    )
    assert not models.get(sedna_namespace, "m").get("status")

    def after_backoff() -> Any:
        # Sedna's backoff starts at 10 s; stepping on each look also covers a retry
        # scheduled just after the Event was seen
        clock.step(11.0)
        return (models.get(sedna_namespace, "m").get("status") or {}).get("metrics")

    poll(after_backoff, 10.0, interval=0.05, failure="the handler was not retried")


def test_a_handler_returning_what_cannot_be_a_status_gets_an_event_and_writes_nothing(
    sedna_gm: Callable[..., GMHarness], sedna_kube: KubeClient, sedna_namespace: str
) -> None:
    feature = DeclarativeFeature("decl_bad_status")

    @feature.on_add(MODELS)
    def as_list(obj: Obj, ctx: HandlerContext) -> Any:
        return ["not", "a", "status"]

    @feature.on_add(MODELS)
    def undeclared(obj: Obj, ctx: HandlerContext) -> None:
        return {"metrics": []}  # type: ignore[return-value]  # what an untyped handler does

    run(sedna_gm, feature)
    sedna_kube.resource(MODELS).create(sedna_namespace, model("m"))
    message = (
        "sync failed: HandlerError: handler as_list returned list, not a mapping of status"
        " fields or None; retrying"
    )
    poll(
        lambda: ("m", "SyncError", message) in warnings(sedna_kube, sedna_namespace),
        10.0,
        interval=0.05,
        failure=lambda _: f"warnings {warnings(sedna_kube, sedna_namespace)}",
    )
    assert not sedna_kube.resource(MODELS).get(sedna_namespace, "m").get("status")
    # a handler annotated -> None asks for no status access, and may not write one
    assert feature.handlers[1].writes_status is False


def test_a_delete_handler_that_raises_gets_its_event_on_the_object_that_is_gone(
    sedna_gm: Callable[..., GMHarness], sedna_kube: KubeClient, sedna_namespace: str
) -> None:
    feature = DeclarativeFeature("decl_delete")

    @feature.on_delete(MODELS)
    def release(obj: Obj, ctx: HandlerContext) -> None:
        raise LookupError(f"no lease for {obj['metadata']['name']}")

    run(sedna_gm, feature)
    models = sedna_kube.resource(MODELS)
    models.create(sedna_namespace, model("m"))
    models.delete(sedna_namespace, "m")
    message = (
        "sync failed: HandlerError: handler release raised LookupError: no lease for m; retrying"
    )
    poll(
        lambda: ("m", "SyncError", message) in warnings(sedna_kube, sedna_namespace),
        10.0,
        interval=0.05,
        failure=lambda _: f"warnings {warnings(sedna_kube, sedna_namespace)}",
    )


def test_a_declaration_that_cannot_run_is_refused_when_the_plugin_loads() -> None:
    empty = DeclarativeFeature("decl_empty")
    with pytest.raises(ValueError, match="decl_empty: no handlers declared"):
        empty.feature()
    dangling = DeclarativeFeature("decl_dangling")

    @dangling.index(DATASETS, of=MODELS)
    def model_of(ds: Obj) -> Iterable[str]:
        return ()

    @dangling.reconcile(DATASETS)
    def noop(obj: Obj, ctx: HandlerContext) -> None:
        return None

    with pytest.raises(ValueError, match="relates to Model, which has no handlers"):
        dangling.feature()


def test_a_reconcile_handler_is_told_what_changed_since_the_handlers_last_saw_the_object(
    sedna_gm: Callable[..., GMHarness], sedna_kube: KubeClient, sedna_namespace: str
) -> None:
    calls = Calls()
    feature = DeclarativeFeature("decl_change")

    @feature.reconcile(MODELS)
    def relay(obj: Obj, ctx: HandlerContext) -> None:
        old = "-" if ctx.old is None else ctx.old["spec"]["format"]
        calls.add(str(ctx.change), old, obj["spec"]["format"])

    run(sedna_gm, feature)
    models = sedna_kube.resource(MODELS)
    created = models.create(sedna_namespace, model("m", "pb"))
    poll(lambda: calls(), 10.0, interval=0.05, failure="no sync of the new Model")
    created["status"] = {"metrics": [{"key": "k", "value": "v"}]}
    models.replace_status(sedna_namespace, "m", created)
    poll(lambda: len(calls()) >= 2, 10.0, interval=0.05, failure=lambda _: f"calls {calls()}")
    current = models.get(sedna_namespace, "m")
    current["spec"]["format"] = "onnx"
    models.replace(sedna_namespace, "m", current)
    poll(lambda: len(calls()) >= 3, 10.0, interval=0.05, failure=lambda _: f"calls {calls()}")
    assert calls() == [("added", "-", "pb"), ("status", "pb", "pb"), ("changed", "pb", "onnx")]


def test_lc_reports_of_a_kind_reach_its_report_handler(
    sedna_gm: Callable[..., GMHarness],
    sedna_lc: Callable[[GMHarness, str], LCBase],
    sedna_kube: KubeClient,
    sedna_namespace: str,
) -> None:
    # what the handler calls by hand is declared by hand (the declaration covers watching)
    by_hand = [
        ApiAccess("sedna.io", ["models"], ["get"]),
        ApiAccess("sedna.io", ["models/status"], ["update"]),
    ]
    feature = DeclarativeFeature("decl_report", access=by_hand)

    @feature.on_report(MODELS)
    def record(msg: UpstreamMessage, ctx: HandlerContext) -> None:
        current = ctx.runtime.kube.resource(MODELS).get(msg.namespace, msg.name)
        current["status"] = {"metrics": [{"key": "from", "value": msg.node_name}]}
        ctx.runtime.kube.resource(MODELS).replace_status(msg.namespace, msg.name, current)

    assert feature.feature().kinds == ["Model"]
    gm = run(sedna_gm, feature, websocket={"authorizeReports": False})
    sedna_kube.resource(MODELS).create(sedna_namespace, model("m"))
    lc = sedna_lc(gm, "edge-1")
    lc.send_status(sedna_namespace, "Model", "m", {"anything": 1})
    poll(
        lambda: sedna_kube.resource(MODELS).get(sedna_namespace, "m").get("status") or {},
        10.0,
        interval=0.05,
        failure="the report never reached the report handler",
    )
    status = sedna_kube.resource(MODELS).get(sedna_namespace, "m")["status"]
    assert status == {"metrics": [{"key": "from", "value": "edge-1"}]}
