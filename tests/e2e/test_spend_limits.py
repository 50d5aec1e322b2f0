"""Spending limits through the whole stack: a priced model (the scripted server answers as
gpt-4o-mini, which litellm has a price for), a person's daily limit reached, the person told
once and the owner once, no further model call, /usage showing what is left; and everyone's
limit stopping the owner's own chat.

The owner is the local user (ALLOW_FROM's first id); the other person is Ada (111111111)."""

from __future__ import annotations

from typing import Any

from nanobot_lambda.operator.local.stack import LocalStack, LocalUser
from tests.conftest import StackFactory
from tests.support.scripted_model import ScriptedModelServer

ADA = 111111111
OWNER = LocalUser().id


def said_in(stack: LocalStack, chat_id: int) -> list[str]:
    return [message.plain_text for message in stack.bot_api.messages if message.chat_id == chat_id]


def ada_says(stack: LocalStack, text: str) -> None:
    update: dict[str, Any] = stack.text_update(text, chat_id=ADA)
    update["message"]["from"] = {
        "id": ADA,
        "is_bot": False,
        "first_name": "Ada",
        "username": "ada_l",
    }
    update["message"]["chat"] = {"id": ADA, "type": "private", "first_name": "Ada"}
    stack.post_update(update)
    stack.process_queue()


def test_a_person_past_their_daily_limit_is_told_once_and_the_owner_hears_of_it(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(SpendLimitPersonDailyUsd="0.0001")
    model_server.response_model = "gpt-4o-mini"  # a model litellm has a price for
    model_server.reply("Hello Ada.", prompt_tokens=1000, completion_tokens=50)
    ada_says(stack, "hi")
    ada_says(stack, "are you there?")
    ada_says(stack, "hello??")

    assert len(model_server.requests) == 1  # past the limit, the model was not asked
    hello, notice = said_in(stack, ADA)
    assert hello == "Hello Ada." and "spending limit for today ($0.0001)" in notice
    (heard,) = said_in(stack, OWNER)
    assert f"Chat {ADA} reached its spending limit today" in heard
    assert stack.poller.failures == 0

    ada_says(stack, "/usage")  # a command needs no model: it is answered
    assert "Left today for this chat: $0.00 of $0.0001" in said_in(stack, ADA)[-1].splitlines()


def test_everyone_s_limit_stops_the_owner_too(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(SpendLimitDailyUsd="0.0001")
    model_server.response_model = "gpt-4o-mini"
    model_server.reply("Hello Ada.", prompt_tokens=1000, completion_tokens=50)
    ada_says(stack, "hi")
    stack.post_update(stack.text_update("hello"))
    stack.process_queue()

    assert len(model_server.requests) == 1
    (notice,) = said_in(stack, OWNER)  # the owner's chat is told, and only once
    assert "today's spending limit" in notice and "everyone together" in notice
