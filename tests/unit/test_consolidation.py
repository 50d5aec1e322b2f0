"""Consolidation: older messages summarised into HISTORY.md / MEMORY.md, then the cursor moves."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from nanobot_lambda.core import workspace as workspace_module
from nanobot_lambda.core.budget import HistoryBudget
from nanobot_lambda.core.consolidation import (
    MAX_TRANSCRIPT_TOOL_CHARS,
    SAVE_MEMORY,
    SAVE_MEMORY_TOOL,
    Consolidated,
    ConsolidationError,
    Consolidator,
    transcript,
)
from nanobot_lambda.core.memory import HISTORY_FILE, MEMORY_FILE
from nanobot_lambda.core.model import ModelReply
from nanobot_lambda.core.sessions import (
    Message,
    SessionConflict,
    SessionHistory,
)
from tests.support.fakes import (
    ApproxTokenCounter,
    MemorySessionStore,
    MemoryWorkspace,
    ScriptedModel,
    outage,
    text,
    tool,
)
from tests.support.history import read_history

KEY = "tg:42"
WINDOW = 10
ENTRY = "[2024-05-01 10:30] Talked about the trip to Lisbon; trains were rejected."
SMALL_MEMORY = "# Memory\n- likes tea\n"


@pytest.fixture(autouse=True)
def no_conflict_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lost races are retried at once (update_text may sleep between attempts)."""
    monkeypatch.setattr(workspace_module, "CONFLICT_BACKOFF_SECONDS", 0, raising=False)


def conversation(turns: int, first: int = 0) -> list[Message]:
    """`turns` user/assistant pairs: seq 2n is user n, seq 2n+1 its answer."""
    messages: list[Message] = []
    for n in range(first, first + turns):
        messages.append(
            {"role": "user", "content": f"question {n:02d}", "ts": f"2024-05-01T{8 + n:02d}:30:00Z"}
        )
        messages.append({"role": "assistant", "content": f"answer {n:02d}"})
    return messages


def save(entry: str = ENTRY, memory: str = SMALL_MEMORY) -> ModelReply:
    return tool(SAVE_MEMORY, json.dumps({"history_entry": entry, "memory_update": memory}))


def store_with(messages: list[Message]) -> MemorySessionStore:
    store = MemorySessionStore()
    store.append(SessionHistory(KEY), messages)
    return store


def consolidator(
    model: ScriptedModel,
    workspace: MemoryWorkspace,
    store: MemorySessionStore,
    *,
    window: int = WINDOW,
    timezone: str = "Europe/Paris",
) -> Consolidator:
    return Consolidator(
        model,
        workspace,
        store,
        HistoryBudget(ApproxTokenCounter(), max_tokens=1_000_000, max_messages=window),
        timezone=timezone,
        clock=lambda: datetime(2030, 1, 2, 3, 4, tzinfo=UTC),
    )


def sent_transcript(model: ScriptedModel, call: int = 0) -> str:
    messages, _ = model.requests[call]
    content: str = messages[-1]["content"]
    return content


def history_text(workspace: MemoryWorkspace) -> str:
    return workspace.files[HISTORY_FILE].decode()


# -- the in-memory store itself behaves as documented --------------------------------------------


def test_the_fake_store_loads_unconsolidated_messages_from_a_user_turn() -> None:
    store = store_with(conversation(6))
    store.cursors[KEY] = 4
    loaded = store.load(KEY, 5)  # the newest 5 start at an assistant message: dropped
    assert [m["content"] for m in loaded.messages] == [
        "question 04",
        "answer 04",
        "question 05",
        "answer 05",
    ]
    assert (loaded.next_seq, loaded.consolidated_upto, loaded.unconsolidated) == (12, 4, 8)
    assert store.load(KEY, 0).messages == []
    assert store.advance_cursor(KEY, 3, 6) is False
    assert store.advance_cursor(KEY, 4, 6) is True
    with pytest.raises(SessionConflict):
        store.append(SessionHistory(KEY, next_seq=3), conversation(1))


# -- due -----------------------------------------------------------------------------------------


def test_due_only_past_the_window() -> None:
    runner = consolidator(ScriptedModel(), MemoryWorkspace(), MemorySessionStore())
    assert runner.due(SessionHistory(KEY, next_seq=WINDOW + 1)) is True
    assert runner.due(SessionHistory(KEY, next_seq=WINDOW)) is False
    assert runner.due(SessionHistory(KEY, next_seq=30, consolidated_upto=20)) is False
    assert runner.due(SessionHistory(KEY, next_seq=31, consolidated_upto=20)) is True


