"""What the chat is told when a job fails for the last time (dispatch.py, `give_up`), by how far
its turn got: a turn that failed before answering is told its message could not be processed;
one whose answer was sent and whose save failed on every attempt (recorded `answered`,
saving.py) is not — the person read the answer — but is told the exchange may be missing from
the assistant's memory; one that was saved is told nothing. A record that cannot be read falls
back to `could_not_process`.

The jobs go through the queue's side (sqs_records.py, `RecordRunner`) as SQS delivers them,
once per receive, up to the last attempt; the turns run on in-memory fakes (test_turns.py)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from nanobot_lambda.core import texts
from nanobot_lambda.core.errors import ChannelError, StorageError
from nanobot_lambda.core.jobs import AnyJob, ContinuationJob
from nanobot_lambda.core.sessions import SessionHistory
from nanobot_lambda.functions.agent_turn.sqs_records import RecordRunner
from tests.support.fakes import RecordingChannel, ScriptedModel, text
from tests.unit.test_records import RecordingQueue
from tests.unit.test_save_after_send import BUSY
from tests.unit.test_turns import SESSION, Bot, cron_task, message

ATTEMPTS = 3  # TURN_MAX_RECEIVE_COUNT
COULD_NOT_PROCESS = texts.load("could_not_process")
NOT_SAVED = texts.load("answer_not_saved")


def deliver_until_dead_lettered(bot: Bot, job: AnyJob, failure: type[BaseException]) -> None:
    """Deliver `job` as SQS does, each attempt failing with `failure`, the last included."""
    runner = RecordRunner(
        bot.service, RecordingQueue(), max_receive_count=ATTEMPTS, backoff_seconds=10
    )
    for receives in range(1, ATTEMPTS + 1):
        record = SQSRecord(
            {
                "messageId": "m-1",
                "receiptHandle": f"receipt-{receives}",
                "body": job.model_dump_json(),
                "attributes": {"ApproximateReceiveCount": str(receives)},
            }
        )
        with pytest.raises(failure):
            runner.run(record)


def test_an_answer_whose_save_fails_every_time_is_not_followed_by_could_not_process() -> None:
    bot = Bot(ScriptedModel(text("Hello!"), text("Hello again!")))
    bot.sessions.append_failures.extend([BUSY] * ATTEMPTS)
    deliver_until_dead_lettered(bot, message("hi"), StorageError)

    assert bot.said == ["Hello!", NOT_SAVED]  # the answer once, then why it may be forgotten
    assert len(bot.model.requests) == 1  # the retries saved, or tried to; they asked nothing
    assert bot.saved() == []
    (record,) = bot.journal.records.values()
    assert record.answered
    bot.process(message("hi"))  # `dlq replay`: saved from the record, nothing asked or sent

    assert bot.said == ["Hello!", NOT_SAVED] and len(bot.model.requests) == 1
    assert [m["content"] for m in bot.saved()] == ["hi", "Hello!"]


def test_a_scheduled_task_whose_save_fails_every_time_is_told_the_same() -> None:
    bot = Bot(ScriptedModel(text("Your notes: tea."), text("Other notes.")))
    bot.sessions.append_failures.extend([BUSY] * ATTEMPTS)
    deliver_until_dead_lettered(bot, cron_task(), StorageError)

    assert bot.said == ["Your notes: tea.", NOT_SAVED]
    assert len(bot.model.requests) == 1


class TelegramDownFor(RecordingChannel):
    """Refuses the first `refused` messages (Telegram out of reach), then takes them."""

    def __init__(self, refused: int) -> None:
        super().__init__()
        self.refused = refused

    def send_part(
        self,
        chat_id: int,
        part: str,
        *,
        thread_id: int | None = None,
        buttons: Sequence[str] = (),
    ) -> int:
        if self.refused > 0:
            self.refused -= 1
            raise ChannelError("sendMessage", None, "connection reset")
        return super().send_part(chat_id, part, thread_id=thread_id, buttons=buttons)


def test_a_turn_that_failed_before_answering_is_told_it_could_not_be_processed() -> None:
    bot = Bot(ScriptedModel(*[text("Hello!")] * ATTEMPTS), channel=TelegramDownFor(ATTEMPTS))
    deliver_until_dead_lettered(bot, message("hi"), ChannelError)

    assert bot.said == [COULD_NOT_PROCESS]  # the notice: Telegram is back by then
    assert len(bot.model.requests) == ATTEMPTS


def test_a_record_that_cannot_be_read_falls_back_to_could_not_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bot = Bot(ScriptedModel(text("Hello!")))
    bot.sessions.append_failures.append(BUSY)
    with pytest.raises(StorageError):
        bot.process(message("hi"))  # answered, its save failed: recorded `answered`

    def unreachable(key: str, limit: int) -> SessionHistory:
        raise StorageError("DynamoSessionStore.load: DynamoDB was busy")

    monkeypatch.setattr(bot.sessions, "load", unreachable)
    bot.give_up(message("hi"))

    assert bot.said == ["Hello!", COULD_NOT_PROCESS]


def test_a_turn_saved_before_its_job_failed_tells_the_chat_nothing() -> None:
    """Something after the save failed (the turn's bookkeeping, its indexing): the person has
    the answer and the session holds it."""
    bot = Bot(ScriptedModel(text("Hello!")))
    bot.process(message("hi"))
    bot.give_up(message("hi"))

    assert bot.said == ["Hello!"]
    assert bot.sessions.recent[SESSION] == ("update-800000001",)


def test_a_continuation_is_judged_by_the_turn_it_carries() -> None:
    bot = Bot(ScriptedModel(text("Hello!")))
    bot.sessions.append_failures.append(BUSY)
    with pytest.raises(StorageError):
        bot.process(message("hi"))
    bot.give_up(ContinuationJob(job=message("hi"), part=2))

    assert bot.said == ["Hello!", NOT_SAVED]
