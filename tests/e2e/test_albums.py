"""Albums through the whole stack: each part of a media group goes through the webhook (recorded
with its album in DynamoDB, queued in the chat's order), and agent_turn answers the album in
one turn, with every photo and the caption. Parts delivered at once, a part too late for its
album, a retried album turn and Telegram re-sending a part each answer nothing twice and lose
nothing.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import boto3

from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import album_updates
from tests.support.faults import BotApiFaults
from tests.support.scripted_model import ScriptedModelServer

OWNER = 111111111
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01" + bytes(range(256)) * 40


def album(stack: LocalStack, count: int) -> list[dict[str, Any]]:
    """An album's updates, each part's photo downloadable from the local Bot API."""
    parts = album_updates(count)
    for index, update in enumerate(parts):
        largest = update["message"]["photo"][-1]
        stack.bot_api.add_file(
            largest["file_id"],
            JPEG + bytes([index]),
            f"photos/album_{index}.jpg",
            file_unique_id=largest["file_unique_id"],
        )
    return parts


def deliver(stack: LocalStack, *updates: dict[str, Any]) -> None:
    for update in updates:
        assert json.loads(stack.post_update(update)["body"])["status"] == "queued"


def images(model_server: ScriptedModelServer, request: int) -> list[str]:
    content = model_server.requests[request]["messages"][-1]["content"]
    return [part["image_url"]["url"] for part in content if part["type"] == "image_url"]


def caption_of(model_server: ScriptedModelServer, request: int) -> str:
    text: str = model_server.requests[request]["messages"][-1]["content"][-1]["text"]
    return text


def sent(stack: LocalStack) -> list[str]:
    return [message.plain_text for message in stack.bot_api.messages]


def session(stack: LocalStack) -> list[dict[str, Any]]:
    store = DynamoSessionStore(stack.template.refs["SessionsTable"], boto3.client("dynamodb"))
    return store.load(f"telegram:{OWNER}", 100).messages


def test_an_album_gets_one_answer_that_saw_every_photo_and_the_caption(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Three photos of one cat.")
    parts = album(stack, 3)
    deliver(stack, *parts)
    stack.process_queue()

    assert stack.poller.failures == 0
    assert sent(stack) == ["Three photos of one cat."]
    assert len(model_server.requests) == 1
    assert len(set(images(model_server, 0))) == 3  # three different photos
    assert caption_of(model_server, 0).endswith("What is in this picture?")
    assert sorted(stack.bot_api.downloads) == [f"photos/album_{n}.jpg" for n in range(3)]
    user, answer = session(stack)
    assert user["update_id"] == parts[0]["update_id"]
    assert user["content"].count("[image]") == 3 and answer["content"] == sent(stack)[0]


def test_parts_delivered_at_once_by_concurrent_webhooks_are_one_turn(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """Telegram may deliver an album's parts over several connections at the same moment."""
    model_server.reply("Four photos.")
    parts = album(stack, 4)
    threads = [threading.Thread(target=deliver, args=(stack, update)) for update in parts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stack.process_queue()

    assert sent(stack) == ["Four photos."]
    assert len(model_server.requests) == 1 and len(images(model_server, 0)) == 4


def test_a_part_that_comes_after_its_album_was_answered_is_answered_on_its_own(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Two photos.").reply("One more photo.")
    first, second, late = album(stack, 3)
    deliver(stack, first, second)
    stack.process_queue()
    deliver(stack, late)
    stack.process_queue()

    assert sent(stack) == ["Two photos.", "One more photo."]
    assert [len(images(model_server, request)) for request in (0, 1)] == [2, 1]
    assert [message["content"].count("[image]") for message in session(stack)[::2]] == [2, 1]


def test_an_album_turn_that_failed_is_retried_with_the_same_parts_and_answered_once(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    faults = BotApiFaults(stack.bot_api)
    fault = faults.fail("sendMessage", 502, "Bad Gateway", times=4)  # every attempt of a run
    model_server.reply("Two photos.").reply("Two photos, sent on the retry.")
    parts = album(stack, 2)
    deliver(stack, *parts)
    stack.process_queue()

    assert fault.injected == 4 and stack.poller.failures == 1  # SQS delivered the turn again
    assert sent(stack) == ["Two photos, sent on the retry."]
    # The retry asked the model again, about the same two photos; the second part's own job
    # found itself answered.
    assert len(model_server.requests) == 2
    assert images(model_server, 1) == images(model_server, 0) and len(images(model_server, 0)) == 2
    assert len(session(stack)) == 2


def test_a_part_telegram_sends_again_gets_no_second_turn(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Two photos.")
    first, second = album(stack, 2)
    deliver(stack, first, second)
    stack.process_queue()
    again = stack.post_update(second)  # e.g. the webhook's answer was lost on the way
    stack.process_queue()

    assert json.loads(again["body"])["status"] == "duplicate"
    assert sent(stack) == ["Two photos."] and len(model_server.requests) == 1
