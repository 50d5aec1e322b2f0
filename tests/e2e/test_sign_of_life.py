"""The sign of life: the webhook's 200 carries a Bot API method that Telegram performs for the
bot, so "typing…" (or the ACK_REACTION reaction) shows before agent_turn has even started.

The local stack plays Telegram: `post_update` makes the call the webhook's answer asks for,
against the local Bot API, before it returns. Nothing here processes the queue until the sign
of life has been checked, so agent_turn cannot have sent it.
"""

from __future__ import annotations

import time

import boto3
import pytest

from nanobot_lambda.operator.cli.local import _post, _to_stderr
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory, telegram_update
from tests.support.faults import BotApiFaults
from tests.support.scripted_model import ScriptedModelServer

OWNER = 111111111


def queued_messages(stack: LocalStack) -> int:
    attributes = boto3.client("sqs").get_queue_attributes(
        QueueUrl=stack.template.refs["TurnQueue"],
        AttributeNames=["ApproximateNumberOfMessages"],
    )
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def test_typing_shows_as_soon_as_the_webhook_answers_before_agent_turn_runs(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Here I am.")
    posted = time.monotonic()
    response = stack.post_update(telegram_update("text_private"))

    assert response["statusCode"] == 200
    assert queued_messages(stack) == 1  # agent_turn has not taken it
    assert model_server.requests == []
    ((at, method, params),) = stack.bot_api.timeline
    assert method == "sendChatAction"
    assert (params["chat_id"], params["action"]) == (OWNER, "typing")
    assert at - posted < 1.0
    assert stack.reply_method_errors == []

    stack.process_queue()
    (reply,) = stack.bot_api.messages
    assert reply.plain_text == "Here I am."
    methods = [method for _, method, _ in stack.bot_api.timeline]
    assert methods[0] == "sendChatAction" and methods[-1] == "sendMessage"


def test_with_ack_reaction_the_users_message_gets_the_reaction_instead(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    # Typed with the variation selector, as keyboards do; sent as Telegram spells it.
    stack = stack_factory(AckReaction="\u2764\ufe0f")
    model_server.reply("Noted.")
    update = telegram_update("text_private")
    stack.post_update(update)

    assert queued_messages(stack) == 1
    (reaction,) = stack.bot_api.reactions
    assert (reaction.chat_id, reaction.message_id) == (OWNER, update["message"]["message_id"])
    assert reaction.emoji == ("\u2764",)
    assert [method for method, _ in stack.bot_api.calls] == ["setMessageReaction"]
    assert stack.reply_method_errors == []
    stack.process_queue()
    assert [message.plain_text for message in stack.bot_api.messages] == ["Noted."]


def test_a_group_mention_waits_for_agent_turn_which_knows_the_bots_name(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("On it.")
    stack.post_update(telegram_update("group_mention"))
    assert stack.bot_api.calls == []  # the webhook cannot tell the mention is this bot's
    stack.process_queue()
    methods = [method for method, _ in stack.bot_api.calls]
    assert "sendChatAction" in methods and methods[-1] == "sendMessage"


def test_a_group_command_for_any_bot_gets_typing_in_its_topic(stack: LocalStack) -> None:
    update = telegram_update("forum_topic_message")
    update["message"].update(text="/help", entities=[])
    stack.post_update(update)
    ((method, params),) = stack.bot_api.calls
    assert method == "sendChatAction"
    assert (params["chat_id"], params["message_thread_id"]) == (-1009876543210, 600)


def test_a_refused_sign_of_life_is_recorded_and_changes_nothing(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Still answered.")
    BotApiFaults(stack.bot_api).fail("sendChatAction", 400, "Bad Request: chat not found")
    response = stack.post_update(telegram_update("text_private"))
    assert response["statusCode"] == 200  # Telegram never tells the webhook
    assert stack.reply_method_errors == [("sendChatAction", 400, "Bad Request: chat not found")]
    assert queued_messages(stack) == 1
    stack.process_queue()
    assert [message.plain_text for message in stack.bot_api.messages] == ["Still answered."]


def test_chat_shows_the_reaction_on_stderr(
    stack_factory: StackFactory,
    model_server: ScriptedModelServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stack = stack_factory(AckReaction="👀")
    model_server.reply("Hello.")
    assert _post(stack, stack.text_update("hi"), _to_stderr) is True  # what chat sends
    captured = capsys.readouterr()
    assert "(nanobot reacted 👀)" in captured.err
    assert "reacted" not in captured.out  # the replies' stream stays the bot's messages
