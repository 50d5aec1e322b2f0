"""A turn whose save fails after its answer was sent neither repeats nor loses the answer.

The save (saving.py) fails for a cause a reload cannot help (another store's folded write
refused, DynamoDB busy after its retries, another writer every time): the job fails for SQS to
retry, but first the turn is recorded `answered`, with its messages as saved. The retry resumes
it from that record: the model is not asked again (it would answer otherwise: each model below
has a different second answer scripted), nothing is sent again, and the session holds the answer
the user saw.
Turns run on in-memory fakes (see test_turns.py); the stores' own sides of this are in
tests/contract (test_turn_journal.py, test_session_store.py)."""

from __future__ import annotations

import json

import pytest

from nanobot_lambda.core.errors import StorageConflict, StorageError
from nanobot_lambda.core.journal import TurnProgress
from nanobot_lambda.core.sessions import SessionConflict
from nanobot_lambda.functions.agent_turn.saving import SAVE_ATTEMPTS
from tests.support.fakes import MemoryTurnJournal, RecordingSpeaker, ScriptedModel, text, tool
from tests.unit.test_spend_limits import limited_bot, priced
from tests.unit.test_turns import SESSION, Bot, long_answer, message
from tests.unit.test_voice_replies import voice_note

REFUSED = StorageConflict("DynamoSessionStore.append: the condition of the usage counts failed")
BUSY = StorageError("DynamoSessionStore.append: DynamoDB was busy")


def contents(bot: Bot) -> list[object]:
    return [saved["content"] for saved in bot.saved()]


@pytest.mark.parametrize(
    "failures",
    [[REFUSED], [BUSY], [SessionConflict(SESSION)] * SAVE_ATTEMPTS, [BUSY, BUSY]],
    ids=["folded-write-refused", "busy", "moved-every-time", "failing-on-the-retry-too"],
)
def test_a_save_that_fails_after_the_answer_is_saved_by_the_retry_with_that_answer(
    failures: list[StorageError],
) -> None:
    bot = Bot(ScriptedModel(text("Hello!"), text("Hello again!")))
    bot.sessions.append_failures.extend(failures)
    runs = 0
    while bot.sessions.append_failures:
        with pytest.raises(type(failures[0])):
            bot.process(message("hi"))  # SQS delivers it again until a run saves it
        runs += 1
        assert bot.saved() == []
    bot.process(message("hi"))

    assert bot.said == ["Hello!"]
    assert contents(bot) == ["hi", "Hello!"]
    assert len(bot.model.requests) == 1
    assert bot.sessions.recent[SESSION] == ("update-800000001",)
    assert bot.journal.records == {}  # closed by the save
    assert bot.usage.tallies[(111111111, "total")].model_calls == 1  # counted once
    bot.process(message("hi"))  # delivered once more, after the save: skipped
    assert bot.said == ["Hello!"] and len(bot.saved()) == 2


def test_a_failed_save_leaves_the_turn_recorded_as_answered_with_its_messages_as_saved() -> None:
    bot = Bot(ScriptedModel(text("Hello!")))
    bot.sessions.append_failures.append(BUSY)
    with pytest.raises(StorageError):
        bot.process(message("hi"))

    (record,) = bot.journal.records.values()
    assert record.answered and record.recorded
    assert record.messages == [{"role": "assistant", "content": "Hello!"}]
    assert (record.iterations, record.sends) == (1, 1)


def test_a_turn_with_tools_and_a_long_answer_is_saved_whole_without_running_anything_again() -> (
    None
):
    answer = long_answer(3)
    write = tool("write_file", json.dumps({"path": "a.md", "content": "A"}), content="On it.")
    bot = Bot(ScriptedModel(write, text(answer), text("Another answer.")))
    bot.sessions.append_failures.append(BUSY)
    with pytest.raises(StorageError):
        bot.process(message("go"))
    said = list(bot.said)
    bot.workspace.files.pop("a.md")  # were the tool run again, it would write it again
    bot.process(message("go"))

    assert bot.said == said and [s.split(":")[0] for s in said[1:]] == [
        "Part 1",
        "Part 2",
        "Part 3",
    ]
    assert said[0] == "On it."
    assert len(bot.model.requests) == 2 and "a.md" not in bot.workspace.files
    assert [m["role"] for m in bot.saved()] == ["user", "assistant", "tool", "assistant"]
    assert bot.saved()[-1]["content"] == answer


class OnlyAnsweredRecordsFit(MemoryTurnJournal):
    """A journal that loses every checkpoint of the turn's steps (their writes failed), but
    not the answered record."""

    def checkpoint(self, session_key: str, progress: TurnProgress) -> None:
        if progress.answered:
            super().checkpoint(session_key, progress)


