"""loguru for everything: our logs, and the standard `logging` of the client and urllib3.

Text for people by default; one JSON object per line for log collectors, with the
context fields (`FIELDS`) at the top level of each object.
"""

from __future__ import annotations

import inspect
import logging
import re
import sys
import traceback
from types import FrameType
from typing import Any, TextIO

import orjson
from loguru import logger

# Credentials that libraries put in their DEBUG lines (websockets logs every handshake
# header, Authorization included): the value is replaced, whatever logged it.
_SECRETS = re.compile(
    r"(?i)(\b(?:authorization|x-auth-token|token|cookie)\b[\"']?\s*[:=]\s*[\"']?)"
    r"(?:(bearer|basic)\s+)?[^\s\"',;}]+"
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}")


def redact(text: str) -> str:
    """text with bearer tokens and Authorization values replaced by <redacted>."""
    if "earer" not in text and "uthorization" not in text and "oken" not in text:
        return text  # the fast path: most lines mention no credential
    text = _SECRETS.sub(lambda m: f"{m.group(1)}{(m.group(2) or '') and m.group(2) + ' '}"
                        "<redacted>", text)  # fmt: skip
    return _BEARER.sub(r"\1 <redacted>", text)


# The longest message a line carries: a last bound for whatever a peer put into one
# that no `log_safety.clip` caught; the rest is cut off and said so.
MAX_MESSAGE_CHARS = 4096


def _redact_record(record: Any) -> None:
    message = record["message"]
    if len(message) > MAX_MESSAGE_CHARS:
        cut = len(message) - MAX_MESSAGE_CHARS
        message = f"{message[:MAX_MESSAGE_CHARS]}...(+{cut} chars)"
    record["message"] = redact(message)


class InterceptHandler(logging.Handler):
    """Routes standard-library records into loguru, keeping level and origin."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level: str | int = logger.level(record.levelname).name
        except ValueError:
            level = record.levelno
        # Find the caller outside the logging module, so loguru names the real origin.
        frame: FrameType | None = inspect.currentframe()
        depth = 0
        while frame is not None and (depth == 0 or frame.f_code.co_filename == logging.__file__):
            frame = frame.f_back
            depth += 1
        logger.opt(depth=depth, exception=record.exc_info).log(level, record.getMessage())


class _RetryNoise(logging.Filter):
    """Drops urllib3's line per connection retry (3 per request to an API server that is
    down): the caller logs the failure once, with the same cause."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Retrying (")


_RETRY_NOISE = _RetryNoise()


FIELDS = ("kind", "job", "stage", "node", "pod", "controller")
"""Context fields a JSON line carries at its top level (bound with `logger.bind` or
`logger.contextualize`), so a log collector can filter on them: the controller base
binds kind/job around each sync; the stage machine and the message layer add stage,
node and pod where they know them."""


def json_sink(stream: TextIO) -> Any:
    """A loguru sink writing one JSON object per line, `FIELDS` at the top level."""

    def sink(message: Any) -> None:
        record = message.record
        doc: dict[str, Any] = {
            "time": record["time"].isoformat(),
            "level": record["level"].name,
            "message": record["message"],
            "logger": record["name"],
            "function": record["function"],
            "line": record["line"],
        }
        extra = dict(record["extra"])
        for key in FIELDS:
            if key in extra:
                doc[key] = extra.pop(key)
        if extra:
            doc["extra"] = extra
        if record["exception"] is not None:
            doc["exception"] = "".join(traceback.format_exception(*record["exception"]))
        stream.write(orjson.dumps(doc, default=str).decode() + "\n")
        stream.flush()

    return sink


TEXT_FORMAT = (
    "<green>{time:YYYY-MM-DD HH:mm:ss.SSS}</green> <level>{level: <7}</level> "
    "<cyan>{name}</cyan> {message}"
)


def configure_logging(level: str = "INFO", fmt: str = "text", stream: TextIO | None = None) -> None:
    """Take over loguru and the standard `logging` as `sedna-gm` does.

    The runtime never calls this itself: it only logs through loguru, so an embedding
    application that has logging of its own leaves it alone (and adds a loguru sink,
    or routes loguru into `logging`); one that has none calls this once at startup.
    """
    out = stream or sys.stderr
    logger.remove()
    logger.configure(patcher=_redact_record)
    if fmt == "json":
        logger.add(json_sink(out), level=level, backtrace=False, diagnose=False)
    else:
        logger.add(out, level=level, format=TEXT_FORMAT, backtrace=False, diagnose=False)
    logging.basicConfig(handlers=[InterceptHandler()], level=0, force=True)
    # Libraries' chatter only when the operator asked for debugging.
    quiet = logging.DEBUG if level in ("TRACE", "DEBUG") else logging.WARNING
    for name in ("urllib3", "kubernetes", "websockets", "aiohttp", "asyncio"):
        logging.getLogger(name).setLevel(quiet)
    pool_log = logging.getLogger("urllib3.connectionpool")
    if quiet == logging.DEBUG:
        pool_log.removeFilter(_RETRY_NOISE)
    else:
        pool_log.addFilter(_RETRY_NOISE)
