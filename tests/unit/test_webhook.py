"""The webhook's decisions, with an in-memory queue: what is enqueued, every status code, and
the sign of life (a Bot API method) in the answer to what it queued."""

from __future__ import annotations

import base64
import json
import logging
import time
from typing import Any

import pytest
from pydantic import SecretStr

from nanobot_lambda.adapters.telegram.models import Message
from nanobot_lambda.core import texts
from nanobot_lambda.core.albums import album_key
from nanobot_lambda.core.allowlist import AllowList
from nanobot_lambda.core.approvals import Approval
from nanobot_lambda.core.jobs import ApprovalJob, TelegramUpdateJob
from nanobot_lambda.core.pairing import Pairing
from nanobot_lambda.functions.webhook import (
    MAX_BODY_BYTES,
    Webhook,
    WebhookPolicy,
    WebhookRecords,
    sign_of_life,
)
from nanobot_lambda.operator.local.stack import http_event
from tests.conftest import album_updates, telegram_update
from tests.support.fakes import (
    MemoryAlbumBook,
    MemoryApprovalBook,
    MemoryFeedbackBook,
    MemoryLedger,
    MemoryQueue,
    MemoryStopFlags,
    RecordingMetrics,
)

SECRET = "webhook-secret-123"


def make_webhook(
    queue: MemoryQueue,
    allow: str = "111111111",
    flags: MemoryStopFlags | None = None,
    ack_reaction: str = "",
    albums: MemoryAlbumBook | None = None,
    feedback: MemoryFeedbackBook | None = None,
    approvals: MemoryApprovalBook | None = None,
    pairing: Pairing | None = None,
) -> Webhook:
    return Webhook(
        SecretStr(SECRET),
        WebhookPolicy(AllowList.parse(allow), ack_reaction=ack_reaction),
        queue,
        WebhookRecords(
            MemoryLedger(),
            flags or MemoryStopFlags(),
            MemoryAlbumBook() if albums is None else albums,
            pairing=pairing,
            feedback=MemoryFeedbackBook() if feedback is None else feedback,
            approvals=approvals,
        ),
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
    assert json.loads(response["body"]) == {
        "ok": True,
        "status": "queued",
        # Telegram performs this call for the bot: "typing…" before agent_turn even starts.
        "method": "sendChatAction",
        "chat_id": 111111111,
        "action": "typing",
    }
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


@pytest.mark.parametrize("name", ["channel_post", "my_chat_member_blocked"])
def test_kinds_the_bot_does_not_act_on_are_200_ignored(name: str) -> None:
    queue = MemoryQueue()
    response = post(make_webhook(queue), telegram_update(name))
    assert response["statusCode"] == 200
    assert json.loads(response["body"])["status"] == "ignored"
    assert queue.sent == []


def test_a_button_press_is_queued_and_answered_at_once_in_the_reply() -> None:
    queue = MemoryQueue()
    response = post(make_webhook(queue), telegram_update("callback_query"))
    body = json.loads(response["body"])
    assert (response["statusCode"], body["status"]) == (200, "queued")
    # Telegram performs the method of the reply: the button stops loading at once.
    assert body["method"] == "answerCallbackQuery"
    assert body["callback_query_id"] == "4382bfdwdsb323b2d9"
    ((_, group, _),) = queue.sent
    assert group == "telegram:111111111"


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


def test_each_part_of_an_album_is_recorded_with_its_album_and_queued() -> None:
    queue, albums = MemoryQueue(), MemoryAlbumBook()
    webhook = make_webhook(queue, albums=albums)
    parts = album_updates(3)
    for update in parts:
        assert json.loads(post(webhook, update)["body"])["status"] == "queued"
    (key,) = albums.albums
    assert key == album_key("telegram:111111111", "13571113579")
    assert albums.albums[key].parts == {update["update_id"]: update for update in parts}
    assert [job.update for job, _, _ in queue.sent] == parts  # each part queued as ever


def test_an_album_part_that_cannot_be_recorded_is_still_queued(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue = MemoryQueue()
    (update,) = album_updates(1)
    response = post(make_webhook(queue, albums=MemoryAlbumBook(fail=True)), update)
    assert json.loads(response["body"])["status"] == "queued"  # answered on its own, not lost
    assert len(queue.sent) == 1
    assert "could not record an album part (StorageError)" in caplog.text


def test_messages_outside_albums_and_strangers_albums_are_not_recorded() -> None:
    albums = MemoryAlbumBook()
    post(make_webhook(MemoryQueue(), albums=albums), telegram_update("photo_with_caption"))
    post(make_webhook(MemoryQueue(), allow="42", albums=albums), album_updates(1)[0])
    assert albums.albums == {}


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


# -- the sign of life: a Bot API method in the answer, performed by Telegram ------------------


def message(name: str, **changes: Any) -> Message:
    return Message.model_validate({**telegram_update(name)["message"], **changes})


def test_a_private_message_gets_typing_at_once() -> None:
    assert sign_of_life(message("text_private"), "", "mention") == {
        "method": "sendChatAction",
        "chat_id": 111111111,
        "action": "typing",
    }


def test_typing_goes_to_the_forum_topic_of_the_message() -> None:
    call = sign_of_life(message("forum_topic_message", text="/usage"), "", "mention")
    assert call == {
        "method": "sendChatAction",
        "chat_id": -1009876543210,
        "message_thread_id": 600,
        "action": "typing",
    }


def test_a_reply_in_a_group_that_is_no_topic_gets_no_thread_id() -> None:
    # Telegram sets message_thread_id on replies in supergroups too; only a topic is answered in.
    call = sign_of_life(message("group_no_mention", message_thread_id=77), "", "open")
    assert call is not None and "message_thread_id" not in call


def test_ack_reaction_reacts_to_the_message_instead() -> None:
    assert sign_of_life(message("text_private"), "👀", "mention") == {
        "method": "setMessageReaction",
        "chat_id": 111111111,
        "message_id": 10,
        "reaction": [{"type": "emoji", "emoji": "👀"}],
    }


@pytest.mark.parametrize(
    ("name", "text", "policy", "expected"),
    [
        ("group_no_mention", "/new", "mention", True),  # a command naming no bot is for all
        ("group_no_mention", "/usage extra words", "mention", True),
        ("group_no_mention", "/new@some_other_bot", "open", False),  # maybe not this bot
        ("group_no_mention", "/new@nano_lambda_bot", "mention", False),  # unknown: no getMe
        ("group_no_mention", None, "mention", False),  # not for the bot
        ("group_mention", None, "mention", False),  # agent_turn knows the mention: its typing
        ("group_no_mention", None, "open", True),  # every message is answered
        ("group_mention", None, "open", True),
        ("command_new_with_botname", None, "mention", True),  # private: always
    ],
)
def test_in_groups_only_what_is_surely_for_the_bot_gets_one(
    name: str, text: str | None, policy: Any, expected: bool
) -> None:
    changes = {} if text is None else {"text": text, "entities": []}
    for reaction in ("", "👍"):
        call = sign_of_life(message(name, **changes), reaction, policy)
        assert (call is not None) == expected, reaction


def test_the_webhook_answers_a_queued_message_with_the_reaction() -> None:
    response = post(make_webhook(MemoryQueue(), ack_reaction="🔥"), telegram_update("text_private"))
    body = json.loads(response["body"])
    assert response["statusCode"] == 200
    assert (body["ok"], body["status"], body["method"]) == (True, "queued", "setMessageReaction")
    assert body["reaction"] == [{"type": "emoji", "emoji": "🔥"}]
    assert body["message_id"] == 10


def test_a_group_message_for_someone_else_is_queued_without_a_method() -> None:
    queue = MemoryQueue()
    response = post(make_webhook(queue, allow="*"), telegram_update("group_no_mention"))
    assert json.loads(response["body"]) == {"ok": True, "status": "queued"}
    assert len(queue.sent) == 1  # agent_turn still decides with the bot's identity


def test_only_a_newly_queued_update_carries_a_method() -> None:
    update = telegram_update("text_private")
    queue = MemoryQueue()
    webhook = make_webhook(queue)
    answers = {
        "queued": post(webhook, update),
        "duplicate": post(webhook, update),
        "refused": post(make_webhook(MemoryQueue(), allow="42"), update),
        "ignored": post(make_webhook(MemoryQueue()), telegram_update("channel_post")),
        "recorded": post(make_webhook(MemoryQueue()), telegram_update("message_reaction")),
        "enqueue failed": post(make_webhook(MemoryQueue(fail=True)), update),
        "unauthorized": post(make_webhook(MemoryQueue()), update, secret="wrong"),
    }
    bodies = {name: json.loads(answer["body"]) for name, answer in answers.items()}
    with_method = [name for name, body in bodies.items() if "method" in body]
    assert with_method == ["queued"]
    assert [body.get("status") for body in bodies.values()] == [
        "queued",
        "duplicate",
        "refused",
        "ignored",
        "recorded",
        None,
        None,
    ]


def approval_press(
    approval_id: str, presser: int, chat: int, message_id: int, letter: str = "o"
) -> dict[str, Any]:
    return {
        "update_id": 500000001,
        "callback_query": {
            "id": "7000000000001",
            "from": {"id": presser, "is_bot": False, "first_name": "Ada"},
            "message": {
                "message_id": message_id,
                "date": 1795944875,
                "chat": {"id": chat, "type": "private", "first_name": "Ada"},
                "text": "May I do this?",
            },
            "chat_instance": "1",
            "data": f"apv:{approval_id}:{letter}",
        },
    }


def test_only_the_approvers_press_on_the_question_in_time_queues_the_turns_resume() -> None:
    """core/approvals.py: the press is checked against the approval recorded when the turn
    asked; anything else is answered with a notice and queues nothing."""
    book = MemoryApprovalBook()
    turn_job = TelegramUpdateJob(update=telegram_update("text_private"))
    deadline = int(time.time()) + 3600
    book.put(
        Approval(
            "apv-good-123",
            "telegram:-100",
            "update-1",
            -100,
            111111111,
            deadline,
            turn_job.model_dump_json(),
            message_id=41,
        )
    )
    book.put(
        Approval(
            "apv-late-123",
            "telegram:-100",
            "update-2",
            -100,
            111111111,
            int(time.time()) - 1,
            turn_job.model_dump_json(),
            message_id=42,
        )
    )
    queue = MemoryQueue()
    webhook = make_webhook(queue, approvals=book)

    def status(update: dict[str, Any]) -> str:
        return str(json.loads(post(webhook, update)["body"])["status"])

    assert status(approval_press("apv-good-123", 222222222, 111111111, 41)) == "refused"
    assert status(approval_press("apv-good-123", 111111111, -100, 41)) == "refused"
    assert status(approval_press("apv-good-123", 111111111, 111111111, 40)) == "refused"
    assert status(approval_press("apv-none-123", 111111111, 111111111, 41)) == "refused"
    late = json.loads(
        post(webhook, approval_press("apv-late-123", 111111111, 111111111, 42))["body"]
    )
    assert late["status"] == "refused" and late["text"] == texts.load("approval_too_late")
    assert queue.sent == []

    assert status(approval_press("apv-good-123", 111111111, 111111111, 41, "a")) == "queued"
    ((job, group, dedup),) = queue.sent
    assert isinstance(job, ApprovalJob) and job.job == turn_job
    assert (job.approval_id, job.decision, job.decided_by) == ("apv-good-123", "always", 111111111)
    assert (group, dedup) == ("telegram:-100", "approval-apv-good-123")
