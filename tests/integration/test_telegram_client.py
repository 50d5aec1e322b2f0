"""The Bot API client against the local Bot API over HTTP, with injected Telegram faults."""

from __future__ import annotations

import socket
from collections import deque
from typing import Any

import pytest
import requests
from pydantic import SecretStr

from nanobot_lambda.adapters.telegram.client import (
    TelegramBot,
    TelegramError,
    request_may_have_arrived,
)
from nanobot_lambda.core.outgoing import OutgoingFile
from nanobot_lambda.operator.local.bot_api import ApiError, LocalBotApi
from nanobot_lambda.operator.local.http import ConnectionDropped

TOKEN = "123456:secret-token-value"


class FaultyBotApi(LocalBotApi):
    """The local Bot API, failing the next calls of a method as scripted: with an error, or by
    dropping the connection after performing the call (`drops`)."""

    def __init__(self) -> None:
        super().__init__(TOKEN)
        self.faults: dict[str, deque[ApiError]] = {}
        self.drops: dict[str, int] = {}

    def fail(self, method: str, *errors: ApiError) -> None:
        self.faults.setdefault(method, deque()).extend(errors)

    def handle(self, method: str, params: dict[str, Any]) -> Any:
        queue = self.faults.get(method)
        if queue:
            raise queue.popleft()
        result = super().handle(method, params)
        if self.drops.get(method):
            self.drops[method] -= 1
            raise ConnectionDropped  # performed, but the client never hears of it
        return result


@pytest.fixture
def api() -> Any:
    server = FaultyBotApi().start()
    yield server
    server.stop()


def bot(api: LocalBotApi, sleeps: list[float] | None = None, token: str = TOKEN) -> TelegramBot:
    recorded = sleeps if sleeps is not None else []
    return TelegramBot(SecretStr(token), api.base_url, sleep=recorded.append)


def test_send_text_renders_html(api: FaultyBotApi) -> None:
    ids = bot(api).send_text(42, "**bold** <tag> & more", thread_id=7)
    (message,) = api.messages
    assert ids == [message.message_id]
    assert message.text == "<b>bold</b> &lt;tag&gt; &amp; more"
    assert message.thread_id == 7


def test_429_honours_retry_after(api: FaultyBotApi) -> None:
    api.fail("sendMessage", ApiError(429, "Too Many Requests: retry after 7", retry_after=7))
    sleeps: list[float] = []
    bot(api, sleeps).send_text(42, "hello")
    assert sleeps == [7.0]
    assert [m.plain_text for m in api.messages] == ["hello"]


def test_5xx_is_retried_with_backoff(api: FaultyBotApi) -> None:
    api.fail("sendMessage", ApiError(502, "Bad Gateway"), ApiError(500, "Internal"))
    sleeps: list[float] = []
    bot(api, sleeps).send_text(42, "hello")
    assert sleeps == [0.5, 1.0]
    assert len(api.messages) == 1


def test_a_file_upload_is_retried_whole_after_a_5xx(api: FaultyBotApi) -> None:
    api.fail("sendDocument", ApiError(502, "Bad Gateway"))
    sleeps: list[float] = []
    document = OutgoingFile("notes.md", b"# Notes\n", "document", caption="My notes")
    message_id = bot(api, sleeps).send_file(42, document, thread_id=7)
    (sent,) = api.files_sent
    assert sleeps == [0.5] and sent.message_id == message_id
    assert (sent.method, sent.filename, sent.data) == ("sendDocument", "notes.md", b"# Notes\n")
    assert (sent.chat_id, sent.thread_id, sent.plain_caption) == (42, 7, "My notes")


def test_blocked_by_user_is_a_403_error_without_retry(api: FaultyBotApi) -> None:
    api.fail("sendMessage", ApiError(403, "Forbidden: bot was blocked by the user"))
    sleeps: list[float] = []
    with pytest.raises(TelegramError) as error:
        bot(api, sleeps).send_text(42, "hello")
    assert error.value.status == 403 and error.value.blocked and error.value.refused
    assert sleeps == []


