"""The webhook's decisions, with an in-memory queue: what is enqueued, and every status code."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest
from pydantic import SecretStr

from nanobot_lambda.core.allowlist import AllowList
from nanobot_lambda.entry.webhook import MAX_BODY_BYTES, Webhook
from nanobot_lambda.operator.local.stack import http_event
from tests.conftest import telegram_update
from tests.support.fakes import MemoryLedger, MemoryQueue, MemoryStopFlags, RecordingMetrics

SECRET = "webhook-secret-123"


def make_webhook(
    queue: MemoryQueue, allow: str = "111111111", flags: MemoryStopFlags | None = None
) -> Webhook:
    return Webhook(
        SecretStr(SECRET),
        AllowList.parse(allow),
        queue,
        flags or MemoryStopFlags(),
        MemoryLedger(),
        RecordingMetrics(),
    )


def post(webhook: Webhook, body: Any, **options: Any) -> dict[str, Any]:
    raw = body if isinstance(body, str) else json.dumps(body)
    event = http_event(raw, secret=options.pop("secret", SECRET), **options)
    return webhook.handle(event).to_http()


def test_accepted_update_is_enqueued_per_chat_with_update_dedup() -> None:
    queue = MemoryQueue()
    update = telegram_update("text_private")
    response = post(make_webhook(queue), update)
    assert response["statusCode"] == 200
    assert json.loads(response["body"]) == {"ok": True, "status": "queued"}
    ((job, group, dedup_id),) = queue.sent
    assert job.update == update
    assert group == "telegram:111111111"
    assert dedup_id == "update-800000001"


def test_forum_topic_is_grouped_by_topic() -> None:
    queue = MemoryQueue()
    post(make_webhook(queue), telegram_update("forum_topic_message"))
    assert queue.sent[0][1] == "telegram:-1009876543210:600"


@pytest.mark.parametrize("secret", [None, "", "wrong", SECRET + "x", SECRET[:-1]])
def test_missing_or_wrong_secret_is_401_and_nothing_enqueued(secret: str | None) -> None:
    queue = MemoryQueue()
    response = post(make_webhook(queue), telegram_update("text_private"), secret=secret)
    assert response["statusCode"] == 401
    assert queue.sent == []


@pytest.mark.parametrize("body", ["{not json", "", "[1, 2]", '"text"', '{"update_id": "x"}', "{}"])
def test_malformed_body_is_400_and_not_logged(body: str, caplog: pytest.LogCaptureFixture) -> None:
    queue = MemoryQueue()
    with caplog.at_level(logging.DEBUG):
        response = post(make_webhook(queue), body)
    assert response["statusCode"] == 400
    assert queue.sent == []
    if len(body) > 3:
        assert body not in caplog.text


@pytest.mark.parametrize(
    "name", ["edited_message", "channel_post", "callback_query", "my_chat_member_blocked"]
)
def test_kinds_the_bot_does_not_act_on_are_200_ignored(name: str) -> None:
    queue = MemoryQueue()
    response = post(make_webhook(queue), telegram_update(name))
    assert response["statusCode"] == 200
    assert json.loads(response["body"])["status"] == "ignored"
    assert queue.sent == []


def test_stranger_is_200_refused_and_logged_by_id_without_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue = MemoryQueue()
    update = telegram_update("user_without_username")
    with caplog.at_level(logging.INFO):
        response = post(make_webhook(queue), update)
    assert response["statusCode"] == 200
    assert json.loads(response["body"])["status"] == "refused"
    assert queue.sent == []
    assert "333333333" in caplog.text
    assert update["message"]["text"] not in caplog.text


def test_empty_allow_list_refuses_everyone() -> None:
    queue = MemoryQueue()
    response = post(make_webhook(queue, allow=""), telegram_update("text_private"))
    assert json.loads(response["body"])["status"] == "refused"
    assert queue.sent == []


def test_enqueue_failure_is_503_so_telegram_retries() -> None:
    response = post(make_webhook(MemoryQueue(fail=True)), telegram_update("text_private"))
    assert response["statusCode"] == 503


def test_oversized_body_is_413_without_parsing() -> None:
    queue = MemoryQueue()
    response = post(make_webhook(queue), "{" + " " * (MAX_BODY_BYTES * 2))
    assert response["statusCode"] == 413
    assert queue.sent == []


def test_wrong_content_type_is_400() -> None:
    queue = MemoryQueue()
    response = post(make_webhook(queue), telegram_update("text_private"), content_type="text/plain")
    assert response["statusCode"] == 400
    assert queue.sent == []


def test_base64_body_is_decoded() -> None:
    queue = MemoryQueue()
    webhook = make_webhook(queue)
    event = http_event("", secret=SECRET)
    event["body"] = base64.b64encode(json.dumps(telegram_update("text_private")).encode()).decode()
    event["isBase64Encoded"] = True
    assert webhook.handle(event).status == 200
    assert len(queue.sent) == 1


def test_get_is_405() -> None:
    event = http_event("{}", secret=SECRET)
    event["requestContext"]["http"]["method"] = "GET"
    assert make_webhook(MemoryQueue()).handle(event).status == 405


def test_unicode_text_is_accepted_intact() -> None:
    queue = MemoryQueue()
    update = telegram_update("unicode_text")
    post(make_webhook(queue), update)
    assert queue.sent[0][0].update["message"]["text"] == update["message"]["text"]


def stop_update() -> dict[str, Any]:
    update = telegram_update("text_private")
    update["message"]["text"] = "/stop"
    return update


def test_stop_raises_the_flag_at_once_and_is_still_queued() -> None:
    queue, flags = MemoryQueue(), MemoryStopFlags()
    response = post(make_webhook(queue, flags=flags), stop_update())
    assert response["statusCode"] == 200
    assert flags.requested == ["telegram:111111111"]
    assert len(queue.sent) == 1  # the queued /stop answers the user afterwards


def test_stop_from_a_stranger_raises_nothing() -> None:
    queue, flags = MemoryQueue(), MemoryStopFlags()
    post(make_webhook(queue, allow="42", flags=flags), stop_update())
    assert flags.requested == [] and queue.sent == []


def test_stop_flag_failure_does_not_lose_the_message() -> None:
    queue = MemoryQueue()
    response = post(make_webhook(queue, flags=MemoryStopFlags(fail=True)), stop_update())
    assert response["statusCode"] == 200
    assert len(queue.sent) == 1


def test_other_messages_raise_no_flag() -> None:
    flags = MemoryStopFlags()
    post(make_webhook(MemoryQueue(), flags=flags), telegram_update("text_private"))
    post(make_webhook(MemoryQueue(), flags=flags), telegram_update("command_new_with_botname"))
    assert flags.requested == []


def test_a_repeated_update_is_answered_but_not_queued_again() -> None:
    """Telegram re-sends an update (e.g. an hour later, past SQS's dedup window): one turn."""
    queue = MemoryQueue()
    webhook = make_webhook(queue)
    update = telegram_update("text_private")
    first = post(webhook, update)
    again = post(webhook, update)
    assert json.loads(first["body"])["status"] == "queued"
    assert again["statusCode"] == 200
    assert json.loads(again["body"]) == {"ok": True, "status": "duplicate"}
    assert len(queue.sent) == 1


def test_a_failed_enqueue_is_not_remembered_so_the_retry_is_queued() -> None:
    queue = MemoryQueue(fail=True)
    webhook = make_webhook(queue)
    update = telegram_update("text_private")
    assert post(webhook, update)["statusCode"] == 503
    queue.fail = False
    assert json.loads(post(webhook, update)["body"])["status"] == "queued"
    assert len(queue.sent) == 1
