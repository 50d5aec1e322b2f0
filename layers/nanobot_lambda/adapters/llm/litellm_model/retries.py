"""Attempts of one model: failures that may pass (429, 5xx, time-outs, lost connections) are
tried again (`LLM_NUM_RETRIES`), with a doubling pause, within the call's time budget."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Between attempts of one model (LLM_NUM_RETRIES): doubling, as the provider SDKs do.
RETRY_FIRST_PAUSE = 0.5
RETRY_MAX_PAUSE = 8.0
# Statuses worth another attempt: time-outs, conflicts, rate limits, server errors.
_RETRYABLE_STATUSES = {408, 409, 429}


def with_retries(
    attempt: Callable[[float], T],
    *,
    retries: int,
    timeout: float,
    budget: float | None,
    failed: Callable[[Exception], str],
) -> T:
    """`attempt(its timeout)` until it returns, at most `retries` times again after a failure
    another attempt may cure. Each attempt gets its share of `budget` (so the retries end within
    it too), and no pause outlasts it; `failed` says what went wrong, for the log."""
    attempt_timeout = timeout
    deadline = None if budget is None else time.monotonic() + budget
    if budget is not None:  # each attempt gets its share, so retries end within it too
        attempt_timeout = min(timeout, budget / (retries + 1))
    for number in range(retries + 1):
        try:
            return attempt(attempt_timeout)
        except Exception as error:
            pause = min(RETRY_MAX_PAUSE, RETRY_FIRST_PAUSE * 2**number)
            if number == retries or not retryable(error):
                raise
            if deadline is not None and time.monotonic() + pause >= deadline:
                raise
            logger.warning("%s; retrying", failed(error))
            time.sleep(pause)
    raise AssertionError("unreachable: the last attempt returns or raises")


def retryable(error: Exception) -> bool:
    """A failure another attempt may cure: no HTTP status (a connection error, a time-out), or
    one of the transient ones. A refused key, a bad request or a missing model is not."""
    status = getattr(error, "status_code", None)
    return not isinstance(status, int) or status in _RETRYABLE_STATUSES or status >= 500
