"""The turn journal and the outbox on moto server, with the local Bot API as Telegram."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.journal import MAX_CHECKPOINT_BYTES, DynamoTurnJournal
from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.adapters.telegram.client import TelegramBot, TelegramError
from nanobot_lambda.core.journal import TurnProgress, progress_in
from nanobot_lambda.entry.agent_turn.outbox import JournaledOutbox
from nanobot_lambda.operator.local.bot_api import LocalBotApi
from nanobot_lambda.operator.local.cfn import TemplateContext
from tests.support.faults import BotApiFaults

KEY = "telegram:111111111"
TOKEN = "123:journal-test"


@pytest.fixture
def journal(resources: TemplateContext) -> DynamoTurnJournal:
    return DynamoTurnJournal(resources.refs["SessionsTable"], dynamodb_client())


@pytest.fixture
def sessions(resources: TemplateContext) -> DynamoSessionStore:
    return DynamoSessionStore(resources.refs["SessionsTable"], dynamodb_client())


@pytest.fixture
def bot_api() -> Iterator[LocalBotApi]:
    api = LocalBotApi(TOKEN).start()
    yield api
    api.stop()


def bot(api: LocalBotApi) -> TelegramBot:
    return TelegramBot(SecretStr(TOKEN), api.base_url)


def open_turn(
    sessions: DynamoSessionStore, journal: DynamoTurnJournal, turn_id: str
) -> TurnProgress:
    """What a new run of the turn finds: its item, returned by the session Query."""
    history = sessions.load(KEY, 50)
    return progress_in(history, turn_id)


def test_a_run_that_died_after_a_send_is_resumed_without_sending_it_again(
    journal: DynamoTurnJournal, sessions: DynamoSessionStore, bot_api: LocalBotApi
) -> None:
    # Run 1: one iteration recorded, then a message sent (and recorded) before the process died.
    first = TurnProgress("update-1")
    outbox = JournaledOutbox(bot(bot_api), journal, KEY, first)
    outbox.send(111111111, "Step 1 done")
    first.messages, first.iterations, first.sends = [{"role": "assistant", "content": "s1"}], 1, 1
    journal.checkpoint(KEY, first)
    outbox.send(111111111, "Step 2 done")
    del outbox, first  # the container is gone

    # Run 2 resumes from the checkpoint and makes the same sends again, then its answer.
    again = open_turn(sessions, journal, "update-1")
    assert (again.iterations, again.sends, again.sent) == (1, 1, {1, 2})
    assert again.messages == [{"role": "assistant", "content": "s1"}]
    outbox = JournaledOutbox(bot(bot_api), journal, KEY, again)
    outbox.send(111111111, "Step 2 done")  # number 2: sent by run 1, skipped
    outbox.send(111111111, "All done.", record=False)
    assert [m.plain_text for m in bot_api.messages] == ["Step 1 done", "Step 2 done", "All done."]


def test_saving_the_turn_closes_its_journal_and_remembers_it(
    journal: DynamoTurnJournal, sessions: DynamoSessionStore
) -> None:
    progress = TurnProgress("update-2", messages=[{"role": "assistant", "content": "x"}])
    progress.iterations = 1
    journal.checkpoint(KEY, progress)
    history = sessions.load(KEY, 50)
    assert len(history.open_turns) == 1
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    sessions.append(history, messages, turn_id="update-2", also=journal.finish(KEY, progress))

    reloaded = sessions.load(KEY, 50)
    assert reloaded.open_turns == {}
    assert reloaded.recent_turns == ("update-2",)
    assert [m["content"] for m in reloaded.messages] == ["hi", "hello"]


def test_recent_turns_keep_the_latest_twenty(sessions: DynamoSessionStore) -> None:
    for n in range(25):
        history = sessions.load(KEY, 50)
        sessions.append(history, [{"role": "user", "content": str(n)}], turn_id=f"t{n}")
    assert sessions.load(KEY, 50).recent_turns == tuple(f"t{n}" for n in range(5, 25))


def test_an_open_turn_does_not_shorten_the_history_window(
    journal: DynamoTurnJournal, sessions: DynamoSessionStore
) -> None:
    history = sessions.load(KEY, 4)
    sessions.append(history, [{"role": "user", "content": str(n)} for n in range(6)])
    journal.checkpoint(KEY, TurnProgress("update-3"))
    loaded = sessions.load(KEY, 4)
    assert [m["content"] for m in loaded.messages] == ["2", "3", "4", "5"]
    assert len(loaded.open_turns) == 1 and loaded.next_seq == 6


def test_turns_without_a_session_are_marked_done(journal: DynamoTurnJournal) -> None:
    key = "subagent:abc"
    assert journal.get(key, "subagent-abc") == TurnProgress("subagent-abc")
    progress = TurnProgress("subagent-abc")
    journal.checkpoint(key, progress)
    assert journal.get(key, "subagent-abc").recorded
    journal.mark_done(key, progress)
    assert journal.get(key, "subagent-abc").done


def test_a_checkpoint_too_big_for_an_item_is_skipped_not_fatal(journal: DynamoTurnJournal) -> None:
    noise = os.urandom(MAX_CHECKPOINT_BYTES).hex()  # incompressible
    progress = TurnProgress("update-4", messages=[{"role": "tool", "content": noise}])
    journal.checkpoint(KEY, progress)
    assert not journal.get(KEY, "update-4").recorded


def test_a_send_recorded_twice_is_reported_not_raised(journal: DynamoTurnJournal) -> None:
    progress = TurnProgress("update-5")
    journal.record_send(KEY, progress, 1)
    journal.record_send(KEY, TurnProgress("update-5"), 1)  # a second run sent it too
    assert journal.get(KEY, "update-5").sent == {1}


def long_message(parts: int) -> str:
    """Markdown that goes out as `parts` Telegram messages (paragraphs of 3,000 characters)."""
    return "\n\n".join(f"Part {n}: " + "word " * 600 for n in range(1, parts + 1))


def part_numbers(api: LocalBotApi) -> list[str]:
    return [message.plain_text.split(":")[0] for message in api.messages]


def test_each_part_telegram_accepted_is_recorded_before_the_next_is_sent(
    journal: DynamoTurnJournal, sessions: DynamoSessionStore, bot_api: LocalBotApi
) -> None:
    faults = BotApiFaults(bot_api)
    faults.fail("sendMessage", 502, times=-1, when=lambda p: p["text"].startswith("Part 3"))
    first = TurnProgress("update-6")
    with pytest.raises(TelegramError):  # part 3 never gets through: the run dies there
        JournaledOutbox(bot(bot_api), journal, KEY, first).send(111111111, long_message(4))
    assert part_numbers(bot_api) == ["Part 1", "Part 2"]

    faults.clear()
    again = open_turn(sessions, journal, "update-6")
    assert again.parts == {(1, 1), (1, 2)} and again.sent == set()
    # The retry asks for another text (a model rarely writes the same twice): the message the
    # user began reading is finished instead, from its first part not yet accepted.
    JournaledOutbox(bot(bot_api), journal, KEY, again).send(111111111, "A different answer.")
    assert part_numbers(bot_api) == ["Part 1", "Part 2", "Part 3", "Part 4"]
    assert open_turn(sessions, journal, "update-6").sent == {1}


def test_the_last_part_of_the_final_answer_is_left_to_the_save(
    journal: DynamoTurnJournal, sessions: DynamoSessionStore, bot_api: LocalBotApi
) -> None:
    progress = TurnProgress("update-7")
    JournaledOutbox(bot(bot_api), journal, KEY, progress).send(
        111111111, long_message(3), record=False
    )
    recorded = open_turn(sessions, journal, "update-7")
    assert recorded.parts == {(1, 1), (1, 2)}
    assert recorded.sent == set()  # the transaction that saves the turn records the rest


def test_parts_survive_a_checkpoint_and_an_old_record_of_whole_messages_still_reads(
    journal: DynamoTurnJournal, sessions: DynamoSessionStore, bot_api: LocalBotApi
) -> None:
    progress = TurnProgress("update-8", sent={1})  # as recorded before messages had parts
    journal.checkpoint(KEY, progress)
    outbox = JournaledOutbox(bot(bot_api), journal, KEY, open_turn(sessions, journal, "update-8"))
    outbox.send(111111111, "sent by the old run")  # skipped, as then
    BotApiFaults(bot_api).fail("sendMessage", 502, times=-1, when=lambda p: "Part 2" in p["text"])
    with pytest.raises(TelegramError):
        outbox.send(111111111, long_message(2))
    progress = open_turn(sessions, journal, "update-8")
    progress.iterations = 1
    journal.checkpoint(KEY, progress)  # an iteration recorded later keeps what was sent

    resumed = open_turn(sessions, journal, "update-8")
    assert (resumed.sent, resumed.parts) == ({1}, {(2, 1)})
    assert resumed.text_of(2) == long_message(2) and resumed.text_of(1) is None
    assert part_numbers(bot_api) == ["Part 1"]
