"""A turn's save that fails after its answer was sent, end to end: DynamoDB cancels the
transaction that saves the turn (as it answers: a `TransactionCanceledException` with a reason
for each item, given to the stack's boto3 clients in place of moto's answer), the job fails,
and SQS delivers it again. The user gets the answer once, the model is asked once (a second
answer is scripted, and must never be sent), and the session holds the answer that was sent.

(A message too large for one item is saved shortened, on moto server too: see
tests/contract/test_session_store.py. A turn that streams one through litellm takes minutes
here, as the stream of a 600 KB tool call is parsed chunk by chunk.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from nanobot_lambda.core import texts
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory
from tests.e2e.test_faults import dead_letters, say, sent_texts, session
from tests.support.scripted_model import ScriptedModelServer

SAVE_EVENT = "before-send.dynamodb.TransactWriteItems"


class _Body:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


class CancelledSaves:
    """Cancels the next `times` transactions that save session messages, the last item (a
    write another store folded in) refused as invalid. Installed on boto3's default session,
    so it reaches the clients made after it: take it before the stack."""

    def __init__(self, times: int) -> None:
        self.left = times
        self.cancelled = 0
        self._session = boto3._get_default_session()
        self._session.events.register(SAVE_EVENT, self._answer)

    def _answer(self, request: Any = None, **_: Any) -> AWSResponse | None:
        items = json.loads(request.body)["TransactItems"]
        saves_messages = any(
            item.get("Put", {}).get("Item", {}).get("sk", {}).get("S", "").startswith("msg#")
            for item in items
        )
        if not saves_messages or self.left == 0:
            return None
        self.left -= 1
        self.cancelled += 1
        reasons = [{"Code": "None"}] * (len(items) - 1)
        reasons.append({"Code": "ValidationError", "Message": "invalid item"})
        body = {
            "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
            "message": "Transaction cancelled, please refer cancellation reasons",
            "CancellationReasons": reasons,
        }
        headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": "fault"}
        return AWSResponse(request.url, 400, headers, _Body(json.dumps(body).encode()))

    def close(self) -> None:
        self._session.events.unregister(SAVE_EVENT, self._answer)


@pytest.fixture
def cancelled_save() -> Iterator[CancelledSaves]:
    faults = CancelledSaves(times=1)
    yield faults
    faults.close()


def test_a_save_cancelled_after_the_answer_is_saved_by_the_retry_without_a_second_answer(
    cancelled_save: CancelledSaves, stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack: LocalStack = stack_factory()
    model_server.call_tool("write_file", {"path": "notes/a.md", "content": "A"}, content="On it.")
    model_server.reply("Written.")
    model_server.reply("Something else entirely.")  # were the model asked again
    say(stack, "write a note")

    assert cancelled_save.cancelled == 1 and stack.poller.failures == 1
    assert sent_texts(stack) == ["On it.", "Written."]
    assert len(model_server.requests) == 2
    saved = session(stack)
    assert [m["role"] for m in saved] == ["user", "assistant", "tool", "assistant"]
    assert saved[-1]["content"] == "Written."
    assert dead_letters(stack) == []
    say(stack, "thanks")  # the chat goes on from the saved turn
    assert len(session(stack)) == 6


def test_a_save_cancelled_on_every_attempt_is_dead_lettered_with_the_answer_not_repeated(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    """The person read the answer: the last attempt tells them it could not be saved to memory,
    not that their message could not be processed."""
    faults = CancelledSaves(times=3)  # MaxReceiveCount
    try:
        stack: LocalStack = stack_factory()
        model_server.reply("Hello.")
        model_server.reply("Something else entirely.")  # were the model asked again
        say(stack, "hi")
    finally:
        faults.close()

    assert faults.cancelled == 3 and stack.poller.failures == 3
    assert sent_texts(stack) == ["Hello.", texts.load("answer_not_saved")]
    assert len(model_server.requests) == 1
    assert session(stack) == []
    assert len(dead_letters(stack)) == 1
