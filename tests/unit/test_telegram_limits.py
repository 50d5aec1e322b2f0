"""The load simulation's Bot API keeps Telegram's limits as Telegram answers them: a send over
a limit is refused with 429 and the whole seconds to wait (`retry_after`), takes no token, and
goes through once the bucket has refilled (tests/support/telegram_limits.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.telegram_limits import (
    Limit,
    RateLimitedBotApi,
    RateLimiter,
    TelegramLimits,
)

TOKEN = "100200300:limits"


@pytest.fixture
def bot_api() -> Iterator[RateLimitedBotApi]:
    api = RateLimitedBotApi(TOKEN).start()
    yield api
    api.stop()


def test_a_chat_bursts_three_sends_then_waits_a_second_per_send() -> None:
    limiter = RateLimiter(TelegramLimits())
    assert [limiter.take(42, 100.0) for _ in range(3)] == [None, None, None]
    assert limiter.take(42, 100.0) == 1  # empty: a token is a second away
    assert limiter.take(43, 100.0) is None  # another chat has its own bucket
    assert limiter.take(42, 100.5) == 1  # refused sends took nothing: still half a token
    assert limiter.take(42, 101.0) is None
    assert limiter.take(42, 101.0) == 1


def test_thirty_sends_a_second_overall_then_429() -> None:
    limiter = RateLimiter(TelegramLimits())
    assert all(limiter.take(chat, 5.0) is None for chat in range(1, 31))
    assert limiter.take(31, 5.0) == 1
    assert limiter.take(31, 5.1) is None  # three tokens back in a tenth of a second


def test_a_group_gets_twenty_messages_a_minute() -> None:
    limits = TelegramLimits(per_chat=Limit(per_second=100, burst=100))
    limiter = RateLimiter(limits)
    group = -1001234567890
    assert all(limiter.take(group, 0.0) is None for _ in range(20))
    assert limiter.take(group, 0.0) == 3  # 20 a minute: a token every 3 s
    assert limiter.take(group, 3.0) is None
    assert limiter.take(7, 3.0) is None  # a private chat is not a group


def test_over_the_limit_the_bot_api_answers_429_with_retry_after(
    bot_api: RateLimitedBotApi,
) -> None:
    message = {"chat_id": 42, "text": "hello"}
    answers = [bot_api.perform("sendMessage", message) for _ in range(4)]
    assert [status for status, _ in answers] == [200, 200, 200, 429]
    refused = answers[3][1]
    assert refused == {
        "ok": False,
        "error_code": 429,
        "description": "Too Many Requests: retry after 1",
        "parameters": {"retry_after": 1},
    }
    assert len(bot_api.messages) == 3  # the refused one was not delivered
    assert [send.status for send in bot_api.sends] == [200, 200, 200, 429]
    # Chat actions and reactions are not limited, drafts are (counted by default).
    assert bot_api.perform("sendChatAction", {"chat_id": 42, "action": "typing"})[0] == 200
    draft = {"chat_id": 42, "text": "hel", "draft_id": 7}
    assert bot_api.perform("sendMessageDraft", draft)[0] == 429


def test_drafts_can_be_left_free() -> None:
    api = RateLimitedBotApi(TOKEN, TelegramLimits(count_drafts=False))
    draft = {"chat_id": 42, "text": "hel", "draft_id": 7}
    assert [api.perform("sendMessageDraft", draft)[0] for _ in range(5)] == [200] * 5
    assert api.sends == []
