"""The local stack's SQS poller: a failed message is retried even when the queue's counts lie.

moto computes a queue's visible and in-flight counts at slightly different instants, so at the
very moment a failed message becomes visible again both can read 0. The queue below always
reads 0, the worst case: the poller must still wait for the retry it scheduled.
"""

from __future__ import annotations

import time
from typing import Any

from nanobot_lambda.operator.local.runtime import LocalLambdaContext, QueuePoller


class QueueWhoseCountsReadZero:
    """One message; receive, visibility and delete as SQS does them; counts always 0."""

    def __init__(self) -> None:
        self.visible_at = 0.0
        self.deleted = False
        self.receives = 0

    def get_queue_attributes(self, *, AttributeNames: list[str], **_: Any) -> dict[str, Any]:
        attributes = {
            "QueueArn": "arn:aws:sqs:us-east-1:123456789012:turns.fifo",
            "ApproximateNumberOfMessages": "0",
            "ApproximateNumberOfMessagesNotVisible": "0",
        }
        return {"Attributes": {name: attributes[name] for name in AttributeNames}}

    def receive_message(self, **_: Any) -> dict[str, Any]:
        if self.deleted or time.monotonic() < self.visible_at:
            return {}
        self.receives += 1
        self.visible_at = time.monotonic() + 30
        message = {
            "MessageId": "m-1",
            "ReceiptHandle": f"r-{self.receives}",
            "Body": "{}",
            "Attributes": {"ApproximateReceiveCount": str(self.receives)},
            "MD5OfBody": "",
        }
        return {"Messages": [message]}

    def change_message_visibility(self, *, VisibilityTimeout: int, **_: Any) -> None:
        self.visible_at = time.monotonic() + VisibilityTimeout

    def delete_message(self, **_: Any) -> None:
        self.deleted = True


def context() -> LocalLambdaContext:
    return LocalLambdaContext(function_name="agent_turn")


def test_a_failed_message_is_retried_before_drain_returns() -> None:
    queue = QueueWhoseCountsReadZero()
    outcomes = iter(["fail", "ok"])

    def handler(event: dict[str, Any], _: object) -> dict[str, Any]:
        if next(outcomes) == "fail":
            return {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
        return {"batchItemFailures": []}

    poller = QueuePoller(queue, "url", handler, context=context, retry_delay=1)  # type: ignore[arg-type]
    poller.drain(max_seconds=10)
    assert (queue.receives, poller.failures, queue.deleted) == (2, 1, True)


def test_an_empty_queue_drains_at_once() -> None:
    queue = QueueWhoseCountsReadZero()
    queue.deleted = True
    poller = QueuePoller(queue, "url", lambda e, c: None, context=context)  # type: ignore[arg-type]
    started = time.monotonic()
    poller.drain(max_seconds=10)
    assert time.monotonic() - started < 1
    assert poller.invocations == 0
