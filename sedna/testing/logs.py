"""Capturing loguru output so a test can look for a log line."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from loguru import logger

from sedna.testing.waiting import wait_until


@dataclass
class LogCapture:
    lines: list[str] = field(default_factory=list)

    def contains(self, *parts: str) -> bool:
        return any(all(p in line for p in parts) for line in list(self.lines))

    def wait(self, *parts: str) -> None:
        wait_until(lambda: self.contains(*parts), 5.0, f"a log line with {parts}")


def capture_logs() -> Iterator[LogCapture]:
    cap = LogCapture()
    sink = logger.add(lambda m: cap.lines.append(str(m)), level="DEBUG")
    try:
        yield cap
    finally:
        logger.remove(sink)
