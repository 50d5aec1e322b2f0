"""Button presses through the whole stack work for whoever pressed, where they pressed: a
person's press in their private chat and a group member's press in the group each work in that
scope (its memory, its files), answer in that chat, and stop at that chat's spending limit. A
press Telegram would not send is answered by the webhook and never queued; a queued job with no
chat runs nowhere and reaches the dead-letter queue.

The owner is the local user (ALLOW_FROM's first id); the other person is Ada (111111111); the
group is the fixtures' (-1001234567890), where Ada writes."""

from __future__ import annotations

import json
from typing import Any

import boto3

from nanobot_lambda.core.jobs import TelegramUpdateJob
from nanobot_lambda.operator.local.bot_api import SentMessage
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory, telegram_update
from tests.support.scripted_model import ScriptedModelServer

ADA = 111111111
GROUP = -1001234567890
ADA_USER = {"id": ADA, "is_bot": False, "first_name": "Ada", "username": "ada_l"}
SECRET = "The owner's safe code is 4711."


def ada_says(stack: LocalStack, text: str, update_id: int, *, in_group: bool = False) -> None:
    update: dict[str, Any] = telegram_update("group_mention" if in_group else "text_private")
    update["update_id"] = update_id
    update["message"]["message_id"] = update_id % 100000
    if in_group:
        text = f"@nano_lambda_bot {text}"  # the fixture's mention entity covers the name
    update["message"]["text"] = text
    assert json.loads(stack.post_update(update)["body"])["status"] == "queued"
    stack.process_queue()


def asked_with_buttons(
    stack: LocalStack, model_server: ScriptedModelServer, update_id: int, *, in_group: bool
) -> SentMessage:
    """Ada asks; the bot answers with two buttons, in the chat she asked in."""
    model_server.call_tool("reply_buttons", {"buttons": ["Lisbon", "Porto"]})
    model_server.reply("Which city?")
    ada_says(stack, "plan a trip", update_id, in_group=in_group)
    question = stack.bot_api.messages[-1]
    assert question.plain_text == "Which city?" and question.keyboard
    assert question.chat_id == (GROUP if in_group else ADA)
    return question


def keys(stack: LocalStack, prefix: str) -> list[str]:
    listed = boto3.client("s3").list_objects_v2(
        Bucket=stack.template.refs["WorkspaceBucket"], Prefix=prefix
    )
    return sorted(item["Key"] for item in listed.get("Contents", []))


def press(stack: LocalStack, question: SentMessage, label: str) -> dict[str, Any]:
    update = stack.bot_api.press(question, label, user=ADA_USER)
    return dict(json.loads(stack.post_update(update)["body"]))


def said_in(stack: LocalStack, chat_id: int) -> list[str]:
    return [message.plain_text for message in stack.bot_api.messages if message.chat_id == chat_id]


def test_a_person_s_and_a_group_s_press_work_in_their_own_scope(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    stack.workspace.write("memory/MEMORY.md", SECRET.encode())
    for in_group, where, update_id in (
        (False, "scopes/people/111111111/", 910000001),
        (True, "scopes/groups/1001234567890/", 910000002),
    ):
        question = asked_with_buttons(stack, model_server, update_id, in_group=in_group)
        first = len(model_server.requests)
        model_server.call_tool("read_file", {"path": "memory/MEMORY.md"})
        model_server.call_tool("write_file", {"path": "trip.md", "content": "Lisbon, in May"})
        model_server.reply("Lisbon it is.")
        assert press(stack, question, "Lisbon")["status"] == "queued"
        stack.process_queue()

        request = model_server.requests[first]["messages"]
        choice = '[pressed the button "Lisbon" under your message: "Which city?"]'
        assert request[-1]["content"].endswith(choice)
        prompt = json.dumps(request, ensure_ascii=False)
        assert SECRET not in prompt  # not the owner's memory in the prompt
        assert "4711" not in model_server.requests[first + 1]["messages"][-1]["content"]
        assert keys(stack, where) == [f"{where}trip.md"]  # written in the chat's scope
        assert said_in(stack, question.chat_id)[-1] == "Lisbon it is."
    assert stack.workspace.read("trip.md") is None  # never in the owner's workspace
    assert said_in(stack, stack.user.id) == []
    assert stack.poller.failures == 0 and not model_server.unexpected


def test_a_press_past_its_chat_s_daily_limit_asks_the_model_nothing(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(SpendLimitPersonDailyUsd="0.0001")
    questions = [
        asked_with_buttons(stack, model_server, 910000011, in_group=False),
        asked_with_buttons(stack, model_server, 910000012, in_group=True),
    ]  # the scripted model's own name has no price: these cost nothing
    model_server.response_model = "gpt-4o-mini"  # a model litellm has a price for
    for in_group, update_id in ((False, 910000013), (True, 910000014)):
        model_server.reply("Noted.", prompt_tokens=1000, completion_tokens=50)  # past $0.0001
        ada_says(stack, "remember Lisbon", update_id, in_group=in_group)
    asked = len(model_server.requests)

    for question in questions:
        assert press(stack, question, "Lisbon")["status"] == "queued"
    stack.process_queue()

    assert len(model_server.requests) == asked  # neither press asked the model
    for chat in (ADA, GROUP):
        assert "spending limit for today ($0.0001)" in said_in(stack, chat)[-1]
    assert stack.poller.failures == 0


def test_a_press_telegram_would_not_send_is_answered_and_never_queued(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    question = asked_with_buttons(stack, model_server, 910000021, in_group=False)
    asked = len(model_server.requests)
    by_the_owner = stack.bot_api.press(question, "Lisbon", user=stack.user.as_telegram())
    not_offered = stack.bot_api.press(question, "Porto", user=ADA_USER)
    not_offered["callback_query"]["data"] = "a choice the keyboard never had"

    for update in (by_the_owner, not_offered):
        body = json.loads(stack.post_update(update)["body"])
        assert body["status"] == "refused" and body["method"] == "answerCallbackQuery"
        assert body["text"] == "This button is no longer available."
    stack.process_queue()

    # Telegram performed the answers (no spinner left); nothing was queued or asked.
    assert stack.bot_api.answered_callbacks == [
        by_the_owner["callback_query"]["id"],
        not_offered["callback_query"]["id"],
    ]
    assert len(model_server.requests) == asked
    assert stack.bot_api.messages[-1].keyboard  # the keyboard is still there to press


def test_a_queued_job_with_no_chat_runs_nowhere_and_reaches_the_dead_letter_queue(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    job = TelegramUpdateJob(update={"update_id": 910000031, "my_chat_member": {}})
    sqs = boto3.client("sqs")
    sqs.send_message(
        QueueUrl=stack.template.refs["TurnQueue"],
        MessageBody=job.model_dump_json(),
        MessageGroupId="telegram:unknown",
        MessageDeduplicationId="no-chat",
    )
    stack.process_queue()

    assert model_server.requests == [] and stack.bot_api.messages == []
    dead = sqs.receive_message(QueueUrl=stack.template.refs["TurnDeadLetterQueue"])["Messages"]
    assert [TelegramUpdateJob.model_validate_json(m["Body"]) for m in dead] == [job]
    assert keys(stack, "scopes/") == []
