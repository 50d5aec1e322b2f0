"""The local Bot API's `setMessageReaction`, over HTTP, answering as Telegram does; and the
timeline every call is recorded in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from nanobot_lambda.adapters.telegram.client import TelegramBot, TelegramError
from nanobot_lambda.core.reactions import REACTION_EMOJI
from nanobot_lambda.operator.local.bot_api import LocalBotApi

TOKEN = "8181:reaction-token"


@pytest.fixture
def api() -> Iterator[LocalBotApi]:
    server = LocalBotApi(TOKEN).start()
    yield server
    server.stop()


@pytest.fixture
def bot(api: LocalBotApi) -> TelegramBot:
    return TelegramBot(SecretStr(TOKEN), api.base_url, max_attempts=1)


def react(bot: TelegramBot, *emoji: str, **params: Any) -> Any:
    reaction = [{"type": "emoji", "emoji": item} for item in emoji]
    return bot.call(
        "setMessageReaction", **{"chat_id": 42, "message_id": 7, **params}, reaction=reaction
    )


@pytest.mark.parametrize("emoji", REACTION_EMOJI)
def test_every_allowed_emoji_is_accepted_and_recorded(
    api: LocalBotApi, bot: TelegramBot, emoji: str
) -> None:
    assert react(bot, emoji) is True
    ((chat_id, message_id, recorded),) = [(r.chat_id, r.message_id, r.emoji) for r in api.reactions]
    assert (chat_id, message_id, recorded) == (42, 7, (emoji,))


@pytest.mark.parametrize("emoji", ["🦜", "\u2764\ufe0f", "👍👍", "", "thumbs up"])
def test_other_emoji_are_refused_as_telegram_refuses_them(
    api: LocalBotApi, bot: TelegramBot, emoji: str
) -> None:
    with pytest.raises(TelegramError) as raised:
        react(bot, emoji)
    assert (raised.value.status, raised.value.description) == (400, "Bad Request: REACTION_INVALID")
    assert api.reactions == []


def test_chat_and_message_are_required_and_one_reaction_at_most(
    api: LocalBotApi, bot: TelegramBot
) -> None:
    for missing in ("chat_id", "message_id"):
        with pytest.raises(TelegramError, match=f"{missing} is empty"):
            react(bot, "👍", **{missing: None})
    with pytest.raises(TelegramError, match="REACTIONS_TOO_MANY"):
        react(bot, "👍", "🔥")
    assert react(bot) is True  # no reaction: the bot's is removed
    assert [r.emoji for r in api.reactions] == [()]


def test_every_call_is_on_the_timeline_in_order(api: LocalBotApi, bot: TelegramBot) -> None:
    bot.call("sendChatAction", chat_id=42, action="typing")
    react(bot, "👀")
    status, _ = api.perform("sendMessage", {"chat_id": 42, "text": "hi"})  # in-process
    assert status == 200
    assert [method for _, method, _ in api.timeline] == [
        "sendChatAction",
        "setMessageReaction",
        "sendMessage",
    ]
    times = [at for at, _, _ in api.timeline]
    assert times == sorted(times)
    assert [(method, params) for _, method, params in api.timeline] == api.calls
