"""The simulated LC's multi-edge play: which pods report, under which kind."""

from __future__ import annotations

from sedna.embedded.plays import default_plays
from sedna.embedded.plays.multi_edge import MultiEdgeWorkersPlay, _owner_of


def test_reporting_workers_are_found_by_sednas_name_label() -> None:
    def pod(labels: dict[str, str]) -> dict[str, object]:
        return {"metadata": {"labels": labels}}

    assert _owner_of(pod({"featureextractionservice.sedna.io/name": "fe"})) == (
        "FeatureExtractionService",
        "fe",
    )
    assert _owner_of(pod({"reidjob.sedna.io/name": "r"})) == ("ReidJob", "r")
    assert _owner_of(pod({"videoanalyticsjob.sedna.io/name": "v"})) == ("VideoAnalyticsJob", "v")
    # kinds whose workers send no such report, and pods of no Sedna owner
    assert _owner_of(pod({"objectsearchservice.sedna.io/name": "s"})) is None
    assert _owner_of(pod({"app": "x"})) is None
    assert _owner_of({"metadata": {}}) is None


def test_the_play_is_registered_and_takes_nothing_downstream() -> None:
    plays = [p for p in default_plays() if isinstance(p, MultiEdgeWorkersPlay)]
    assert len(plays) == 1 and plays[0].kinds == ()
