"""A node that floods the GM with reports it should not send costs the log a few lines.

Regression test for: an authenticated node's reports for ReidJobs that do not exist
each wrote a warning (with names of 600 KB, 12 MB for 40 reports). Names are now
length-checked by the message layer; here the count of lines is bounded too.
"""

from __future__ import annotations

from typing import Any

from sedna.testing import LogCapture

from .helpers import Api, reid_job


def test_a_flood_of_ignored_reports_logs_a_bounded_number_of_lines(
    make_gm: Any, make_lc: Any, api: Api, logs: LogCapture
) -> None:
    gm = make_gm(features=["reid"])
    api.create(reid_job())
    api.wait_pods("reid-demo", 1, "reid")
    lc = make_lc(gm, "edge0")
    for i in range(60):
        lc.report(api.ns, "reidjob", f"nope-{i}-" + "x" * 200, {"phase": "inference"})
    # reports of a kind are handled in order: once this one is, the flood was too
    lc.report(api.ns, "reidjob", "reid-demo", {"phase": 1})
    logs.wait("reid-demo", "invalid report", "content.phase")
    ignored = [line for line in logs.lines if "no such object, report ignored" in line]
    assert 1 <= len(ignored) <= 10, len(ignored)
    assert all(len(line) < 600 for line in ignored)
