"""Every HTTP response a streamed model call opened is closed when the call ends.

A stream is read from a response that httpcore's connection pool lends. When a stream fails
part-way, litellm leaves some of them open: Anthropic's parser and the OpenAI-compatible one have
no close, and Bedrock's decoder fails with its response still held by the error's traceback.
Such a response is closed only when the garbage collector frees it, and the collector can run
inside the pool while the pool holds its lock, which closing a response takes again: the thread
waits on itself for ever (encode/httpcore#990, not fixed in a release), here until Lambda's
timeout. This hung the test suite once in two runs on a busy machine.

So while a streamed call runs, the responses the pool hands to this thread are noted, and they
are closed when the call ends, where no lock is held. A closed response frees without the lock.
Responses read to their end (every answer not streamed) are closed already; closing is
idempotent.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from httpcore import ConnectionPool

# The responses opened in this thread's current streamed call; None outside one. A new thread
# starts with its own context, so a call notes only its own thread's responses.
_opened: ContextVar[list[Any] | None] = ContextVar("opened_http_responses", default=None)


@contextlib.contextmanager
def responses_closed_at_the_end() -> Iterator[None]:
    """Close every response httpcore's pools open in this thread until the block ends."""
    opened: list[Any] = []
    token = _opened.set(opened)
    try:
        yield
    finally:
        _opened.reset(token)
        for response in opened:
            with contextlib.suppress(Exception):  # a connection already broken is closed enough
                response.close()


def _noting(handle_request: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(handle_request)
    def handle_and_note(pool: ConnectionPool, request: Any) -> Any:
        response = handle_request(pool, request)
        opened = _opened.get()
        if opened is not None:
            opened.append(response)
        return response

    handle_and_note.notes_responses = True  # type: ignore[attr-defined]
    return handle_and_note


if not getattr(ConnectionPool.handle_request, "notes_responses", False):
    ConnectionPool.handle_request = _noting(ConnectionPool.handle_request)  # type: ignore[method-assign]
