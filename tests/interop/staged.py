"""A staged job (IL, LL) on one real LC: its conditions, its pods and the worker reports
a real worker sends to its LC when a stage ends.

The kubelet is a stand-in (`sedna.testing.Kubelet`): the test moves the pods through
their phases and plays each worker's report to the LC's REST API.
"""

from __future__ import annotations

import json
from typing import Any

from sedna.testing import Kubelet, poll

from .inputs import Objects
from .peers import RealLC

# The real LC polls its datasets every 60 s and ticks each job every 10 s.
STAGE_TIMEOUT = 60.0


def write_index(lc: RealLC, url: str, count: int, start: int = 0, header: str = "") -> None:
    """A dataset index file of `count` sample lines, appended after `start` (a CSV's
    `header` line first when the file is new)."""
    path = lc.path(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        if header and not start:
            f.write(header + "\n")
        for i in range(start, start + count):
            f.write(f"images/{i:05d}.jpg,labels/{i:05d}.txt\n")


def in_order(states: list[str], wanted: list[str]) -> bool:
    """`wanted` is a subsequence of `states` (pod phases may add states between)."""
    it = iter(states)
    return all(w in it for w in wanted)


class StagedWorld:
    """One staged job on one real LC."""

    def __init__(self, objects: Objects, kubelet: Kubelet, lc: RealLC, kind: str, job: str) -> None:
        self.objects = objects
        self.kubelet = kubelet
        self.lc = lc
        self.kind = kind
        self.job = job

    def states(self) -> list[str]:
        return self.objects.states(self.kind, self.job)

    def wait_state(self, state: str, count: int = 1, timeout: float = STAGE_TIMEOUT) -> None:
        poll(
            lambda: self.states().count(state) >= count,
            timeout,
            interval=0.05,
            failure=lambda _: (
                f"{self.job} did not reach {state} x{count}: it is at {self.states()}; "
                f"the LC last got it at {self.lc_view()} (LC log:\n{self.lc.tail()})"
            ),
        )

    def lc_view(self) -> list[str]:
        """The job's conditions in the last copy the LC received (from its log)."""
        mark = f'"kind":"{self.kind}","metadata":{{"name":"{self.job}"'
        for line in reversed(self.lc.logs().splitlines()):
            if "client received message content" in line and mark in line:
                body = line.split("client received message content: ", 1)[1]
                body = body.rsplit(" from global manager", 1)[0]
                try:
                    conds = (json.loads(body).get("status") or {}).get("conditions") or []
                except ValueError:
                    return ["(unreadable)"]
                return [f"{c.get('stage')}/{c.get('type')}" for c in conds]
        return []

    def pod(self, worker_type: str, index: int) -> dict[str, Any]:
        pods = self.objects.wait_pods(self.kind, self.job, worker_type, index + 1, STAGE_TIMEOUT)
        return pods[index]

    def stage_data(self, stage: str, state: str, round_: int) -> dict[str, Any]:
        """The data of the `round_`-th `<stage>/<state>` condition."""
        conds = self.objects.status(self.kind, self.job).get("conditions") or []
        found = [
            c for c in conds if str(c.get("stage", "")).lower() == stage and c.get("type") == state
        ]
        return dict(json.loads(found[round_ - 1].get("data") or "{}"))

    def stage_input(self, stage: str, round_: int) -> dict[str, Any]:
        """What the LC gave the `round_`-th `<stage>/Ready` (data URLs, models, output)."""
        return dict(self.stage_data(stage, "Ready", round_).get("input") or {})

    def report(self, pod: str, kind: str, results: list[dict[str, Any]]) -> None:
        """The worker's report of its stage's end to its LC, as Sedna's library sends it."""
        status = self.lc.report(
            pod,
            namespace=self.objects.ns,
            owner_kind=self.kind.lower(),
            owner_name=self.job,
            kind=kind,
            status="completed",
            results=results,
        )
        assert status == 200, self.lc.tail()

    def finish(self, pod: dict[str, Any], kind: str, results: list[dict[str, Any]]) -> None:
        """The worker runs, reports to the LC, then its pod exits Succeeded: in the order
        a node shows, where the LC forwards at once and the kubelet's status sync comes
        later (the report after the exit is `test_report_that_arrives_after_...`)."""
        name = pod["metadata"]["name"]
        done = f"{kind.capitalize()}/Completed"
        before = self.states().count(done)
        self.kubelet.run(name)
        self.report(name, kind, results)
        self.wait_state(done, before + 1)
        self.kubelet.succeed(name)

    def write(self, local: str, content: bytes) -> None:
        """A file a worker writes on the node (under the LC's root)."""
        self.lc.path(local).parent.mkdir(parents=True, exist_ok=True)
        self.lc.path(local).write_bytes(content)
