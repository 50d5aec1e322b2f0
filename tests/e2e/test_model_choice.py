"""/model and /think through the whole stack: the operator's presets (ModelPresets), the chat's
choice kept in its session on DynamoDB, the next turn's request to the chosen model (through
litellm, to the scripted server) at the chosen thinking level, and only the owner switching."""

from __future__ import annotations

import json

import boto3

from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.core.sessions import ChatPreferences
from nanobot_lambda.operator.local.stack import LocalStack, LocalUser
from tests.conftest import StackFactory
from tests.support.scripted_model import ScriptedModelServer

PRESETS = json.dumps(
    {
        "fast": "openai/scripted-fast",
        "deep": {"model": "openai/scripted-deep", "reasoning_effort": "medium"},
    }
)


def sessions(stack: LocalStack) -> DynamoSessionStore:
    return DynamoSessionStore(stack.template.refs["SessionsTable"], boto3.client("dynamodb"))


def said(stack: LocalStack) -> str:
    return stack.bot_api.messages[-1].plain_text


def test_a_chat_switches_model_and_thinking_and_its_next_turns_follow(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(ModelPresets=PRESETS, LlmThinking="low")
    model_server.reply("From the default model.")
    stack.post_update(stack.text_update("hello"))
    stack.process_queue()
    assert model_server.requests[-1]["model"] == "scripted"
    assert model_server.requests[-1]["reasoning_effort"] == "low"  # LlmThinking

    stack.post_update(stack.text_update("/model deep"))
    stack.process_queue()
    assert "answered by deep (openai/scripted-deep)" in said(stack)
    key = f"telegram:{LocalUser().id}"
    assert sessions(stack).load(key, 1).preferences == ChatPreferences("deep", None)

    model_server.reply("From the deep model.")
    stack.post_update(stack.text_update("think hard"))
    stack.process_queue()
    assert said(stack) == "From the deep model."
    request = model_server.requests[-1]
    assert (request["model"], request["reasoning_effort"]) == ("scripted-deep", "medium")

    stack.post_update(stack.text_update("/think off"))
    model_server.reply("Quick now.")
    stack.post_update(stack.text_update("and now?"))
    stack.process_queue()
    assert said(stack) == "Quick now."
    assert model_server.requests[-1]["model"] == "scripted-deep"
    assert "reasoning_effort" not in model_server.requests[-1]  # off: no thinking asked
    assert len(model_server.requests) == 3  # the commands never reached the model


def test_another_person_cannot_switch_and_keeps_the_default(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(ModelPresets=PRESETS)
    stack.post_update(stack.text_update("/model fast"))  # the owner's own chat
    stack.post_update(stack.text_update("/model fast", chat_id=111111111))  # Ada: not the owner
    stack.process_queue()
    assert "Only the owner" in said(stack)
    assert sessions(stack).load("telegram:111111111", 1).preferences == ChatPreferences()

    model_server.reply("Default for Ada.")
    stack.post_update(stack.text_update("hi", chat_id=111111111))
    stack.process_queue()
    assert model_server.requests[-1]["model"] == "scripted"
