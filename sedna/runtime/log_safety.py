"""Log lines that a hostile peer cannot make long, many or multi-line.

Peers choose node names, object names and request lines. Logged as they come, 2,000
refused handshakes with unique 4 KB `Node-Name`s wrote 8 MB of log, and a 9 KB request
line an ERROR traceback. So: every peer-supplied string goes through `clip` before it
is logged; refusals of unauthenticated peers share one `LogLimiter` key per reason,
not one per name the peer made up; and the libraries that parse requests for us log a
malformed request as one counted line (`OneLineErrors`), never with a traceback.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

PEER_TEXT_LIMIT = 64
"""Characters of a peer-supplied string kept in a log line."""

_ESCAPES = {i: f"\\x{i:02x}" for i in range(32)} | {127: "\\x7f", 10: "\\n", 13: "\\r", 9: "\\t"}


def clip(value: object, limit: int = PEER_TEXT_LIMIT) -> str:
    """`value` as it may appear in a log line: one line, at most `limit` characters
    (plus a note of how many more there were), control characters escaped."""
    text = value if isinstance(value, str) else str(value)
    extra = len(text) - limit
    if extra > 0:
        text = text[:limit]
    text = text.translate(_ESCAPES)
    return f"{text}...(+{extra} chars)" if extra > 0 else text


class OneLineErrors(logging.Filter):
    """Turns a library's error record with a traceback into one short line.

    aiohttp and websockets log a request they cannot parse (a 9 KB request line, a
    connection reset mid-body) at ERROR with its traceback: a peer that sends them
    writes hundreds of bytes of log each. Such records become one line (the message,
    the exception's type and its clipped text), at most `burst` per `window` seconds
    in all, the rest only counted (`count`), with a summary when the window ends.
    """

    def __init__(
        self,
        what: str,
        burst: int = 10,
        window: float = 60.0,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._what = what
        self._burst = burst
        self._window = window
        self._now = now
        self._lock = threading.Lock()
        self._start = -window
        self._logged = 0
        self._suppressed = 0
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        exc = record.exc_info[1] if record.exc_info else None
        with self._lock:
            self.count += 1
            now = self._now()
            summary = ""
            if now - self._start >= self._window:
                if self._suppressed:
                    summary = f" ({self._suppressed} more in the last {self._window:g} s)"
                self._start, self._logged, self._suppressed = now, 0, 0
            if self._logged >= self._burst:
                self._suppressed += 1
                return False
            self._logged += 1
        cause = f": {type(exc).__name__}: {clip(exc, 120)}" if exc is not None else ""
        record.msg = f"{self._what}: {clip(record.getMessage(), 120)}{cause}{summary}"
        record.args = None
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        return True


def quiet_logger(name: str, what: str) -> logging.Logger:
    """A stdlib logger for a library's server errors, with `OneLineErrors` attached once.

    Name it under the library's own logger (``websockets.x``): it then keeps the level
    set for that library (WARNING unless debugging, `configure_logging`).
    """
    log = logging.getLogger(name)
    if not any(isinstance(f, OneLineErrors) for f in log.filters):
        log.addFilter(OneLineErrors(what))
    return log


def one_line_errors(log: logging.Logger) -> OneLineErrors:
    """The `OneLineErrors` of a `quiet_logger` (its `count` says how many it saw)."""
    return next(f for f in log.filters if isinstance(f, OneLineErrors))