# -- consolidate ---------------------------------------------------------------------------------


def test_consolidate_summarises_all_but_the_newest_half_window() -> None:
    store = store_with(conversation(6))  # seq 0..11; window/2 = 5 → keep from seq 7
    workspace = MemoryWorkspace({MEMORY_FILE: SMALL_MEMORY})
    model = ScriptedModel(save())
    result = consolidator(model, workspace, store).consolidate(KEY)

    # seq 7 is an answer: the cut moves to the next user message, seq 8.
    assert result == Consolidated(start=0, end=8, memory_updated=False)
    assert store.cursors[KEY] == 8
    sent = sent_transcript(model)
    for n in range(4):
        assert f"USER: question {n:02d}" in sent
        assert f"ASSISTANT: answer {n:02d}" in sent
    assert "question 04" not in sent and "answer 05" not in sent


def test_the_model_is_forced_to_call_save_memory_and_offered_nothing_else() -> None:
    model = ScriptedModel(save())
    consolidator(model, MemoryWorkspace(), store_with(conversation(6))).consolidate(KEY)
    assert model.tool_choices == [{"type": "function", "function": {"name": "save_memory"}}]
    messages, tools = model.requests[0]
    assert tools == [SAVE_MEMORY_TOOL]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "save_memory" in messages[0]["content"]


def test_the_request_shows_the_current_memory_or_empty() -> None:
    model = ScriptedModel(save(), save())
    workspace = MemoryWorkspace({MEMORY_FILE: "# Memory\n- owns a red bicycle\n"})
    consolidator(model, workspace, store_with(conversation(6))).consolidate(KEY)
    assert "- owns a red bicycle" in sent_transcript(model)

    consolidator(model, MemoryWorkspace(), store_with(conversation(6))).consolidate(KEY)
    assert "(empty)" in sent_transcript(model, 1)


def test_the_cut_lands_on_a_user_message_never_inside_a_tool_turn() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
    messages: list[Message] = [
        {"role": "user", "content": "u0"},  # 0
        {"role": "assistant", "content": None, "tool_calls": [call]},  # 1
        {"role": "tool", "tool_call_id": "c1", "name": "grep", "content": "r1"},  # 2
        {"role": "assistant", "content": "a3"},  # 3
        {"role": "user", "content": "u4"},  # 4
        {"role": "assistant", "content": None, "tool_calls": [call]},  # 5
        {"role": "tool", "tool_call_id": "c1", "name": "grep", "content": "r6"},  # 6
        {"role": "tool", "tool_call_id": "c1", "name": "grep", "content": "r7"},  # 7
        {"role": "assistant", "content": "a8"},  # 8
        {"role": "user", "content": "u9"},  # 9
        {"role": "assistant", "content": "a10"},  # 10
    ]
    store = store_with(messages)
    result = consolidator(ScriptedModel(save()), MemoryWorkspace(), store, window=6).consolidate(
        KEY
    )
    assert result is not None and (result.start, result.end) == (0, 9)  # keep_from 8 → user 9
    assert store.cursors[KEY] == 9


def test_a_newest_exchange_larger_than_the_kept_half_is_summarised_too() -> None:
    """What is kept counts towards the next consolidation: kept over half the budget, it would
    leave less than half to grow before the next one (a summary every turn or two)."""
    call = {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
    messages: list[Message] = [
        {"role": "user", "content": "u0"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "u2"},
        *[
            message
            for _ in range(3)
            for message in (
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "name": "grep", "content": "r"},
            )
        ],
        {"role": "assistant", "content": "done"},
    ]  # 10 messages; newest 3 (window 6) are all tool work of the turn starting at seq 2
    store = store_with(messages)
    model = ScriptedModel(save())
    result = consolidator(model, MemoryWorkspace(), store, window=6).consolidate(KEY)
    assert result is not None and (result.start, result.end) == (0, 10)
    assert "USER: u0" in sent_transcript(model) and "USER: u2" in sent_transcript(model)


