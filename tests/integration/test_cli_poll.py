"""The getUpdates loop behind `poll`, against the Bot API stand-in over HTTP: what is
acknowledged when, a webhook's 409, stopping, and the method in a webhook's answer."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from pydantic import SecretStr

from nanobot_lambda.adapters.telegram.client import TelegramBot
from nanobot_lambda.operator.local.bot_api import ApiError, LocalBotApi
from nanobot_lambda.operator.local.poll import Deliver, Delivery, TelegramPoller, WebhookIsSet
from nanobot_lambda.operator.ops.deployment import OperatorError
from tests.conftest import telegram_update

TOKEN = "5151:poll-token"


@pytest.fixture
def bot_api() -> Iterator[LocalBotApi]:
    api = LocalBotApi(TOKEN).start()
    yield api
    api.stop()


class Webhook:
    """Answers as the webhook function would, from a script of statuses (then 200)."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.received: list[int] = []

    def __call__(self, update: Mapping[str, Any]) -> dict[str, Any]:
        self.received.append(int(update["update_id"]))
        status = self.statuses.pop(0) if self.statuses else 200
        body = {"ok": True, "status": "queued"} if status < 400 else {"error": "try again later"}
        return {"statusCode": status, "body": json.dumps(body)}


def poller(api: LocalBotApi, webhook: Deliver, deliveries: list[Delivery]) -> TelegramPoller:
    bot = TelegramBot(SecretStr(TOKEN), api.base_url, sleep=lambda _: None)
    return TelegramPoller(
        bot, webhook, long_poll_seconds=0, retry_seconds=0.01, on_delivery=deliveries.append
    )


def update(update_id: int) -> dict[str, Any]:
    return {**telegram_update("text_private"), "update_id": update_id}


def offsets(api: LocalBotApi) -> list[int | None]:
    return [params.get("offset") for method, params in api.calls if method == "getUpdates"]


def test_updates_are_acknowledged_only_after_the_webhook_accepted_them(
    bot_api: LocalBotApi,
) -> None:
    for update_id in (10, 11, 12):
        bot_api.push_update(update(update_id))
    webhook = Webhook(200, 503)  # 11 fails once: the queue was unavailable
    deliveries: list[Delivery] = []
    loop = poller(bot_api, webhook, deliveries)

    assert loop.poll_once() is False
    assert webhook.received == [10, 11]  # 12 waits behind 11
    assert loop.offset == 11
    assert [u["update_id"] for u in bot_api.pending] == [10, 11, 12]  # none confirmed yet

    assert loop.poll_once() is True
    assert webhook.received == [10, 11, 11, 12]
    assert [u["update_id"] for u in bot_api.pending] == [11, 12]  # 10 confirmed by offset 11
    loop.confirm()
    assert bot_api.pending == []
    assert offsets(bot_api) == [None, 11, 13]
    assert "update 11 (message, chat 111111111): try again later; kept with Telegram, retrying" in [
        d.describe() for d in deliveries
    ]
    assert all("text" not in d.describe() for d in deliveries)


def test_a_refused_update_is_reported_and_skipped(bot_api: LocalBotApi) -> None:
    bot_api.push_update({"update_id": 20, "nonsense": True})
    bot_api.push_update(update(21))
    deliveries: list[Delivery] = []
    loop = poller(bot_api, Webhook(400), deliveries)
    assert loop.poll_once() is True
    assert loop.offset == 22
    assert deliveries[0].describe().startswith("update 20 (unknown): refused by the webhook (400")


def test_a_set_webhook_stops_polling_with_the_fix_and_is_left_alone(
    bot_api: LocalBotApi,
) -> None:
    bot_api.webhook.url = "https://example.execute-api.us-east-1.amazonaws.com/webhook"
    loop = poller(bot_api, Webhook(), [])
    with pytest.raises(WebhookIsSet) as raised:
        loop.run(threading.Event())
    assert "nanobot-lambda webhook delete" in str(raised.value)
    assert bot_api.webhook.url  # not deleted behind the operator's back
    assert [method for method, _ in bot_api.calls] == ["getUpdates"]


def test_a_wrong_token_stops_polling(bot_api: LocalBotApi) -> None:
    bot = TelegramBot(SecretStr("5151:wrong"), bot_api.base_url)
    loop = TelegramPoller(bot, Webhook(), long_poll_seconds=0)
    with pytest.raises(OperatorError, match="Telegram refused the bot token"):
        loop.poll_once()


