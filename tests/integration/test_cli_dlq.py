"""`dlq list|replay` on the template's queues (moto server): a turn moved to the dead-letter
queue by the redrive policy is listed without being consumed, and replayed into the turn queue."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from nanobot_lambda.adapters.aws.queue import SqsTurnQueue
from nanobot_lambda.core.jobs import CronTaskJob, TelegramUpdateJob
from nanobot_lambda.operator.cli import main
from nanobot_lambda.operator.local.cfn import TemplateContext
from tests.conftest import telegram_update
from tests.support.deployed import deploy_stack

SECRET_TEXT = "my bank password is hunter2"


def fail_until_dead_lettered(sqs: Any, queue_url: str) -> None:
    """Receive without deleting, as failing turns do, until the redrive policy moves them."""
    for _ in range(10):
        received = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0
        )
        if not received.get("Messages"):
            return
    raise AssertionError("the redrive policy did not move the messages")


@pytest.fixture
def dead_letters(resources: TemplateContext) -> dict[str, str]:
    """A cron task moved to the DLQ by the redrive policy, and two turns of one chat (sent there
    directly: moto's redrive of several messages of one FIFO group is not SQS's); id -> kind."""
    sqs = boto3.client("sqs")
    queue_url, dlq_url = resources.refs["TurnQueue"], resources.refs["TurnDeadLetterQueue"]
    task = CronTaskJob(job_id="ab12cd34", chat_id=222, name="news", message=SECRET_TEXT)
    cron_id = SqsTurnQueue(queue_url, sqs).enqueue(task, "cron:ab12cd34", "cron-1")
    fail_until_dead_lettered(sqs, queue_url)
    update = telegram_update("text_private")
    update["message"]["text"] = SECRET_TEXT
    dead = SqsTurnQueue(dlq_url, sqs)
    first = dead.enqueue(TelegramUpdateJob(update=update), "telegram:111111111", "update-1")
    second_update = {**update, "update_id": update["update_id"] + 1}
    second = dead.enqueue(TelegramUpdateJob(update=second_update), "telegram:111111111", "u-2")
    return {cron_id: "cron_task", first: "telegram_update", second: "telegram_update"}


def queue_counts(url: str) -> tuple[int, int]:
    """(visible, in flight) messages of a queue."""
    attributes = boto3.client("sqs").get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return (
        int(attributes["ApproximateNumberOfMessages"]),
        int(attributes["ApproximateNumberOfMessagesNotVisible"]),
    )


@pytest.fixture
def stack(resources: TemplateContext) -> str:
    return deploy_stack(resources)


def test_list_describes_without_consuming_or_revealing_text(
    dead_letters: dict[str, str],
    stack: str,
    resources: TemplateContext,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["dlq", "list", "--stack", stack]) == 0
    out = capsys.readouterr().out
    assert SECRET_TEXT not in out and "hunter2" not in out
    lines = out.splitlines()
    update_id = telegram_update("text_private")["update_id"]
    assert any(
        f"group telegram:111111111  telegram_update message update_id {update_id} chat 111111111"
        in line
        for line in lines
    )
    assert any("group cron:ab12cd34  cron_task chat 222 job_id ab12cd34" in line for line in lines)
    assert "bytes" in lines[0] and "queued 20" in lines[0]
    assert {line.split()[0] for line in lines[:-1]} == set(dead_letters)
    assert lines[-1] == "3 message(s)."
    # Nothing consumed, nothing left invisible.
    assert queue_counts(resources.refs["TurnDeadLetterQueue"]) == (3, 0)


def test_replay_sends_back_in_order_then_deletes(
    dead_letters: dict[str, str],
    stack: str,
    resources: TemplateContext,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sqs = boto3.client("sqs")
    assert main(["dlq", "replay", "--all", "--stack", stack]) == 0
    assert "Replayed 3 message(s) into the turn queue." in capsys.readouterr().out

    assert main(["dlq", "list", "--stack", stack]) == 0
    assert "The dead-letter queue is empty." in capsys.readouterr().out

    received = []
    for _ in range(4):  # FIFO: one group's next message comes once the previous is deleted
        batch = sqs.receive_message(
            QueueUrl=resources.refs["TurnQueue"],
            MaxNumberOfMessages=10,
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        for message in batch:
            received.append(message)
            sqs.delete_message(
                QueueUrl=resources.refs["TurnQueue"], ReceiptHandle=message["ReceiptHandle"]
            )
    groups = [message["Attributes"]["MessageGroupId"] for message in received]
    assert sorted(groups) == ["cron:ab12cd34", "telegram:111111111", "telegram:111111111"]
    chat_updates = [
        json.loads(message["Body"])["update"]["update_id"]
        for message in received
        if message["Attributes"]["MessageGroupId"] == "telegram:111111111"
    ]
    assert chat_updates == sorted(chat_updates)  # the chat's order is kept
    dedup_ids = {message["Attributes"]["MessageDeduplicationId"] for message in received}
    assert dedup_ids == {f"replay-{message_id}" for message_id in dead_letters}


def test_replay_one_by_id_and_report_unknown_ids(
    dead_letters: dict[str, str],
    stack: str,
    resources: TemplateContext,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cron_id = next(mid for mid, kind in dead_letters.items() if kind == "cron_task")
    assert main(["dlq", "replay", cron_id, "no-such-id", "--stack", stack]) == 1
    captured = capsys.readouterr()
    assert f"replayed {cron_id} (cron_task chat 222 job_id ab12cd34)" in captured.out
    assert "error: no message no-such-id in the dead-letter queue" in captured.err

    assert queue_counts(resources.refs["TurnDeadLetterQueue"]) == (2, 0)  # the others, visible
    assert main(["dlq", "list", "--stack", stack]) == 0
    out = capsys.readouterr().out
    assert cron_id not in out and "telegram_update" in out
    assert queue_counts(resources.refs["TurnQueue"]) == (1, 0)


def test_replay_needs_ids_or_all(stack: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dlq", "replay", "--stack", stack]) == 2
    assert "give message ids (from dlq list) or --all" in capsys.readouterr().err


def test_the_dead_letter_queue_from_the_environment(
    dead_letters: dict[str, str],
    resources: TemplateContext,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("TURN_DLQ_URL", resources.refs["TurnDeadLetterQueue"])
    assert main(["dlq", "list"]) == 0
    assert "3 message(s)." in capsys.readouterr().out
    monkeypatch.delenv("TURN_QUEUE_URL", raising=False)
    assert main(["dlq", "replay", "--all"]) == 2
    assert "set TURN_QUEUE_URL" in capsys.readouterr().err
