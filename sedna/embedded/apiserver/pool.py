"""The write pool: where patches are applied, large writes worked out and large bodies
decoded, off the server's loop (``writes``, ``handlers``).

Two threads keep a flood of such jobs from taking every core.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# the threads' names start with this (tests check where work ran)
THREAD_PREFIX = "apiserver-patch"
POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix=THREAD_PREFIX)


async def off_loop(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` on the pool."""
    return await asyncio.get_running_loop().run_in_executor(POOL, fn, *args)
