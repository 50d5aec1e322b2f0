"""Keep-warm (issue 31): the scheduled ping is answered without touching anything, and it is
never mistaken for a turn, nor a turn for it."""

from __future__ import annotations

import json

import boto3
import pytest

from nanobot_lambda.functions.keep_warm import KEEP_WARM_EVENT, is_keep_warm
from nanobot_lambda.operator.local.runtime import LocalLambdaContext
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory
from tests.support.aws_requests import RequestCounter
from tests.support.scripted_model import ScriptedModelServer


def ping(stack: LocalStack, event: object) -> object:
    return stack.handlers["agent_turn"].handler(event, LocalLambdaContext("agent_turn"))


def test_the_ping_touches_nothing_and_turns_still_run(
    aws_requests: RequestCounter, stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory()
    model_server.reply("Good morning.")
    stack.poller.drain()  # nothing queued: the stack is idle
    aws_requests.reset()
    logged = len(stack.log_sink.records)

    for _ in range(3):  # every few minutes, an idle hour
        assert ping(stack, dict(KEEP_WARM_EVENT)) == {"batchItemFailures": []}

    assert aws_requests.calls == {}  # no S3, DynamoDB, SQS, SSM or Scheduler request
    assert model_server.requests == []
    assert stack.bot_api.calls == []
    assert len(stack.log_sink.records) == logged  # not even a log record

    # The SQS batch after it is a turn, as before.
    assert stack.post_update(stack.text_update("hello"))["statusCode"] == 200
    stack.process_queue()
    assert [m.plain_text for m in stack.bot_api.messages] == ["Good morning."]
    assert len(model_server.requests) == 1


def test_a_queued_message_that_reads_like_the_ping_is_no_ping(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    sqs = boto3.client("sqs")
    sqs.send_message(
        QueueUrl=stack.template.refs["TurnQueue"],
        MessageBody=json.dumps(KEEP_WARM_EVENT),
        MessageGroupId="g",
        MessageDeduplicationId="looks-like-a-ping",
    )

    stack.process_queue()  # SQS invokes with {"Records": [...]}: records, not a ping

    # Handled as a record: not a job, so it fails each attempt and reaches the dead-letter
    # queue, instead of an empty answer that would have deleted it unread.
    assert stack.poller.failures == 3  # MaxReceiveCount
    assert any("is not a job" in r.getMessage() for r in stack.log_sink.errors)
    dead = sqs.receive_message(QueueUrl=stack.template.refs["TurnDeadLetterQueue"])["Messages"]
    assert [json.loads(message["Body"]) for message in dead] == [KEEP_WARM_EVENT]
    assert model_server.requests == []


@pytest.mark.parametrize(
    "event",
    [
        {"nanobot": "keep-warm", "Records": []},  # anything more than the ping
        {"nanobot": "keep-warm", "kind": "heartbeat"},
        {"nanobot": "keep warm"},
        {"Records": [{"body": json.dumps(KEEP_WARM_EVENT)}]},
        [KEEP_WARM_EVENT],
        json.dumps(KEEP_WARM_EVENT),  # the JSON text, not the event Lambda decodes from it
    ],
)
def test_only_the_exact_ping_is_one(event: object) -> None:
    assert is_keep_warm(KEEP_WARM_EVENT)
    assert not is_keep_warm(event)
