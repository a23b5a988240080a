"""Retries with exponential backoff and jitter for transient store errors (timeouts, 429, 5xx)."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
log = logging.getLogger("vdbguard.connectors")


def with_retries(
    call: Callable[[], T],
    *,
    is_transient: Callable[[BaseException], bool],
    what: str,
    attempts: int = 5,
    base_delay: float = 0.2,
    max_delay: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``call``; on a transient error wait ``base_delay * 2**n`` (jittered, capped) and try again.

    ``what`` names the operation in logs; it must not contain credentials. Non-transient errors and
    the last transient one propagate unchanged, so connectors can map them to clear messages.
    """
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except Exception as exc:
            if attempt == attempts or not is_transient(exc):
                raise
            delay = min(max_delay, base_delay * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
            log.warning("%s failed (%s), retry %d/%d in %.2fs", what, type(exc).__name__, attempt, attempts - 1, delay)
            sleep(delay)
    raise AssertionError("unreachable")


def http_status_is_transient(status: int | None) -> bool:
    return status is not None and (status == 429 or status >= 500)
