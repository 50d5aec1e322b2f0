"""What a cancelled session save means, read from its `CancellationReasons` (one code per item,
in the order of the items: the messages, the header, then the writes other stores folded in).

The causes moto server cannot make (a concurrent transaction, throttling) are given here as AWS
sends them, by a client that fails as told; those it can make are in
tests/integration/test_dynamo_sessions.py and the contract suite. Only a session that moved is
a SessionConflict (the saver reloads and tries again): a refused folded write is that store's
conflict, a busy table is tried again in place and then a StorageError (the job's retry)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nanobot_lambda.adapters.aws.journal import DynamoTurnJournal
from nanobot_lambda.adapters.aws.sessions import WRITE_ATTEMPTS, DynamoSessionStore
from nanobot_lambda.adapters.aws.usage import DynamoUsageStore
from nanobot_lambda.core.errors import StorageConflict, StorageError
from nanobot_lambda.core.journal import TurnProgress
from nanobot_lambda.core.ports import StoredWrite
from nanobot_lambda.core.sessions import SessionConflict, SessionHistory
from nanobot_lambda.core.usage_counts import Tally
from tests.support.fakes import ScriptedModel, text
from tests.unit.test_turns import SESSION, Bot, message
from tests.unit.test_usage import FlakyDynamo, cancelled

KEY = "telegram:1"
TURN = [{"role": "user", "content": "private words"}, {"role": "assistant", "content": "reply"}]
# The items of TURN's transaction with the folded writes below: 2 messages, the header, the
# journal's closing, the usage counts (day, month, total).
PLACES = {"message": 0, "header": 2, "journal": 3, "usage_total": 6}


def folded() -> list[StoredWrite]:
    progress = TurnProgress("t1", recorded=True)
    closing = DynamoTurnJournal("table", FlakyDynamo()).finish(KEY, progress)  # type: ignore[arg-type]
    usage = DynamoUsageStore("table", FlakyDynamo(), timezone="UTC")  # type: ignore[arg-type]
    return [*closing, *usage.updates(1, Tally(turns=1), datetime(2026, 11, 22, tzinfo=UTC))]


def reasons(**at: str) -> list[str]:
    """The reasons of TURN's transaction: "None" but where given (header="...", ...)."""
    codes = ["None"] * (PLACES["usage_total"] + 1)
    for place, code in at.items():
        codes[PLACES[place]] = code
    return codes


def save(dynamo: FlakyDynamo) -> SessionHistory:
    history = SessionHistory(KEY, next_seq=4)
    DynamoSessionStore("table", dynamo).append(history, TURN, turn_id="t1", also=folded())  # type: ignore[arg-type]
    return history


def failed_once(codes: list[str]) -> StorageError:
    """The error of a save cancelled for `codes`, which was not tried again; it never holds
    the messages' text."""
    dynamo = FlakyDynamo(cancelled(*codes))
    with pytest.raises(StorageError) as failed:
        save(dynamo)
    assert dynamo.calls == 1
    assert "private words" not in str(failed.value)
    return failed.value


@pytest.mark.parametrize(
    "codes",
    [
        reasons(message="ConditionalCheckFailed"),  # a message's place was taken
        reasons(header="ConditionalCheckFailed"),  # the header's next_seq moved
        reasons(header="ConditionalCheckFailed", journal="ConditionalCheckFailed"),
    ],
)
def test_a_failed_condition_of_the_session_s_own_items_is_a_session_conflict(
    codes: list[str],
) -> None:
    assert isinstance(failed_once(codes), SessionConflict)


@pytest.mark.parametrize(
    ("codes", "named"),
    [
        (reasons(journal="ConditionalCheckFailed"), "the turn journal's record, a folded Delete"),
        (
            reasons(usage_total="ConditionalCheckFailed", header="TransactionConflict"),
            "the usage counts (total), a folded Update",
        ),
    ],
)
def test_a_failed_condition_of_a_folded_write_is_that_store_s_conflict(
    codes: list[str], named: str
) -> None:
    """Not the session's: a reload cannot change it, so it is neither retried here nor
    reloaded by the saver; the error names the store, never the messages."""
    refused = failed_once(codes)
    assert isinstance(refused, StorageConflict) and not isinstance(refused, SessionConflict)
    assert named in str(refused)


@pytest.mark.parametrize("busy", ["TransactionConflict", "ThrottlingError"])
def test_a_busy_table_is_tried_again_in_place(busy: str) -> None:
    """A concurrent transaction on an item (another chat's turn adding to the usage of all
    chats) or throttling: the same transaction, sent again after a moment, goes through."""
    dynamo = FlakyDynamo(cancelled(*reasons(usage_total=busy)), cancelled(*reasons(header=busy)))
    history = save(dynamo)
    assert dynamo.calls == 3
    assert (history.next_seq, history.recent_turns, history.messages) == (6, ("t1",), TURN)


def test_a_table_busy_every_time_is_a_storage_error_for_the_job_s_retry() -> None:
    dynamo = FlakyDynamo(
        *[cancelled(*reasons(header="ProvisionedThroughputExceeded"))] * WRITE_ATTEMPTS
    )
    with pytest.raises(StorageError) as failed:
        save(dynamo)
    assert not isinstance(failed.value, StorageConflict)
    assert "busy (ProvisionedThroughputExceeded on the session header)" in str(failed.value)
    assert dynamo.calls == WRITE_ATTEMPTS


@pytest.mark.parametrize(
    ("codes", "named"),
    [
        (
            reasons(usage_total="ValidationError"),
            "ValidationError on the usage counts (total), a folded Update",
        ),
        (
            reasons(message="ItemCollectionSizeLimitExceeded"),
            "ItemCollectionSizeLimitExceeded on message 1 of 2",
        ),
        (reasons(), "the transaction was cancelled (no reason given)"),
        ([], "DynamoSessionStore.append: TransactionCanceledException"),  # no reasons at all
    ],
)
def test_any_other_cancellation_is_a_storage_error_naming_its_cause(
    codes: list[str], named: str
) -> None:
    failed = failed_once(codes)
    assert not isinstance(failed, StorageConflict)
    assert named in str(failed)


@pytest.mark.parametrize(
    "failure",
    [
        StorageConflict("DynamoSessionStore.append: the condition of the usage counts failed"),
        StorageError("DynamoSessionStore.append: DynamoDB was busy"),
    ],
)
def test_a_save_failing_for_another_cause_fails_the_job_and_its_retry_saves_the_turn(
    failure: StorageError,
) -> None:
    """No reload and second try by the saver (that is for a session that moved): the job fails
    as on any storage error, with nothing saved, and the run SQS delivers next saves the turn
    with the answer that was sent, without asking the model again (test_save_after_send.py)."""
    bot = Bot(ScriptedModel(text("Hello!"), text("Hello again!")))
    bot.sessions.append_failures.append(failure)
    with pytest.raises(type(failure)):
        bot.process(message("hi"))
    assert bot.saved() == [] and bot.said == ["Hello!"]
    bot.process(message("hi"))  # SQS's retry
    assert [message["content"] for message in bot.saved()] == ["hi", "Hello!"]
    assert bot.said == ["Hello!"] and len(bot.model.requests) == 1


def test_a_session_that_moved_is_saved_on_its_new_header_by_the_same_run() -> None:
    bot = Bot(ScriptedModel(text("Hello!")))
    bot.sessions.append_failures.append(SessionConflict(SESSION))
    bot.process(message("hi"))
    assert bot.said == ["Hello!"]
    assert [saved["content"] for saved in bot.saved()] == ["hi", "Hello!"]