def test_what_an_earlier_run_showed_and_a_later_one_set_aside_is_saved_where_it_was_shown() -> None:
    """The first run showed its step, sent its answer and died before its save (the window
    left: that answer was never recorded). The second run was asked anew, said something else
    (the first step's text is set aside) and its save failed. The third saves that run's turn
    with the first run's step text where it was shown, and asks and sends nothing."""
    first = tool("write_file", json.dumps({"path": "a.md", "content": "A"}), content="On it.")
    second = tool("write_file", json.dumps({"path": "a.md", "content": "A"}), content="Working.")
    model = ScriptedModel(first, text("Done."), second, text("Written."), text("Never."))
    bot = Bot(model, journal=OnlyAnsweredRecordsFit())
    bot.sessions.append_failures.append(KeyboardInterrupt())  # the process died here
    with pytest.raises(KeyboardInterrupt):
        bot.process(message("go"))
    bot.sessions.append_failures.append(BUSY)
    with pytest.raises(StorageError):
        bot.process(message("go"))
    bot.process(message("go"))

    assert bot.said == ["On it.", "Done.", "Working.", "Written."]
    assert len(bot.model.requests) == 4
    assert [(m["role"], m["content"]) for m in bot.saved()] == [
        ("user", "go"),
        ("assistant", "On it."),  # set aside, where it was shown
        ("assistant", "Working."),
        ("tool", bot.saved()[3]["content"]),
        ("assistant", "Written."),
    ]


def test_an_answer_the_message_tool_sent_is_not_sent_again_by_the_retry() -> None:
    send = tool("message", json.dumps({"content": "Here it is."}))
    bot = Bot(ScriptedModel(send, text("Here it is."), text("Something else.")))
    bot.sessions.append_failures.append(REFUSED)
    with pytest.raises(StorageConflict):
        bot.process(message("send it"))
    bot.process(message("send it"))

    assert bot.said == ["Here it is."]
    assert len(bot.model.requests) == 2
    assert bot.saved()[-1]["content"] == "Here it is."


def test_a_voice_reply_is_neither_spoken_nor_sent_again_by_the_retry() -> None:
    bot = Bot(ScriptedModel(text("Sure."), text("Of course.")), speaker=RecordingSpeaker())
    bot.channel.files["AwACAgQAAxkBAAIBVoice"] = b"OggS voice of the user"
    bot.sessions.append_failures.append(BUSY)
    with pytest.raises(StorageError):
        bot.process(voice_note())
    bot.process(voice_note())

    assert bot.said == ["Sure."] and len(bot.channel.files_sent) == 1
    assert bot.speaker is not None and bot.speaker.spoken == ["Sure."]
    assert len(bot.model.requests) == 1
    assert bot.saved()[-1]["content"] == "Sure."


class JournalDown(MemoryTurnJournal):
    """A journal that cannot record checkpoints (the table is down)."""

    def checkpoint(self, session_key: str, progress: TurnProgress) -> None:
        raise StorageError("DynamoTurnJournal.checkpoint: DynamoDB is unreachable")


def test_when_the_answered_record_cannot_be_written_either_the_retry_asks_again() -> None:
    """The window left (as after a crash): the save's own error goes to SQS, not the
    journal's, and the retry answers anew; the session holds what it sent."""
    bot = Bot(ScriptedModel(text("Hello!"), text("Hello again!")), journal=JournalDown())
    bot.sessions.append_failures.append(BUSY)
    with pytest.raises(StorageError, match="DynamoDB was busy"):
        bot.process(message("hi"))
    bot.process(message("hi"))

    assert bot.said == ["Hello!", "Hello again!"]
    assert contents(bot)[-1] == "Hello again!"


def test_a_spending_notice_answered_without_a_model_call_is_saved_without_one() -> None:
    """The answer was the spending limit's notice (no model call in the turn): the retry saves
    it and asks no model, even when the limit is gone by then (a new day)."""
    bot = limited_bot(priced("Hi.", "0.30"), text("Unseen."), person_daily="0.25")
    bot.process(message("hi", 900000001))
    bot.sessions.append_failures.append(BUSY)
    with pytest.raises(StorageError):
        bot.process(message("again", 900000002))
    notice = bot.said[-1]
    bot.usage.tallies.clear()  # the limit no longer holds
    bot.process(message("again", 900000002))

    assert bot.said == ["Hi.", notice] and "spending limit for today" in notice
    assert len(bot.model.requests) == 1
    assert contents(bot)[-2:] == ["again", notice]