@pytest.mark.parametrize("exchange_tokens", [150, 300, 450, 600, 900])
def test_a_consolidation_keeps_at_most_half_the_budget_so_the_next_waits_for_half_more(
    exchange_tokens: int,
) -> None:
    """The hysteresis that keeps summaries rare: due past the budget, a consolidation leaves at
    most half of it, whatever the size of an exchange (one over half is summarised too)."""
    budget = HistoryBudget(ApproxTokenCounter(), max_tokens=1_000, max_messages=200)
    store = MemorySessionStore()
    model = ScriptedModel(*(save() for _ in range(40)))
    summariser = Consolidator(model, MemoryWorkspace(), store, budget, timezone="UTC")
    for n in range(40):
        answer = {"role": "assistant", "content": "x" * (4 * exchange_tokens)}
        store.append(store.load(KEY, 200), [{"role": "user", "content": f"q{n}"}, answer])
        if summariser.due(store.load(KEY, 200)):
            summariser.consolidate(KEY)
            assert budget.tokens(store.load(KEY, 200).messages) <= 500

    # 40 exchanges: at least 20,000 tokens gone by, half the budget or more at a time.
    assert 0 < len(model.requests) <= 40 * exchange_tokens // 500


def test_the_history_entry_is_appended_with_its_marker() -> None:
    workspace = MemoryWorkspace()
    consolidator(ScriptedModel(save()), workspace, store_with(conversation(6))).consolidate(KEY)
    assert history_text(workspace) == f"# History\n\n{ENTRY} <!-- {KEY} 0-8 -->\n"
    assert [e.text for e in read_history(workspace, [HISTORY_FILE])] == [ENTRY]


def test_an_entry_without_a_timestamp_gets_the_first_message_time_in_the_timezone() -> None:
    messages = conversation(6)
    messages[0]["ts"] = "2024-05-01T22:45:00+00:00"  # already May 2nd in Paris (UTC+2)
    workspace = MemoryWorkspace()
    model = ScriptedModel(save(entry="Talked about\n  the trip.  "))
    consolidator(model, workspace, store_with(messages)).consolidate(KEY)
    assert f"[2024-05-02 00:45] Talked about the trip. <!-- {KEY} 0-8 -->" in history_text(
        workspace
    )
    assert "Timestamp for the entry: [2024-05-02 00:45]" in sent_transcript(model)


def test_the_timestamp_skips_messages_without_a_valid_ts() -> None:
    messages = conversation(6)
    messages[0]["ts"] = "not a date"
    messages[2]["ts"] = "2024-05-01T10:00:00+00:00"
    workspace = MemoryWorkspace()
    model = ScriptedModel(save(entry="Summary."))
    consolidator(model, workspace, store_with(messages), timezone="UTC").consolidate(KEY)
    assert "[2024-05-01 10:00] Summary." in history_text(workspace)


def test_without_any_ts_the_clock_gives_the_timestamp() -> None:
    messages = [{k: v for k, v in m.items() if k != "ts"} for m in conversation(6)]
    workspace = MemoryWorkspace()
    consolidator(
        ScriptedModel(save(entry="Summary.")), workspace, store_with(messages)
    ).consolidate(KEY)
    assert "[2030-01-02 04:04] Summary." in history_text(workspace)  # 03:04 UTC in Paris


def test_an_entry_with_its_own_timestamp_is_kept_as_is() -> None:
    workspace = MemoryWorkspace()
    consolidator(
        ScriptedModel(save(entry="[2023-01-01 00:00] Custom.")),
        workspace,
        store_with(conversation(6)),
    ).consolidate(KEY)
    assert f"\n[2023-01-01 00:00] Custom. <!-- {KEY} 0-8 -->\n" in history_text(workspace)


def test_memory_is_updated_when_changed() -> None:
    workspace = MemoryWorkspace({MEMORY_FILE: SMALL_MEMORY})
    new = "# Memory\n- likes tea\n- planning a trip to Lisbon"
    result = consolidator(
        ScriptedModel(save(memory=new)), workspace, store_with(conversation(6))
    ).consolidate(KEY)
    assert result is not None and result.memory_updated is True
    assert workspace.files[MEMORY_FILE].decode() == new + "\n"


def test_memory_is_created_when_absent() -> None:
    workspace = MemoryWorkspace()
    consolidator(
        ScriptedModel(save(memory="# Memory\n- likes tea")), workspace, store_with(conversation(6))
    ).consolidate(KEY)
    assert workspace.files[MEMORY_FILE] == b"# Memory\n- likes tea\n"


def test_memory_is_untouched_when_unchanged() -> None:
    workspace = MemoryWorkspace({MEMORY_FILE: SMALL_MEMORY})
    result = consolidator(
        ScriptedModel(save(memory="\n" + SMALL_MEMORY.strip())),
        workspace,
        store_with(conversation(6)),
    ).consolidate(KEY)
    assert result is not None and result.memory_updated is False
    assert workspace.files[MEMORY_FILE].decode() == SMALL_MEMORY
    assert workspace.writes == 1  # HISTORY.md only


