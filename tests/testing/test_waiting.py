"""`poll` as docs/testing.md shows it: interval and failure may be left out."""

from __future__ import annotations

import pytest

from sedna.testing import poll


def test_poll_needs_only_a_predicate_and_a_timeout() -> None:
    calls: list[int] = []

    def third_call() -> int:
        calls.append(1)
        return len(calls) if len(calls) >= 3 else 0

    assert poll(third_call, 10.0) == 3


def test_poll_without_a_failure_message_names_the_timeout_and_the_last_value() -> None:
    with pytest.raises(AssertionError, match=r"not true within 0\.05 s \(last value: \[\]\)"):
        poll(lambda: [], 0.05)


def test_poll_keeps_a_given_failure_message() -> None:
    with pytest.raises(AssertionError, match=r"^nothing came$"):
        poll(lambda: None, 0.05, interval=0.01, failure="nothing came")
    with pytest.raises(AssertionError, match=r"^saw 0$"):
        poll(lambda: 0, 0.05, failure=lambda last: f"saw {last}")
