"""A streamed model call closes every HTTP response it opened (adapters/llm/http_responses.py),
over a real httpx client and a local HTTP server.

The hazard it removes (encode/httpcore#990): a response abandoned part-way and caught in a
reference cycle is closed only when the garbage collector frees it; if the collector runs inside
the connection pool while the pool holds its lock, closing takes that lock again and the thread
waits on itself for ever. The tests make the collector run at that point on every request."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
import pytest
from httpcore._sync import connection_pool
from httpcore._sync.connection_pool import PoolByteStream

from nanobot_lambda.adapters.llm.http_responses import responses_closed_at_the_end
from nanobot_lambda.operator.local.http import BackgroundHttpServer


class Lines(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"".join(b"line %d\n" % n for n in range(2000))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundHttpServer]:
    running = BackgroundHttpServer(Lines).start()
    yield running
    running.stop()


@pytest.fixture
def collecting_in_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector runs where the pool holds its lock, as it may at any allocation."""
    made = connection_pool.PoolRequest.__init__

    def collect_then_make(self: Any, request: Any) -> None:
        gc.collect()
        made(self, request)

    monkeypatch.setattr(connection_pool.PoolRequest, "__init__", collect_then_make)


def open_responses() -> int:
    """The HTTP responses httpcore holds open, those the collector has yet to free included."""
    return sum(isinstance(held, PoolByteStream) and not held._closed for held in gc.get_objects())


def abandon_a_stream(client: httpx.Client, url: str) -> None:
    """Read one line of a long response and drop it inside a reference cycle, as litellm's
    stream objects hold a failed stream."""
    response = client.send(client.build_request("GET", url), stream=True)
    lines = response.iter_lines()
    next(lines)
    cycle: list[Any] = [lines]
    cycle.append(cycle)


def finishes(work: Callable[[], object], seconds: float = 10) -> bool:
    """Whether `work` ends in time (a deadlocked thread never does; it is left behind)."""
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive()


def test_a_stream_abandoned_in_the_block_is_closed_and_the_next_request_goes_through(
    server: BackgroundHttpServer, collecting_in_the_pool: None
) -> None:
    client = httpx.Client()

    def abandon_then_ask_again() -> None:
        with responses_closed_at_the_end():
            abandon_a_stream(client, server.url)
        assert client.get(server.url).status_code == 200

    gc.disable()  # the abandoned stream stays garbage until the pool's own collection
    try:
        finished = finishes(abandon_then_ask_again)
    finally:
        gc.enable()
    assert finished  # else its thread holds the pool's lock for ever: the client is left open
    client.close()


def test_only_the_block_s_own_responses_are_closed(server: BackgroundHttpServer) -> None:
    gc.collect()
    before = open_responses()
    client = httpx.Client()
    outside = client.send(client.build_request("GET", server.url), stream=True)
    elsewhere: list[httpx.Response] = []
    with responses_closed_at_the_end():
        client.send(client.build_request("GET", server.url), stream=True)
        other = threading.Thread(
            target=lambda: elsewhere.append(
                client.send(client.build_request("GET", server.url), stream=True)
            )
        )
        other.start()
        other.join()
        assert open_responses() == before + 3
    assert open_responses() == before + 2
    for untouched in (outside, *elsewhere):  # opened before the block, or by another thread
        assert len(untouched.read()) > 10_000
        untouched.close()
    client.close()