def test_memory_is_untouched_when_the_update_would_shrink_it_drastically() -> None:
    big = "# Memory\n" + "".join(f"- fact {n}: something worth keeping\n" for n in range(30))
    workspace = MemoryWorkspace({MEMORY_FILE: big})
    result = consolidator(
        ScriptedModel(save(memory="# Memory\n- fact 0")), workspace, store_with(conversation(6))
    ).consolidate(KEY)
    assert result is not None and result.memory_updated is False
    assert workspace.files[MEMORY_FILE].decode() == big
    assert ENTRY in history_text(workspace)  # the summary itself is still kept
    assert result.end == 8


def test_the_empty_memory_placeholder_is_not_written_back() -> None:
    workspace = MemoryWorkspace()
    consolidator(
        ScriptedModel(save(memory="(empty)")), workspace, store_with(conversation(6))
    ).consolidate(KEY)
    assert MEMORY_FILE not in workspace.files


def test_everything_archives_all_messages() -> None:
    store = store_with(conversation(3))  # 6 messages: not even due
    model = ScriptedModel(save())
    result = consolidator(model, MemoryWorkspace(), store).consolidate(KEY, everything=True)
    assert result == Consolidated(0, 6, True)  # MEMORY.md did not exist
    assert store.cursors[KEY] == 6
    assert "ASSISTANT: answer 02" in sent_transcript(model)


def test_everything_with_an_unfinished_tool_turn_archives_it_whole() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
    messages = [
        *conversation(1),
        {"role": "user", "content": "look it up"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    store = store_with(messages)
    result = consolidator(ScriptedModel(save()), MemoryWorkspace(), store).consolidate(
        KEY, everything=True
    )
    assert result is not None and result.end == 4


@pytest.mark.parametrize("everything", [False, True])
def test_nothing_to_archive_makes_no_model_call(everything: bool) -> None:
    model = ScriptedModel()
    workspace = MemoryWorkspace()
    assert (
        consolidator(model, workspace, MemorySessionStore()).consolidate(KEY, everything=everything)
        is None
    )
    store = store_with(conversation(3))
    store.cursors[KEY] = 6  # all consolidated
    assert consolidator(model, workspace, store).consolidate(KEY, everything=everything) is None
    assert model.requests == []
    assert workspace.files == {}
    assert store.advances == []


def test_a_short_session_has_nothing_to_cut() -> None:
    store = store_with(conversation(2))  # 4 messages: the newest half window covers them all
    model = ScriptedModel()
    assert consolidator(model, MemoryWorkspace(), store).consolidate(KEY) is None
    assert model.requests == []


# -- failures leave the cursor where it was ------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (outage(), "model call failed"),
        (text("Here is the summary: all good."), "did not call save_memory"),
        (tool("read_file", json.dumps({"path": "x"})), "did not call save_memory"),
        (tool(SAVE_MEMORY, '{"history_entry": "x", '), "not valid JSON"),
        (tool(SAVE_MEMORY, json.dumps(["x", "y"])), "needs a history_entry"),
        (tool(SAVE_MEMORY, json.dumps({"memory_update": "# M"})), "needs a history_entry"),
        (tool(SAVE_MEMORY, json.dumps({"history_entry": "x"})), "needs a history_entry"),
        (
            tool(SAVE_MEMORY, json.dumps({"history_entry": "  ", "memory_update": "# M"})),
            "needs a history_entry",
        ),
        (
            tool(SAVE_MEMORY, json.dumps({"history_entry": "x", "memory_update": None})),
            "needs a history_entry",
        ),
        (
            tool(SAVE_MEMORY, json.dumps({"history_entry": 3, "memory_update": "# M"})),
            "needs a history_entry",
        ),
    ],
)
def test_failures_raise_and_leave_the_cursor_unchanged(
    reply: ModelReply | Exception, message: str
) -> None:
    store = store_with(conversation(6))
    workspace = MemoryWorkspace({MEMORY_FILE: SMALL_MEMORY})
    with pytest.raises(ConsolidationError, match=message):
        consolidator(ScriptedModel(reply), workspace, store).consolidate(KEY)
    assert store.cursors.get(KEY, 0) == 0
    assert store.advances == []
    assert workspace.files == {MEMORY_FILE: SMALL_MEMORY.encode()}


