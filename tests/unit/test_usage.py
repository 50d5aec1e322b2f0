"""Usage figures and texts, the correlation ids of a job, and retried transaction conflicts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from functools import partial
from typing import Any

import pytest
from botocore.exceptions import ClientError

from nanobot_lambda.adapters.aws.log_correlation import CORRELATION_KEYS
from nanobot_lambda.adapters.aws.usage import DynamoUsageStore, transaction_conflict
from nanobot_lambda.core import texts
from nanobot_lambda.core.errors import StorageError
from nanobot_lambda.core.jobs import (
    AnnouncementJob,
    ContinuationJob,
    CronTaskJob,
    HeartbeatJob,
    SubagentJob,
    TelegramUpdateJob,
)
from nanobot_lambda.core.model import Usage
from nanobot_lambda.core.usage import describe
from nanobot_lambda.core.usage_counts import Tally
from nanobot_lambda.functions.agent_turn.kinds import job_ids
from nanobot_lambda.functions.agent_turn.queued import QueuedJob


def test_a_calls_usage_becomes_a_tally() -> None:
    priced = Tally.of_call(Usage(1000, 50, 400, 0.00123))
    unpriced = Tally.of_call(Usage(10, 5))
    assert priced == Tally(
        model_calls=1,
        prompt_tokens=1000,
        completion_tokens=50,
        cached_tokens=400,
        cost_usd=Decimal("0.00123"),
    )
    assert unpriced.unpriced_calls == 1 and not unpriced.cost_known
    both = priced + unpriced
    assert both.model_calls == 2 and both.cost_known and both.cost_usd == Decimal("0.00123")


def test_period_texts() -> None:
    tally = Tally(
        turns=12,
        model_calls=30,
        tool_calls=7,
        prompt_tokens=123456,
        completion_tokens=7890,
        cached_tokens=100000,
        cost_usd=Decimal("0.123456"),
        unpriced_calls=2,
    )
    assert describe(tally) == (
        "12 turns, 30 model calls, 7 tool calls · tokens: 123,456 in (100,000 cached), "
        "7,890 out · $0.1235 (+ 2 calls without a price)"
    )
    assert describe(Tally()) == texts.load("usage_none")
    unpriced = Tally(model_calls=1, unpriced_calls=1)
    assert describe(unpriced).endswith(texts.load("usage_cost_unknown"))


GROUP_CHAT = {"id": -100, "type": "supergroup", "title": "Team"}
UPDATE = TelegramUpdateJob(
    update={
        "update_id": 42,
        "message": {
            "message_id": 7,
            "date": 1,
            "chat": GROUP_CHAT,
            "from": {"id": 5, "first_name": "Bo"},
            "text": "secret",
        },
    }
)
PRESS = TelegramUpdateJob(
    update={
        "update_id": 43,
        "callback_query": {
            "id": "q1",
            "from": {"id": 5, "first_name": "Bo"},
            "message": {"message_id": 8, "date": 1, "chat": GROUP_CHAT, "text": "Pick"},
            "data": "x",
        },
    }
)


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        (UPDATE, {"job_kind": "telegram_update", "chat_id": -100, "update_id": 42}),
        # A press: the chat of the message the button was under.
        (PRESS, {"job_kind": "telegram_update", "chat_id": -100, "update_id": 43}),
        # No chat to name: the job is refused (sqs_records.py), its other ids still logged.
        (
            TelegramUpdateJob(update={"update_id": 44, "my_chat_member": {}}),
            {"job_kind": "telegram_update", "update_id": 44},
        ),
        (
            CronTaskJob(job_id="j1", chat_id=5, name="n", message="private words"),
            {"job_kind": "cron_task", "chat_id": 5, "job_id": "j1"},
        ),
        (
            SubagentJob(subagent_id="s1", chat_id=5, label="l", task="t"),
            {"job_kind": "subagent", "chat_id": 5, "subagent_id": "s1"},
        ),
        (
            AnnouncementJob(subagent_id="s1", chat_id=5, label="l", succeeded=True, result="r"),
            {"job_kind": "announcement", "chat_id": 5, "subagent_id": "s1"},
        ),
        (
            HeartbeatJob(chat_id=5, tasks="t", fired_at="f"),
            {"job_kind": "heartbeat", "chat_id": 5},
        ),
        (
            ContinuationJob(job=UPDATE, part=2),
            {"job_kind": "continuation", "chat_id": -100, "update_id": 42},
        ),
    ],
)
def test_correlation_ids_are_ids_only(job: Any, expected: dict[str, object]) -> None:
    keys = job_ids(QueuedJob.of(job))
    assert keys == expected
    assert set(keys) <= set(CORRELATION_KEYS)


def cancelled(*codes: str) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
            "CancellationReasons": [{"Code": code} for code in codes],
        },  # type: ignore[typeddict-unknown-key]
        "TransactWriteItems",
    )


class FlakyDynamo:
    def __init__(self, *errors: ClientError) -> None:
        self.errors = list(errors)
        self.calls = 0

    def transact_write_items(self, **_: Any) -> None:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)


def test_only_pure_conflicts_are_tried_again() -> None:
    assert transaction_conflict(cancelled("None", "TransactionConflict"))
    assert not transaction_conflict(cancelled("ConditionalCheckFailed", "TransactionConflict"))
    assert not transaction_conflict(cancelled("None", "None"))

    dynamo = FlakyDynamo(cancelled("TransactionConflict"), cancelled("None", "TransactionConflict"))
    DynamoUsageStore("t", dynamo, timezone="UTC").add(1, Tally(turns=1), datetime.now(UTC))  # type: ignore[arg-type]
    assert dynamo.calls == 3

    failing = FlakyDynamo(*[cancelled("TransactionConflict")] * 3)
    with pytest.raises(StorageError) as raised:
        DynamoUsageStore("t", failing, timezone="UTC").add(1, Tally(turns=1), datetime.now(UTC))  # type: ignore[arg-type]
    assert failing.calls == 3
    assert isinstance(raised.value.__cause__, ClientError)


def test_correlated_keys_last_as_long_as_the_job(capsys: pytest.CaptureFixture[str]) -> None:
    """As agent_turn's handler has it (sqs_records.py, `correlate`): the record's ids while
    its job is processed, the message id alone for a record that is not a job."""
    from aws_lambda_powertools import Logger
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

    from nanobot_lambda.adapters.aws.log_correlation import correlated
    from nanobot_lambda.functions.agent_turn.sqs_records import RecordRunner

    logger = Logger(service="correlation-test")

    class Turns:
        def process(self, queued: QueuedJob, remaining_ms: Any = None) -> None:
            logger.info("inside")

        def give_up(self, queued: QueuedJob) -> None: ...

    class Queue:
        def retry_after(self, receipt_handle: str, seconds: int) -> None:
            logger.info("retried")

    def record(body: str) -> SQSRecord:
        attributes = {"ApproximateReceiveCount": "1"}
        return SQSRecord(
            {"messageId": "m-7", "receiptHandle": "r-7", "body": body, "attributes": attributes}
        )

    runner = RecordRunner(
        Turns(),
        Queue(),
        max_receive_count=3,
        backoff_seconds=10,
        correlate=partial(correlated, logger),
    )
    runner.run(record(UPDATE.model_dump_json()))
    with pytest.raises(ValueError):
        runner.run(record("not a job"))
    logger.info("after")
    lines = capsys.readouterr().out.splitlines()
    inside, *unparsable, after = (json.loads(line) for line in lines if line.startswith("{"))
    assert (inside["turn_id"], inside["update_id"], inside["chat_id"]) == ("m-7", 42, -100)
    assert unparsable and all(
        line["turn_id"] == "m-7" and "chat_id" not in line for line in unparsable
    )
    assert not set(CORRELATION_KEYS) & set(after)
