"""A watch stream read straight off the urllib3 response.

The official client's ``Watch`` deserializes every event into model classes and
cannot be interrupted from another thread. Here each line is parsed with orjson
into a plain dict, the socket read timeout bounds how long a silent stream can
hang, and ``close()`` may be called from any thread: it shuts the socket down so a
reader blocked in ``recv`` wakes up at once (needed for a prompt informer stop).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import orjson
import urllib3
from loguru import logger

from .errors import ReadTimeout, TransportError
from .metadata import as_partial_event

__all__ = ["WatchStream"]

_READ_SIZE = 64 * 1024


class WatchStream:
    """Iterator of watch events (``{"type": ..., "object": {...}}``).

    ``ERROR`` events are yielded as they come; the caller decides (an informer
    relists on code 410). Iteration ends quietly at a clean end of stream or after
    ``close()``; a read timeout raises ``ReadTimeout`` and a broken connection
    ``TransportError``.
    """

    def __init__(
        self, response: urllib3.BaseHTTPResponse, what: str, *, metadata_only: bool = False
    ) -> None:
        self._resp = response
        self._what = what
        # a metadata-only watch yields PartialObjectMetadata objects even if the
        # server ignored the conversion (see ``metadata``)
        self._metadata_only = metadata_only
        self._closed = False
        self._lock = threading.Lock()
        self._released = False
        self._reading = False
        self.events_read = 0

    @property
    def closed(self) -> bool:
        """True once ``close()`` was called or the stream ended."""
        return self._closed

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._events()

    def _chunks(self) -> Iterator[bytes]:
        resp = self._resp
        if resp.chunked and getattr(resp, "supports_chunked_reads", lambda: False)():
            yield from resp.read_chunked(decode_content=True)
            return
        while True:
            data = resp.read1(_READ_SIZE)
            if not data:
                return
            yield data

    def _events(self) -> Iterator[dict[str, Any]]:
        with self._lock:
            if self._closed or self._reading:
                return
            self._reading = True
        buf = b""
        try:
            for chunk in self._chunks():
                if self._closed:
                    return
                buf += chunk
                if b"\n" not in chunk:
                    continue
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    event = self._parse(line)
                    if event is not None:
                        self.events_read += 1
                        yield event
                        if self._closed:
                            return
            if buf.strip() and not self._closed:
                event = self._parse(buf)
                if event is not None:
                    self.events_read += 1
                    yield event
        except urllib3.exceptions.ReadTimeoutError as exc:
            if self._closed:
                return
            raise ReadTimeout(0, "ReadTimeout", f"watch {self._what}: {exc}") from exc
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
            # ValueError: urllib3 raises it when the socket was shut down under it.
            if self._closed:
                return
            raise TransportError(0, type(exc).__name__, f"watch {self._what}: {exc}") from exc
        finally:
            self._finish()

    def _parse(self, line: bytes) -> dict[str, Any] | None:
        line = line.strip()
        if not line:
            return None
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            # A torn line means the stream is broken; resync from the last good rv.
            raise TransportError(
                0, "BadWatchEvent", f"watch {self._what}: undecodable line: {exc}"
            ) from exc
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            logger.warning(
                "watch {}: ignoring an event without a type: {!r}", self._what, line[:200]
            )
            return None
        return as_partial_event(event) if self._metadata_only else event

    def _finish(self) -> None:
        with self._lock:
            self._closed = True
            if self._released:
                return
            self._released = True
        try:
            self._resp.close()
        finally:
            self._resp.release_conn()

    def close(self) -> None:
        """Stop the stream; safe from any thread, any number of times."""
        with self._lock:
            self._closed = True
            if self._released:
                return
            reading = self._reading
        if not reading:
            self._finish()
            return
        try:
            # Wakes a reader blocked in recv(); only works while the response
            # still owns its connection, hence the fallbacks.
            self._resp.shutdown()
        except (ValueError, RuntimeError, OSError, NotImplementedError):
            pass
        except Exception as exc:  # pragma: no cover - defensive
            logger.debug("watch {}: shutdown failed: {}", self._what, exc)