def test_the_failed_range_is_retried_next_time() -> None:
    store = store_with(conversation(6))
    workspace = MemoryWorkspace()
    model = ScriptedModel(outage(), save())
    runner = consolidator(model, workspace, store)
    with pytest.raises(ConsolidationError):
        runner.consolidate(KEY)
    assert runner.consolidate(KEY) == Consolidated(0, 8, True)
    assert sent_transcript(model, 0) == sent_transcript(model, 1)


def test_a_storage_failure_is_a_consolidation_error() -> None:
    store = store_with(conversation(6))
    workspace = MemoryWorkspace({HISTORY_FILE: "# History\n"})
    workspace.conflicts_to_inject = 1_000  # HISTORY.md keeps changing under us
    with pytest.raises(ConsolidationError):
        consolidator(ScriptedModel(save()), workspace, store).consolidate(KEY)
    assert store.cursors.get(KEY, 0) == 0


# -- idempotency ---------------------------------------------------------------------------------


def test_a_second_run_after_success_does_nothing() -> None:
    store = store_with(conversation(6))
    workspace = MemoryWorkspace()
    model = ScriptedModel(save())
    runner = consolidator(model, workspace, store)
    assert runner.consolidate(KEY) is not None
    files = dict(workspace.files)
    assert runner.consolidate(KEY) is None
    assert len(model.requests) == 1
    assert workspace.files == files
    assert store.cursors[KEY] == 8


def test_a_rerun_after_a_crash_before_the_cursor_moved_appends_the_entry_once() -> None:
    store = store_with(conversation(6))
    store.advance_failures = 1
    workspace = MemoryWorkspace()
    model = ScriptedModel(save(), save(entry="[2024-05-01 10:30] A second wording."))
    runner = consolidator(model, workspace, store)
    with pytest.raises(RuntimeError):
        runner.consolidate(KEY)
    assert store.cursors.get(KEY, 0) == 0
    assert ENTRY in history_text(workspace)

    assert runner.consolidate(KEY) == Consolidated(0, 8, False)
    assert store.cursors[KEY] == 8
    entries = [e.text for e in read_history(workspace, [HISTORY_FILE])]
    assert entries == [ENTRY]


def test_a_rerun_after_a_crash_and_a_new_turn_appends_no_second_entry() -> None:
    store = store_with(conversation(6))
    store.advance_failures = 1
    workspace = MemoryWorkspace()
    model = ScriptedModel(save(), save(entry="[2024-05-01 10:30] A second wording."))
    runner = consolidator(model, workspace, store)
    with pytest.raises(RuntimeError):
        runner.consolidate(KEY)

    store.append(store.load(KEY, WINDOW), conversation(1, first=6))  # the next turn is saved
    runner.consolidate(KEY)
    entries = [e.text for e in read_history(workspace, [HISTORY_FILE])]
    assert len(entries) == 1, entries


def test_a_concurrent_run_that_moved_the_cursor_first_is_not_an_error() -> None:
    store = store_with(conversation(6))
    workspace = MemoryWorkspace()

    real_advance = store.advance_cursor

    def advance(key: str, expected: int, new: int, *, noticed: bool = False) -> bool:
        store.cursors[key] = new  # the other run got there first
        return real_advance(key, expected, new, noticed=noticed)

    store.advance_cursor = advance  # type: ignore[method-assign]
    result = consolidator(ScriptedModel(save()), workspace, store).consolidate(KEY)
    assert result == Consolidated(0, 8, True)
    assert store.cursors[KEY] == 8


# -- transcript ----------------------------------------------------------------------------------


def test_transcript_formatting() -> None:
    long_result = "x" * (MAX_TRANSCRIPT_TOOL_CHARS + 50)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "never shown"},
        {"role": "user", "content": "find my notes", "ts": "2024-05-01T08:00:00Z"},
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "grep", "arguments": '{"pattern": "notes"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "list_dir", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "grep", "content": long_result},
        {"role": "tool", "tool_call_id": "c2", "name": "list_dir", "content": "notes/"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "user", "content": [{"type": "image_url"}]},
        {"role": "assistant", "content": "Found them."},
    ]
    assert transcript(messages).splitlines() == [
        "USER: find my notes",
        "ASSISTANT: Looking.",
        'ASSISTANT called grep({"pattern": "notes"})',
        "ASSISTANT called list_dir({})",
        "TOOL grep: " + "x" * MAX_TRANSCRIPT_TOOL_CHARS,
        "TOOL list_dir: notes/",
        "USER: ",
        "ASSISTANT: Found them.",
    ]
    assert transcript([]) == ""