@pytest.mark.parametrize(
    ("fault", "kind", "refused"),
    [
        (ApiError(429, "Too Many Requests: retry after 3", retry_after=3), "rate_limited", False),
        (ApiError(403, "Forbidden: bot was blocked by the user"), "blocked", True),
        (ApiError(400, "Bad Request: TEXTDRAFT_PEER_INVALID"), "refused", True),
        (ApiError(502, "Bad Gateway"), "unavailable", False),
    ],
)
def test_a_failure_says_what_it_means_so_callers_read_no_status(
    api: FaultyBotApi, fault: ApiError, kind: str, refused: bool
) -> None:
    """Entry code asks `rate_limited`, `blocked`, `refused` (issue 29); the adapter answers
    them from Telegram's status, on the last attempt of the call."""
    api.fail("sendMessage", *[fault] * 4)
    with pytest.raises(TelegramError) as error:
        bot(api).send_text(42, "hello")
    assert (error.value.kind, error.value.refused) == (kind, refused)
    assert error.value.rate_limited is (kind == "rate_limited")
    assert error.value.retry_after == (3.0 if kind == "rate_limited" else None)


def test_an_unreachable_bot_api_is_unavailable() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    unreachable = TelegramBot(SecretStr(TOKEN), f"http://127.0.0.1:{port}", sleep=lambda _: None)
    with pytest.raises(TelegramError) as error:
        unreachable.send_text(42, "hello")
    assert (error.value.status, error.value.kind, error.value.refused) == (
        None,
        "unavailable",
        False,
    )


def test_refused_html_is_resent_as_plain_text(api: FaultyBotApi) -> None:
    api.fail(
        "sendMessage", ApiError(400, "Bad Request: can't parse entities: Unsupported start tag")
    )
    bot(api).send_text(42, "**bold** & _it_")
    (message,) = api.messages
    assert message.parse_mode is None
    assert message.text == "bold & it"


def test_token_never_appears_in_errors(api: FaultyBotApi) -> None:
    with pytest.raises(TelegramError) as unauthorized:
        bot(api, token="999:wrong-token").send_text(42, "x")
    assert unauthorized.value.status == 401
    api.fail("sendMessage", ApiError(400, f"Bad Request: weird echo of {TOKEN}"))
    with pytest.raises(TelegramError) as echoed:
        bot(api).send_text(42, "x")
    assert TOKEN not in str(echoed.value)
    assert "<bot-token>" in str(echoed.value)


def test_network_failure_error_hides_the_url() -> None:
    unreachable = TelegramBot(SecretStr(TOKEN), "http://127.0.0.1:9", sleep=lambda _: None)
    with pytest.raises(TelegramError) as error:
        unreachable.send_chat_action(42)
    assert error.value.status is None
    assert TOKEN not in str(error.value) and "127.0.0.1" not in str(error.value)


def test_typing_indicator_runs_during_the_block(api: FaultyBotApi) -> None:
    with bot(api).typing(42, thread_id=5):
        pass
    assert (
        "sendChatAction",
        {"chat_id": 42, "action": "typing", "message_thread_id": 5},
    ) in api.calls


def test_a_send_whose_connection_dropped_after_telegram_took_it_is_sent_again(
    api: FaultyBotApi, caplog: pytest.LogCaptureFixture
) -> None:
    """Telegram performed sendMessage, then the connection dropped before its answer: the
    client cannot tell it from a request that never arrived, and sends it again rather than
    lose it. The user sees it twice (README: the second at-most-twice window); it is logged."""
    api.drops["sendMessage"] = 1
    bot(api).send_text(42, "hello")
    assert [m.plain_text for m in api.messages] == ["hello", "hello"]
    assert "dropped after the request was sent" in caplog.text
    assert TOKEN not in caplog.text


def test_a_connection_that_could_not_be_made_is_tried_again_without_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Nothing reached Telegram (the port refuses): safe to repeat, nothing to warn about."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # closed again: nothing listens there
    sleeps: list[float] = []
    client = TelegramBot(SecretStr(TOKEN), f"http://127.0.0.1:{port}", sleep=sleeps.append)
    with pytest.raises(TelegramError) as raised:
        client.send_text(42, "hello")
    assert raised.value.status is None and len(sleeps) == 3  # four attempts
    assert "dropped" not in caplog.text


def test_what_counts_as_a_request_that_may_have_arrived(api: FaultyBotApi) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        refused = f"http://127.0.0.1:{unused.getsockname()[1]}/x"
    api.drops["sendMessage"] = 1
    dropped = f"{api.base_url}/bot{TOKEN}/sendMessage"
    outcomes = []
    for url in (refused, dropped):
        try:
            requests.post(url, json={"chat_id": 1, "text": "x"}, timeout=5)
        except requests.RequestException as error:
            outcomes.append(request_may_have_arrived(error))
    assert outcomes == [False, True]
