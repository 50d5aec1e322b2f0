"""A streamed turn through the whole stack with each provider's own wire format (Gemini's
server-sent events, Bedrock's binary event stream, Anthropic's events): a tool step and its
answer grow in drafts and arrive once, and the cached tokens the provider reported reach /usage.

Issue 27: every streamed Gemini turn failed ("the stream ended without a finish_reason"), three
whole attempts billed, and the user got the apology.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest

from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory, telegram_update
from tests.support.provider_servers import Answer
from tests.support.providers import PROVIDERS, Provider

ADA = 111111111
ANSWER = "Your workspace holds the usual files: AGENTS.md, SOUL.md and the memory folder."


@pytest.fixture(params=["gemini", "bedrock", "anthropic"])
def provider(request: pytest.FixtureRequest) -> Iterator[Provider]:
    started = PROVIDERS[request.param]()
    yield started
    started.stop()
    assert started.refusals() == []


@pytest.fixture
def stack(stack_factory: StackFactory, provider: Provider) -> LocalStack:
    return stack_factory(model_env=provider.env())


def ada_says(stack: LocalStack, text: str, update_id: int) -> None:
    update = telegram_update("text_private")
    update["message"]["text"] = text
    update["update_id"] = update_id
    assert json.loads(stack.post_update(update)["body"])["status"] == "queued"
    stack.process_queue()
    assert stack.poller.failures == 0


def test_a_streamed_turn_answers_in_each_providers_own_stream(
    stack: LocalStack, provider: Provider
) -> None:
    provider.script(
        Answer(text=None, tool_calls=[("list_dir", {"path": "."})]),
        Answer(text=ANSWER, input_tokens=300, cache_read_tokens=1700, output_tokens=40),
    )
    ada_says(stack, "what is in my workspace?", 900000001)

    assert [message.plain_text for message in stack.bot_api.messages] == [ANSWER]
    assert len(provider.requests) == 2  # no attempt repeated
    drafts = [" ".join(draft.plain_text.split()) for draft in stack.bot_api.drafts]
    assert drafts and all(ANSWER.startswith(draft) for draft in drafts)  # shown as it came
    sessions = DynamoSessionStore(stack.template.refs["SessionsTable"], boto3.client("dynamodb"))
    assert sessions.load(f"telegram:{ADA}", 100).messages[-1]["content"] == ANSWER

    ada_says(stack, "/usage", 900000002)
    usage = stack.bot_api.messages[-1].plain_text
    assert "1,700" in usage or "1700" in usage, usage  # the cached tokens, as reported
