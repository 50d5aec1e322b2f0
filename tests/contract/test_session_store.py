"""The SessionStore port: DynamoSessionStore on moto server and MemorySessionStore alike."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from nanobot_lambda.core.errors import StorageConflict, StorageError
from nanobot_lambda.core.journal import TurnProgress
from nanobot_lambda.core.ports import SessionStore
from nanobot_lambda.core.sessions import (
    RECENT_TURNS,
    SAVED_MESSAGE_MAX_BYTES,
    Message,
    SessionConflict,
    TurnRecord,
    within_item_limit,
)
from tests.contract.conftest import SessionStores

KEY = "telegram:111111111"


def exchange(n: int, *, tool: bool = False) -> list[Message]:
    messages: list[Message] = [{"role": "user", "content": f"question {n}"}]
    if tool:
        call = {"id": f"c{n}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "name": "ls", "content": "x"},
        ]
    return [*messages, {"role": "assistant", "content": f"answer {n} ✓"}]


def test_a_new_session_is_empty(sessions: SessionStore) -> None:
    history = sessions.load(KEY, 50)
    assert (history.key, history.messages, history.next_seq) == (KEY, [], 0)
    assert (history.consolidated_upto, history.recent_turns, history.open_turns) == (0, (), {})


def test_appended_messages_load_back_in_order(sessions: SessionStore) -> None:
    history = sessions.load(KEY, 50)
    sessions.append(history, exchange(1, tool=True), turn_id="t1")
    assert history.next_seq == 4 and history.recent_turns == ("t1",)  # the history follows
    sessions.append(history, exchange(2))
    loaded = sessions.load(KEY, 50)
    assert loaded.messages == exchange(1, tool=True) + exchange(2)
    assert loaded.next_seq == 6 and loaded.recent_turns == ("t1",)
    assert sessions.load("telegram:222", 50).messages == []  # another session


def test_the_window_is_the_newest_messages_from_a_user_message(sessions: SessionStore) -> None:
    history = sessions.load(KEY, 50)
    for n in range(3):
        sessions.append(history, exchange(n, tool=True))
    # The newest 6 start mid-exchange (at exchange 1's tool result): the window starts at the
    # next user message instead, so no tool result is ever sent without its call.
    assert sessions.load(KEY, 6).messages == exchange(2, tool=True)
    assert sessions.load(KEY, 8).messages == exchange(1, tool=True) + exchange(2, tool=True)
    assert sessions.load(KEY, 8).next_seq == 12


def test_a_loaded_message_changed_by_its_reader_is_not_changed_in_the_store(
    sessions: SessionStore,
) -> None:
    history = sessions.load(KEY, 50)
    sessions.append(history, exchange(1))
    loaded = sessions.load(KEY, 50)
    loaded.messages[0]["content"] = "changed by the reader"
    assert sessions.load(KEY, 50).messages == exchange(1)


def test_an_append_after_another_writer_is_a_conflict_and_writes_nothing(
    sessions: SessionStore,
) -> None:
    mine = sessions.load(KEY, 50)
    theirs = sessions.load(KEY, 50)
    sessions.append(theirs, exchange(1))
    with pytest.raises(SessionConflict):
        sessions.append(mine, exchange(2), turn_id="mine")
    loaded = sessions.load(KEY, 50)
    assert loaded.messages == exchange(1) and loaded.recent_turns == ()


def test_a_message_over_the_item_limit_is_refused_and_nothing_of_the_append_is_kept(
    session_stores: SessionStores,
) -> None:
    """A message too large for one item (400 KB) is a StorageError that names it, not a
    conflict (a reload could not help): nothing of the append is made, not even the messages
    of an earlier transaction (more than 99), nor its folded writes; the text is not in it."""
    sessions, journal = session_stores.sessions, session_stores.journal
    progress = TurnProgress("t2", messages=[{"role": "assistant", "content": "so far"}])
    journal.checkpoint(KEY, progress)
    history = sessions.load(KEY, 50)
    sessions.append(history, exchange(1), turn_id="t1")
    steps: list[Message] = [{"role": "assistant", "content": f"step {n}"} for n in range(120)]
    huge: Message = {"role": "assistant", "content": "secret " + "é" * 210_000}  # 420 KB

    with pytest.raises(StorageError) as refused:
        sessions.append(
            history,
            [{"role": "user", "content": "go"}, *steps, huge],
            turn_id="t2",
            also=journal.finish(KEY, progress),
        )
    assert not isinstance(refused.value, StorageConflict)
    assert "message 122 of 122" in str(refused.value) and "secret" not in str(refused.value)
    assert (history.next_seq, history.recent_turns) == (2, ("t1",))  # the history as it was
    loaded = sessions.load(KEY, 500)
    assert loaded.messages == exchange(1) and loaded.recent_turns == ("t1",)
    assert list(loaded.open_turns) == ["t2"]  # the journal's closing was not made either

    sessions.append(history, exchange(2), turn_id="t3")  # the same history saves what fits
    assert sessions.load(KEY, 50).messages == exchange(1) + exchange(2)


def test_recent_turns_keep_the_latest(sessions: SessionStore) -> None:
    history = sessions.load(KEY, 50)
    for n in range(RECENT_TURNS + 2):
        sessions.append(history, [{"role": "user", "content": str(n)}], turn_id=f"t{n}")
    expected = tuple(f"t{n}" for n in range(2, RECENT_TURNS + 2))
    assert sessions.load(KEY, 5).recent_turns == expected


def test_turn_records_keep_the_latest_and_a_closed_turn_s_too(sessions: SessionStore) -> None:
    history = sessions.load(KEY, 50)
    for n in range(RECENT_TURNS + 2):
        record = TurnRecord(
            at=f"2026-11-29T12:00:{n:02d}+00:00",
            turn_id=f"t{n}",
            models=("openai/gpt-4o-mini",),
            model_calls=2,
            prompt_tokens=1000 + n,
            completion_tokens=50,
            cost_usd=Decimal("0.000165"),
            tools=("list_dir", "read_file"),
        )
        sessions.append(history, exchange(n), turn_id=f"t{n}", record=record)
    # A turn that ended unanswered saves no message, and its record still joins.
    closed = TurnRecord(at="2026-11-29T12:01:00+00:00", turn_id="t-x", error="model_error")
    sessions.append(history, [], turn_id="t-x", record=closed)
    loaded = sessions.load(KEY, 5).turn_log
    assert len(loaded) == RECENT_TURNS and loaded == history.turn_log
    assert [record.turn_id for record in loaded][-2:] == [f"t{RECENT_TURNS + 1}", "t-x"]
    assert loaded[-2].prompt_tokens == 1000 + RECENT_TURNS + 1
    assert loaded[-2].cost_usd == Decimal("0.000165") and loaded[-1] == closed


def test_load_range_gives_numbered_messages_in_a_half_open_range(sessions: SessionStore) -> None:
    history = sessions.load(KEY, 50)
    sessions.append(history, exchange(1, tool=True) + exchange(2))
    everything = exchange(1, tool=True) + exchange(2)
    assert sessions.load_range(KEY, 1, 3) == [(1, everything[1]), (2, everything[2])]
    assert sessions.load_range(KEY, 4, 100) == [(4, everything[4]), (5, everything[5])]
    assert sessions.load_range(KEY, 3, 3) == []
    assert sessions.load_range("telegram:222", 0, 10) == []


def test_the_cursor_moves_only_from_where_it_was(sessions: SessionStore) -> None:
    history = sessions.load(KEY, 50)
    sessions.append(history, exchange(1) + exchange(2) + exchange(3))
    assert sessions.advance_cursor(KEY, 0, 2)
    assert not sessions.advance_cursor(KEY, 0, 4)  # it had moved already
    loaded = sessions.load(KEY, 50)
    assert loaded.consolidated_upto == 2
    assert loaded.messages == exchange(2) + exchange(3)  # only what is not consolidated
    assert sessions.advance_cursor(KEY, 2, 4)
    assert sessions.load(KEY, 50).messages == exchange(3)


def test_an_append_makes_the_journal_s_closing_with_it(session_stores: SessionStores) -> None:
    sessions, journal = session_stores.sessions, session_stores.journal
    progress = TurnProgress("t1", messages=[{"role": "assistant", "content": "so far"}])
    journal.checkpoint(KEY, progress)
    history = sessions.load(KEY, 50)
    assert list(history.open_turns) == ["t1"]
    assert history.open_turns["t1"].messages == progress.messages
    sessions.append(
        history, exchange(1), turn_id="t1", also=journal.finish(KEY, history.open_turns["t1"])
    )
    loaded = sessions.load(KEY, 50)
    assert loaded.open_turns == {} and loaded.recent_turns == ("t1",)
    assert journal.get(KEY, "t1") == TurnProgress("t1")  # no record any more


def test_a_consolidation_leaves_a_notice_due_until_a_save_records_it(
    sessions: SessionStore,
) -> None:
    """`noticed_upto` (core/sessions.py): absent, nothing is due; an automatic consolidation
    moves the cursor and leaves it behind; the save of the turn that told the chat brings it
    up; /compact and /new (`noticed`) move both."""
    history = sessions.load(KEY, 50)
    sessions.append(history, [*exchange(1), *exchange(2)])
    assert sessions.load(KEY, 50).noticed_upto is None  # a session never consolidated

    assert sessions.advance_cursor(KEY, 0, 2)
    history = sessions.load(KEY, 50)
    assert (history.consolidated_upto, history.noticed_upto) == (2, 0)
    assert history.summarised_unnoticed

    history.noticed_upto = history.consolidated_upto  # the turn told the chat
    sessions.append(history, exchange(3), turn_id="update-3")
    assert not sessions.load(KEY, 50).summarised_unnoticed

    assert sessions.advance_cursor(KEY, 2, 4, noticed=True)  # /compact told it itself
    history = sessions.load(KEY, 50)
    assert (history.consolidated_upto, history.noticed_upto) == (4, 4)


def test_when_the_chat_was_last_told_is_kept_with_the_header(sessions: SessionStore) -> None:
    """`noticed_at`: absent until a save records it, then read back (UTC, to the second) and
    kept by later saves and consolidations that do not change it."""
    history = sessions.load(KEY, 50)
    sessions.append(history, exchange(1))
    assert sessions.load(KEY, 50).noticed_at is None  # never told

    told = datetime(2030, 5, 6, 9, 30, 15, 500_000, tzinfo=timezone(timedelta(hours=2)))
    history = sessions.load(KEY, 50)
    history.noticed_upto, history.noticed_at = 0, told
    sessions.append(history, exchange(2), turn_id="update-2")
    assert sessions.load(KEY, 50).noticed_at == datetime(2030, 5, 6, 7, 30, 15, tzinfo=UTC)

    assert sessions.advance_cursor(KEY, 0, 2)
    sessions.append(sessions.load(KEY, 50), exchange(3), turn_id="update-3")
    history = sessions.load(KEY, 50)
    assert history.noticed_at == told.replace(microsecond=0)
    assert history.summarised_unnoticed  # the time is kept; the notice is due all the same


def test_a_message_cut_to_the_saved_limit_is_stored_whole(sessions: SessionStore) -> None:
    """`within_item_limit`'s bound leaves room for the item's keys and date: a message of
    exactly SAVED_MESSAGE_MAX_BYTES is one item, read back as it was saved."""
    content = "é\n" * 300_000  # 900 KB once in the arguments' JSON and escaped again
    arguments = json.dumps({"path": "big.md", "content": content})
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "write_file", "arguments": arguments},
    }
    message: Message = {"role": "assistant", "content": None, "tool_calls": [call]}
    saved = within_item_limit(message)
    assert len(json.dumps(saved, ensure_ascii=False).encode()) <= SAVED_MESSAGE_MAX_BYTES
    pad = SAVED_MESSAGE_MAX_BYTES - len(json.dumps(saved, ensure_ascii=False).encode())
    saved["content"] = "." * pad  # exactly at the bound
    history = sessions.load(KEY, 50)
    sessions.append(history, [{"role": "user", "content": "write it"}, saved], turn_id="t1")
    assert sessions.load(KEY, 50).messages[-1] == saved
