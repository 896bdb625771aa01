"""A flood of bad frames from one LC logs a few lines and a summary, not one per frame."""

from __future__ import annotations

from sedna.runtime.messaging.log_limit import LogLimiter


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_burst_then_suppressed_then_summary_per_node_and_reason() -> None:
    clock = Clock()
    limit = LogLimiter(burst=3, window=60.0, now=clock)
    assert [limit.admit("edge-1", "invalid_json") for _ in range(5)] == [
        (True, 0),
        (True, 0),
        (True, 0),
        (False, 0),
        (False, 0),
    ]
    # Other nodes and other reasons have their own budget.
    assert limit.admit("edge-2", "invalid_json") == (True, 0)
    assert limit.admit("edge-1", "oversize") == (True, 0)
    clock.t = 59.9
    assert limit.admit("edge-1", "invalid_json") == (False, 0)
    clock.t = 60.0
    # The next window starts with the count of what the last one left out.
    assert limit.admit("edge-1", "invalid_json") == (True, 3)
    assert limit.admit("edge-1", "invalid_json") == (True, 0)
