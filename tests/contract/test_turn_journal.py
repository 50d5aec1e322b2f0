"""The TurnJournal port: DynamoTurnJournal on moto server and MemoryTurnJournal alike. Each test
compares the whole record read back (`get`) with what was recorded."""

from __future__ import annotations

from nanobot_lambda.core.approvals import Pending
from nanobot_lambda.core.journal import Aside, Message, Shown, TurnProgress, identity
from nanobot_lambda.core.ports import SessionStore, TurnJournal

KEY = "telegram:111111111"
STEP: list[Message] = [
    {"role": "assistant", "content": "Looking.", "tool_calls": [{"id": "c1", "type": "function"}]},
    {"role": "tool", "tool_call_id": "c1", "content": "found ✓"},
]


def shown(text: str) -> Shown:
    return Shown(identity("text", text), text)


def test_a_turn_never_recorded_reads_as_a_new_one(journal: TurnJournal) -> None:
    assert journal.get(KEY, "t1") == TurnProgress("t1")
    assert not journal.get(KEY, "t1").recorded


def test_a_checkpoint_reads_back_whole(journal: TurnJournal) -> None:
    progress = TurnProgress(
        "t1", messages=STEP, iterations=2, sends=1, continuations=1, context="## Runtime"
    )
    progress.sent[0] = shown("Looking.")
    journal.checkpoint(KEY, progress)
    assert progress.recorded
    assert journal.get(KEY, "t1") == TurnProgress(
        "t1",
        messages=STEP,
        iterations=2,
        sends=1,
        sent={0: shown("Looking.")},
        continuations=1,
        context="## Runtime",
        recorded=True,
    )
    assert journal.get("telegram:222", "t1") == TurnProgress("t1")  # another session's turn


def test_a_send_is_recorded_once_and_a_second_run_s_does_not_replace_it(
    journal: TurnJournal,
) -> None:
    first = TurnProgress("t1", context="## Runtime")
    journal.record_send(KEY, first, 0, shown("Hello"))  # no checkpoint before: made now
    assert first.sent == {0: shown("Hello")} and first.recorded
    second = journal.get(KEY, "t1")
    journal.record_send(KEY, second, 0, shown("Hi"))  # another run, under the same number
    stored = journal.get(KEY, "t1")
    assert stored.sent == {0: shown("Hello")}
    assert stored.context == "## Runtime"  # a record made by a send keeps the request's context


def test_parts_and_the_partial_text(journal: TurnJournal) -> None:
    progress = TurnProgress("t1")
    journal.checkpoint(KEY, progress)
    journal.record_part(KEY, progress, 1, 1, "a long answer")
    journal.record_part(KEY, progress, 1, 2, "a long answer")
    assert (progress.parts, progress.partial) == ({(1, 1), (1, 2)}, (1, "a long answer"))
    stored = journal.get(KEY, "t1")
    assert (stored.parts, stored.partial) == ({(1, 1), (1, 2)}, (1, "a long answer"))


def test_set_aside_moves_what_was_shown_aside_and_forgets_its_sends(journal: TurnJournal) -> None:
    progress = TurnProgress("t1")
    journal.checkpoint(KEY, progress)
    journal.record_send(KEY, progress, 0, shown("progress text"))
    journal.record_send(KEY, progress, 1, shown("first answer"))
    journal.record_part(KEY, progress, 2, 1, "long")
    journal.set_aside(KEY, progress, [1, 2], at=3)
    expected_aside = [Aside(3, "first answer")]
    assert progress.sent == {0: shown("progress text")} and progress.aside == expected_aside
    assert (progress.parts, progress.partial) == (set(), None)
    stored = journal.get(KEY, "t1")
    assert stored.sent == {0: shown("progress text")}
    assert (stored.aside, stored.parts, stored.partial) == (expected_aside, set(), None)


def test_an_end_is_recorded_with_its_number(journal: TurnJournal) -> None:
    progress = TurnProgress("t1")
    journal.end(KEY, progress, "model_error", 2)
    assert (progress.ended, progress.ended_at) == ("model_error", 2)
    stored = journal.get(KEY, "t1")
    assert (stored.ended, stored.ended_at, stored.recorded) == ("model_error", 2, True)
    assert stored.resumed


def test_discard_forgets_the_record(journal: TurnJournal) -> None:
    progress = TurnProgress("t1", messages=STEP)
    journal.checkpoint(KEY, progress)
    journal.discard(KEY, progress)
    assert not progress.recorded
    assert journal.get(KEY, "t1") == TurnProgress("t1")


def test_mark_done_replaces_the_progress_with_done(journal: TurnJournal) -> None:
    progress = TurnProgress("t1", messages=STEP, iterations=1)
    journal.checkpoint(KEY, progress)
    journal.mark_done(KEY, progress)
    assert progress.done
    assert journal.get(KEY, "t1") == TurnProgress("t1", done=True, recorded=True)


def test_finish_of_a_turn_never_recorded_writes_nothing(journal: TurnJournal) -> None:
    assert journal.finish(KEY, TurnProgress("t1")) == []


def test_the_session_load_returns_its_unfinished_turns(
    sessions: SessionStore, journal: TurnJournal
) -> None:
    for turn in ("t1", "t2"):
        journal.checkpoint(KEY, TurnProgress(turn, messages=STEP))
    journal.checkpoint("telegram:222", TurnProgress("t3"))
    open_turns = sessions.load(KEY, 10).open_turns
    assert sorted(open_turns) == ["t1", "t2"]
    assert open_turns["t1"] == TurnProgress("t1", messages=STEP, recorded=True)


def test_an_answered_turn_reads_back_answered_with_its_session(
    sessions: SessionStore, journal: TurnJournal
) -> None:
    """A turn whose save failed after its answer was sent (functions/agent_turn/saving.py): its
    record says so, read alone or with the session, so the next run only saves it."""
    answer: Message = {"role": "assistant", "content": "Done."}
    progress = TurnProgress("t1", messages=[*STEP, answer], iterations=2, sends=2, answered=True)
    progress.sent[1] = shown("Looking.")
    journal.checkpoint(KEY, progress)
    expected = TurnProgress(
        "t1",
        messages=[*STEP, answer],
        iterations=2,
        sends=2,
        sent={1: shown("Looking.")},
        answered=True,
        recorded=True,
    )
    assert journal.get(KEY, "t1") == expected
    assert sessions.load(KEY, 10).open_turns["t1"] == expected
    assert expected.resumed


def test_a_turn_waiting_for_an_approval_reads_back_its_pending_call(
    sessions: SessionStore, journal: TurnJournal
) -> None:
    """The call waiting for a person and whether untrusted content entered the turn
    (core/approvals.py), read alone and with the session; a later update keeps them."""
    pending = Pending("c1", "apv-1234567890", 111, "2026-11-23T13:00:00+00:00", "exec", "")
    progress = TurnProgress("t1", messages=STEP, iterations=1, pending=pending, untrusted=True)
    journal.checkpoint(KEY, progress)
    journal.record_send(KEY, progress, 1, shown("May I?"))
    expected = TurnProgress(
        "t1",
        messages=STEP,
        iterations=1,
        sent={1: shown("May I?")},
        pending=pending,
        untrusted=True,
        recorded=True,
    )
    assert journal.get(KEY, "t1") == expected
    assert sessions.load(KEY, 10).open_turns["t1"] == expected
