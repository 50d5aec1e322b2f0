"""agent_turn's side of the queue (functions/agent_turn/sqs_records.py): how long a record stays
hidden while its turn runs, and what a failure does to it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from nanobot_lambda.core.jobs import AnyJob, TelegramUpdateJob
from nanobot_lambda.functions.agent_turn.queued import QueuedJob
from nanobot_lambda.functions.agent_turn.sqs_records import AFTER_DEATH_SECONDS, RecordRunner
from nanobot_lambda.operator.local.runtime import LocalLambdaContext
from tests.conftest import telegram_update


class RecordingQueue:
    def __init__(self) -> None:
        self.visibility: list[tuple[str, int]] = []

    def retry_after(self, receipt_handle: str, seconds: int) -> None:
        self.visibility.append((receipt_handle, seconds))


class Turns:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.processed: list[AnyJob] = []
        self.given_up: list[AnyJob] = []

    def process(self, queued: QueuedJob, remaining_ms: Callable[[], int] | None = None) -> None:
        self.processed.append(queued.job)
        if self.fail:
            raise RuntimeError("the turn failed")

    def give_up(self, queued: QueuedJob) -> None:
        self.given_up.append(queued.job)


def record(receives: int = 1) -> SQSRecord:
    body = TelegramUpdateJob(update=telegram_update("text_private")).model_dump_json()
    return SQSRecord(
        {
            "messageId": "m-1",
            "receiptHandle": "receipt-1",
            "body": body,
            "attributes": {"ApproximateReceiveCount": str(receives)},
        }
    )


def runner(turns: Turns, queue: RecordingQueue) -> RecordRunner:
    return RecordRunner(turns, queue, max_receive_count=3, backoff_seconds=10)


def test_a_record_stays_hidden_until_just_past_the_invocation_s_end() -> None:
    """Should the invocation die (time limit, memory), the record comes back minutes after its
    end, not after the queue's 30-minute visibility timeout."""
    queue, turns = RecordingQueue(), Turns()
    runner(turns, queue).run(record(), LocalLambdaContext("agent_turn", timeout_seconds=60))
    ((receipt, seconds),) = queue.visibility
    assert receipt == "receipt-1" and 60 < seconds <= 60 + AFTER_DEATH_SECONDS
    assert len(turns.processed) == 1


def test_a_failed_record_is_retried_after_the_backoff_set_last() -> None:
    queue, turns = RecordingQueue(), Turns(fail=True)
    with pytest.raises(RuntimeError):
        runner(turns, queue).run(record(), LocalLambdaContext("agent_turn", timeout_seconds=60))
    assert [seconds for _, seconds in queue.visibility][-1] == 10  # the backoff wins
    assert len(queue.visibility) == 2


def test_without_an_invocation_clock_nothing_is_changed() -> None:
    queue, turns = RecordingQueue(), Turns()
    runner(turns, queue).run(record())
    assert queue.visibility == []
