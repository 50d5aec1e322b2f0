"""The turn journal and the outbox on moto server, with the local Bot API as Telegram."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.journal import (
    MAX_CHECKPOINT_BYTES,
    DynamoTurnJournal,
    turn_sort_key,
)
from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.adapters.telegram.client import TelegramBot, TelegramError
from nanobot_lambda.core.journal import (
    Aside,
    Shown,
    TurnProgress,
    identity,
    progress_in,
    with_aside,
)
from nanobot_lambda.functions.agent_turn.outbox import JournaledOutbox
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
    """The Bot API client, its retries at once (what they do is checked, not how long they
    wait: a refused part costs 3.5 s otherwise)."""
    return TelegramBot(SecretStr(TOKEN), api.base_url, sleep=lambda seconds: None)


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
    assert (again.iterations, again.sends, sorted(again.sent)) == (1, 1, [1, 2])
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


def test_a_checkpoint_over_the_item_limit_is_kept_with_its_longest_strings_cut(
    journal: DynamoTurnJournal,
) -> None:
    """A huge tool result (incompressible here) is cut in the middle, with a note, and the
    record is kept: skipped, an `answered` record would be lost too, and the retry would ask
    the model again instead of saving the answer it sent."""
    noise = os.urandom(MAX_CHECKPOINT_BYTES).hex()
    arguments = json.dumps({"path": "big.bin"})
    function = {"name": "read_file", "arguments": arguments}
    call = {
        "role": "assistant",
        "content": "Reading.",
        "tool_calls": [{"id": "c1", "function": function}],
    }
    result = {"role": "tool", "tool_call_id": "c1", "content": noise}
    progress = TurnProgress("update-4", messages=[call, result], iterations=1, answered=True)
    journal.checkpoint(KEY, progress)

    stored = journal.get(KEY, "update-4")
    assert stored.recorded and stored.answered and stored.iterations == 1
    kept_call, kept_result = stored.messages
    assert kept_call == call  # short strings and names stay whole
    assert kept_result["tool_call_id"] == "c1"
    content = kept_result["content"]
    assert "chars not saved" in content and len(content) < len(noise)
    assert content.startswith(noise[:10_000]) and content.endswith(noise[-2_000:])


def test_a_send_recorded_twice_is_reported_not_raised(journal: DynamoTurnJournal) -> None:
    progress = TurnProgress("update-5")
    first, second = Shown(identity("text", "one"), "one"), Shown(identity("text", "two"), "two")
    journal.record_send(KEY, progress, 1, first)
    journal.record_send(KEY, TurnProgress("update-5"), 1, second)  # a second run sent one too
    assert journal.get(KEY, "update-5").sent == {1: first}  # the first record stands


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
    assert again.parts == {(1, 1), (1, 2)} and again.sent == {}
    # The retry says something else (a model rarely writes the same twice): the message the
    # user began reading is finished first, from its first part not yet accepted, then set
    # aside (it was shown), and the new text is sent as the turn's message 1.
    JournaledOutbox(bot(bot_api), journal, KEY, again).send(111111111, "A different answer.")
    assert part_numbers(bot_api) == ["Part 1", "Part 2", "Part 3", "Part 4", "A different answer."]
    recorded = open_turn(sessions, journal, "update-6")
    assert recorded.sent == {
        1: Shown(identity("text", "A different answer."), "A different answer.")
    }
    assert recorded.aside == [Aside(0, long_message(4))]
    assert recorded.parts == set() and recorded.partial is None


def test_a_retry_that_answers_differently_sends_its_answer_and_keeps_what_was_shown(
    journal: DynamoTurnJournal, sessions: DynamoSessionStore, bot_api: LocalBotApi
) -> None:
    """Run 1 sent its progress text, then died in the tool. Run 2's model answers at once: the
    answer is not taken for the progress text sent under its number; it is sent, and the
    progress text is kept aside, so the turn saves both, in the order the user saw them."""
    first = TurnProgress("update-9")
    JournaledOutbox(bot(bot_api), journal, KEY, first).send(111111111, "Let me check…")
    del first  # the container is gone

    again = open_turn(sessions, journal, "update-9")
    JournaledOutbox(bot(bot_api), journal, KEY, again).send(111111111, "It is 42.", record=False)
    assert [m.plain_text for m in bot_api.messages] == ["Let me check…", "It is 42."]
    recorded = open_turn(sessions, journal, "update-9")
    assert recorded.sent == {} and recorded.aside == [Aside(0, "Let me check…")]
    answer = {"role": "assistant", "content": "It is 42."}
    assert with_aside([answer], recorded.aside) == [
        {"role": "assistant", "content": "Let me check…"},
        answer,
    ]


def test_an_ended_turn_is_recorded_with_its_message_number(
    journal: DynamoTurnJournal, sessions: DynamoSessionStore
) -> None:
    progress = TurnProgress("update-10")
    journal.record_send(
        KEY, progress, 1, Shown(identity("text", "File too large"), "File too large")
    )
    journal.end(KEY, progress, "model_error", 2)
    recorded = open_turn(sessions, journal, "update-10")
    assert (recorded.ended, recorded.ended_at, sorted(recorded.sent)) == ("model_error", 2, [1])
    journal.checkpoint(KEY, recorded)  # a checkpoint keeps it
    assert open_turn(sessions, journal, "update-10").ended == "model_error"


def test_the_last_part_of_the_final_answer_is_left_to_the_save(
    journal: DynamoTurnJournal, sessions: DynamoSessionStore, bot_api: LocalBotApi
) -> None:
    progress = TurnProgress("update-7")
    JournaledOutbox(bot(bot_api), journal, KEY, progress).send(
        111111111, long_message(3), record=False
    )
    recorded = open_turn(sessions, journal, "update-7")
    assert recorded.parts == {(1, 1), (1, 2)}
    assert recorded.sent == {}  # the transaction that saves the turn records the rest


def test_parts_survive_a_checkpoint_and_an_old_record_of_whole_messages_still_reads(
    journal: DynamoTurnJournal,
    sessions: DynamoSessionStore,
    bot_api: LocalBotApi,
    resources: TemplateContext,
) -> None:
    # As recorded before messages had identities: message 1 by number only (a number set).
    dynamodb_client().put_item(
        TableName=resources.refs["SessionsTable"],
        Item={
            "pk": {"S": KEY},
            "sk": {"S": turn_sort_key("update-8")},
            "sent": {"NS": ["1"]},
            "iterations": {"N": "0"},
            "sends": {"N": "0"},
        },
    )
    outbox = JournaledOutbox(bot(bot_api), journal, KEY, open_turn(sessions, journal, "update-8"))
    outbox.send(111111111, "sent by the old run, said otherwise now")  # skipped, as then
    BotApiFaults(bot_api).fail("sendMessage", 502, times=-1, when=lambda p: "Part 2" in p["text"])
    with pytest.raises(TelegramError):
        outbox.send(111111111, long_message(2))
    progress = open_turn(sessions, journal, "update-8")
    progress.iterations = 1
    journal.checkpoint(KEY, progress)  # an iteration recorded later keeps what was sent

    resumed = open_turn(sessions, journal, "update-8")
    assert (resumed.sent, resumed.parts) == ({1: Shown(None)}, {(2, 1)})
    assert resumed.partial == (2, long_message(2))
    assert part_numbers(bot_api) == ["Part 1"]