def test_the_stop_event_ends_a_long_poll_loop(bot_api: LocalBotApi) -> None:
    bot = TelegramBot(SecretStr(TOKEN), bot_api.base_url, timeout=(3, 10))
    webhook = Webhook()
    loop = TelegramPoller(bot, webhook, long_poll_seconds=1)
    stop = threading.Event()
    runner = threading.Thread(target=loop.run, args=(stop,))
    runner.start()
    bot_api.push_update(update(30))  # arrives during a long poll
    for _ in range(100):
        if webhook.received:
            break
        stop.wait(0.05)
    stop.set()
    runner.join(timeout=5)
    assert not runner.is_alive()
    assert webhook.received == [30]
    assert bot_api.pending == []  # confirmed on the way out


class AnsweringWebhook:
    """Answers each update with the next scripted (status, Bot API method fields)."""

    def __init__(self, *answers: tuple[int, dict[str, Any]]) -> None:
        self.answers = list(answers)

    def __call__(self, update: Mapping[str, Any]) -> dict[str, Any]:
        status, method = self.answers.pop(0)
        body = {"ok": status < 400, "status": "queued" if status < 400 else "error", **method}
        return {"statusCode": status, "body": json.dumps(body)}


TYPING = {"method": "sendChatAction", "chat_id": 111111111, "action": "typing"}


def reaction(emoji: str) -> dict[str, Any]:
    return {
        "method": "setMessageReaction",
        "chat_id": 111111111,
        "message_id": 10,
        "reaction": [{"type": "emoji", "emoji": emoji}],
    }


def made(api: LocalBotApi) -> list[str]:
    return [method for method, _ in api.calls if method != "getUpdates"]


def test_the_method_in_the_webhooks_answer_is_made_as_telegram_would(
    bot_api: LocalBotApi,
) -> None:
    for update_id in (40, 41):
        bot_api.push_update(update(update_id))
    deliveries: list[Delivery] = []
    webhook = AnsweringWebhook((200, TYPING), (200, reaction("👀")))
    loop = poller(bot_api, webhook, deliveries)
    assert loop.poll_once() is True
    assert made(bot_api) == ["sendChatAction", "setMessageReaction"]
    typing = next(params for method, params in bot_api.calls if method == "sendChatAction")
    assert (typing["chat_id"], typing["action"]) == (111111111, "typing")
    assert [(r.chat_id, r.message_id, r.emoji) for r in bot_api.reactions] == [
        (111111111, 10, ("👀",))
    ]
    assert [d.outcome for d in deliveries] == ["queued", "queued"]


def test_a_failed_sign_of_life_is_tried_once_logged_and_changes_nothing(
    bot_api: LocalBotApi, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = bot_api.handle

    def failing(method: str, params: dict[str, Any]) -> Any:
        if method == "sendChatAction":
            raise ApiError(502, "Bad Gateway")
        return handle(method, params)

    monkeypatch.setattr(bot_api, "handle", failing)
    for update_id in (50, 51):
        bot_api.push_update(update(update_id))
    webhook = AnsweringWebhook((200, TYPING), (200, reaction("🦜")))
    with caplog.at_level(logging.DEBUG, logger="nanobot_lambda.operator.local.poll"):
        loop = poller(bot_api, webhook, [])
        assert loop.poll_once() is True
    assert made(bot_api) == ["sendChatAction", "setMessageReaction"]  # no retry of a 5xx
    assert bot_api.reactions == []  # 🦜: REACTION_INVALID
    assert "sendChatAction failed" in caplog.text and "Bad Gateway" in caplog.text
    assert "setMessageReaction failed" in caplog.text and "REACTION_INVALID" in caplog.text
    assert TOKEN not in caplog.text
    assert loop.offset == 52  # both acknowledged all the same


def test_no_method_is_made_for_an_answer_telegram_would_retry(bot_api: LocalBotApi) -> None:
    bot_api.push_update(update(60))
    loop = poller(bot_api, AnsweringWebhook((503, TYPING), (200, {})), [])
    assert loop.poll_once() is False
    assert made(bot_api) == []
    assert loop.poll_once() is True  # the retry is answered without a method
    assert made(bot_api) == []
