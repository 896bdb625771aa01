"""One cap on the bytes all LC connections together make the GM buffer.

Per connection the websocket library buffers what the peer sent until a whole message
is parsed and taken: a frame in progress (up to the library's message limit) and the
messages waiting for the reader. Bounding that per connection only bounds the sum by
`maxConnections` times the worst case, gigabytes with the defaults. `FrameBudget` adds
the bytes every connection holds into one counter with a cap
(`websocket.maxBufferedBytes`).

When a chunk pushes the counter over the cap, the connection that holds the most bytes
is refused (its transport aborted at once, so that its buffers go with it, and the
refusal counted): the peer that holds the memory pays for it, not whoever happened to
send the next byte. Pausing every reader instead would let one peer that sends a large
frame and then nothing stop all the others, for as long as it likes.

The budget lives on the event loop's thread and takes no lock.
"""

from __future__ import annotations

from typing import Protocol


class _Gauge(Protocol):
    def set(self, value: float) -> None: ...


class Holder(Protocol):
    """A connection whose buffered bytes the budget counts."""

    def refuse_over_budget(self, held: int, used: int, cap: int) -> None:
        """Drop the connection now (the budget has already stopped counting its bytes)."""


class FrameBudget:
    """Bytes held per connection, their sum, and the cap on that sum (loop thread only)."""

    def __init__(self, cap: int, gauge: _Gauge | None = None) -> None:
        if cap < 1:
            raise ValueError("the frame buffer cap must be at least 1 byte")
        self.cap = cap
        self._gauge = gauge
        self._held: dict[Holder, int] = {}
        self.used = 0
        # the largest sum seen once a chunk was accounted for (for tests and debugging)
        self.peak = 0
        self.refused = 0

    def held(self, holder: Holder) -> int:
        return self._held.get(holder, 0)

    def update(self, holder: Holder, held: int) -> bool:
        """Record that holder now buffers `held` bytes; enforce the cap.

        Returns False if holder itself was refused (it must not go on reading).
        """
        before = self._held.get(holder, 0)
        if held == before:
            return True
        if held > 0:
            self._held[holder] = held
        else:
            self._held.pop(holder, None)
        self.used += held - before
        alive = True
        while self.used > self.cap and self._held:
            victim = max(self._held, key=self._held.__getitem__)
            victim_held = self._held.pop(victim)
            used_then = self.used
            self.used -= victim_held
            self.refused += 1
            victim.refuse_over_budget(victim_held, used_then, self.cap)
            alive = alive and victim is not holder
        self.peak = max(self.peak, self.used)
        self._set_gauge()
        return alive

    def release(self, holder: Holder) -> None:
        """Holder is gone: nothing it held counts any more."""
        held = self._held.pop(holder, 0)
        if held:
            self.used -= held
            self._set_gauge()

    def _set_gauge(self) -> None:
        if self._gauge is not None:
            self._gauge.set(self.used)
