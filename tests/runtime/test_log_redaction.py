"""Credentials never reach the log, even at DEBUG where libraries print every header.

Regression test for: "The LC bearer token is in the DEBUG log".
"""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator

import pytest
from loguru import logger

from sedna.runtime.logging import configure_logging, redact

TOKEN = "Zq8vLr2mXw9TnB4kYp6s"


@pytest.fixture()
def debug_log() -> Iterator[io.StringIO]:
    out = io.StringIO()
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    libraries = ("urllib3", "kubernetes", "websockets", "aiohttp", "asyncio")
    saved_levels = {name: logging.getLogger(name).level for name in libraries}
    configure_logging("DEBUG", stream=out)
    try:
        yield out
    finally:  # the process's logging as it was, for the tests that follow
        logger.remove()
        logger.configure(patcher=lambda record: None)
        logger.add(sys.stderr)
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)
        for name, level in saved_levels.items():
            logging.getLogger(name).setLevel(level)


def test_handshake_headers_and_our_lines_are_redacted(debug_log: io.StringIO) -> None:
    logging.getLogger("websockets.client").debug("> Authorization: Bearer %s", TOKEN)
    logging.getLogger("urllib3").debug("headers {'authorization': 'Bearer %s'}", TOKEN)
    logger.debug("token={}", TOKEN)
    text = debug_log.getvalue()
    assert TOKEN not in text
    assert text.count("<redacted>") == 3


def test_redact_keeps_lines_without_credentials() -> None:
    line = "refused LC connection from ('127.0.0.1', 1) (node 'n'): missing bearer token"
    assert redact(line) == line
    assert (
        redact("embedded: LC token in /tmp/x/lc-token") == "embedded: LC token in /tmp/x/lc-token"
    )
