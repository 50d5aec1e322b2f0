"""Long-term memory: HISTORY.md appends, rollover into archives, entry parsing, the MEMORY guard."""

from __future__ import annotations

import hashlib
import logging

import pytest

from nanobot_lambda.core import memory
from nanobot_lambda.core import workspace as workspace_module
from nanobot_lambda.core.memory import (
    HISTORY_ARCHIVE,
    HISTORY_FILE,
    HISTORY_HEADER,
    MIN_GUARDED_CHARS,
    HistoryEntry,
    append_history,
    guard_memory_update,
    history_files,
    split_entries,
)
from nanobot_lambda.core.workspace import WriteConflict
from tests.support.fakes import MemoryWorkspace
from tests.support.history import read_history

E1 = "[2024-03-02 09:15] Planned the trip to Lisbon with Ana; trains rejected."
E2 = "[2024-03-05 18:40] Booked the dentist for April 3rd."
E3 = "[2024-03-09 07:05] Discussed the garden: tomatoes go in the south bed."


@pytest.fixture(autouse=True)
def no_conflict_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lost races are retried at once (update_text may sleep between attempts)."""
    monkeypatch.setattr(workspace_module, "CONFLICT_BACKOFF_SECONDS", 0, raising=False)


def history(workspace: MemoryWorkspace) -> str:
    return workspace.files[HISTORY_FILE].decode()


def archives(workspace: MemoryWorkspace) -> dict[str, str]:
    return {
        path: data.decode()
        for path, data in workspace.files.items()
        if path.startswith(HISTORY_ARCHIVE + "/")
    }


def archive_path(content: str) -> str:
    digest = hashlib.sha256(content.encode()).hexdigest()[:12]
    stamp = content[content.index("[") + 1 : content.index("[") + 17]  # YYYY-MM-DD HH:MM
    return f"{HISTORY_ARCHIVE}/{stamp.replace(' ', '_').replace(':', '')}_{digest}.md"


def all_entries(workspace: MemoryWorkspace) -> list[str]:
    return [entry.text for entry in read_history(workspace, history_files(workspace))]


# -- append_history ----------------------------------------------------------------------------


def test_append_creates_history_with_the_header() -> None:
    workspace = MemoryWorkspace()
    assert append_history(workspace, E1) is True
    assert history(workspace) == f"{HISTORY_HEADER}\n{E1}\n"


def test_append_strips_the_entry_and_separates_entries_by_a_blank_line() -> None:
    workspace = MemoryWorkspace()
    append_history(workspace, f"\n  {E1}  \n")
    append_history(workspace, E2)
    assert history(workspace) == f"# History\n\n{E1}\n\n{E2}\n"


def test_append_to_the_shipped_history_keeps_its_header() -> None:
    shipped = "# History\n\n<!-- An append-only log. -->\n"
    workspace = MemoryWorkspace({HISTORY_FILE: shipped})
    append_history(workspace, E1)
    assert history(workspace) == f"# History\n\n<!-- An append-only log. -->\n\n{E1}\n"


def test_marker_makes_a_repeated_append_a_no_op() -> None:
    workspace = MemoryWorkspace()
    assert append_history(workspace, E1, marker="chat:1 0-8") is True
    assert history(workspace).endswith(f"{E1} <!-- chat:1 0-8 -->\n")
    before, writes = history(workspace), workspace.writes

    assert append_history(workspace, E2, marker="chat:1 0-8") is False
    assert history(workspace) == before
    assert workspace.writes == writes
    # Another marker is another entry.
    assert append_history(workspace, E2, marker="chat:1 8-16") is True
    assert E2 in history(workspace)


def test_an_append_that_hits_a_conflict_is_reapplied() -> None:
    workspace = MemoryWorkspace({HISTORY_FILE: f"# History\n\n{E1}\n"})
    workspace.conflicts_to_inject = 1  # another writer changes the file between read and write
    assert append_history(workspace, E2, marker="m") is True
    text = history(workspace)
    assert "concurrent line" in text  # the other writer's change survived
    assert text.endswith(f"{E2} <!-- m -->\n")
    assert text.count(E2) == 1


def test_an_append_that_always_conflicts_raises() -> None:
    workspace = MemoryWorkspace({HISTORY_FILE: f"# History\n\n{E1}\n"})
    workspace.conflicts_to_inject = 1_000
    with pytest.raises(WriteConflict):
        append_history(workspace, E2)


# -- rollover ----------------------------------------------------------------------------------


@pytest.fixture
def small_rollover(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(memory, "ROLLOVER_BYTES", 150)
    return 150


def big_history() -> str:
    content = f"# History\n\n{E1}\n\n{E2}\n\n{E3}\n"
    assert len(content.encode()) > 150
    return content


def test_no_rollover_below_the_limit(small_rollover: int) -> None:
    workspace = MemoryWorkspace({HISTORY_FILE: f"# History\n\n{E1}\n"})
    append_history(workspace, E2)
    assert archives(workspace) == {}
    assert history(workspace) == f"# History\n\n{E1}\n\n{E2}\n"


def test_rollover_moves_the_old_content_unchanged_to_a_dated_archive(small_rollover: int) -> None:
    old = big_history()
    workspace = MemoryWorkspace({HISTORY_FILE: old})
    new = "[2024-03-10 12:00] Started a new notebook."
    assert append_history(workspace, new) is True

    digest = hashlib.sha256(old.encode()).hexdigest()[:12]
    assert archives(workspace) == {f"memory/history/2024-03-02_0915_{digest}.md": old}
    assert history(workspace) == f"{HISTORY_HEADER}\n{new}\n"
    assert all_entries(workspace) == [E1, E2, E3, new]


def test_rollover_of_a_history_without_entries_is_undated(small_rollover: int) -> None:
    old = "# History\n\n" + "free text, no timestamp. " * 10 + "\n"
    workspace = MemoryWorkspace({HISTORY_FILE: old})
    append_history(workspace, E1)
    [(path, content)] = archives(workspace).items()
    assert path.startswith("memory/history/0000-00-00_0000_")  # sorts before dated archives
    assert content == old


def test_rollover_when_the_archive_exists_already_creates_no_second_one(
    small_rollover: int,
) -> None:
    """Another writer rolled the same content over first: its archive has the same name."""
    old = big_history()
    path = archive_path(old)
    workspace = MemoryWorkspace({HISTORY_FILE: old, path: old})
    new = "[2024-03-10 12:00] Started a new notebook."
    append_history(workspace, new)
    assert archives(workspace) == {path: old}
    assert history(workspace) == f"{HISTORY_HEADER}\n{new}\n"


class RacingWorkspace(MemoryWorkspace):
    """Runs `race` once, just before the first conditional write of HISTORY.md."""

    def __init__(self, files: dict[str, str | bytes], race: object) -> None:
        super().__init__(files)
        self.race = race

    def write(
        self, path: str, data: bytes, *, if_match: str | None = None, if_none_match: bool = False
    ) -> str:
        if path == HISTORY_FILE and if_match is not None and self.race is not None:
            race, self.race = self.race, None
            race()  # type: ignore[operator]
        return super().write(path, data, if_match=if_match, if_none_match=if_none_match)


def test_two_writers_rolling_over_at_once_make_one_archive_and_lose_no_entry(
    small_rollover: int,
) -> None:
    old = big_history()
    mine = "[2024-03-10 12:00] Mine: started a new notebook."
    theirs = "[2024-03-10 12:01] Theirs: called the plumber."

    workspace = RacingWorkspace({HISTORY_FILE: old}, None)
    # The other writer does its whole rollover between our archive write and our HISTORY write.
    workspace.race = lambda: append_history(workspace, theirs, marker="b")
    assert append_history(workspace, mine, marker="a") is True

    assert archives(workspace) == {archive_path(old): old}
    assert history(workspace) == (f"{HISTORY_HEADER}\n{theirs} <!-- b -->\n\n{mine} <!-- a -->\n")
    assert all_entries(workspace) == [E1, E2, E3, theirs, mine]


def test_a_conflict_during_rollover_archives_each_entry_once(small_rollover: int) -> None:
    old = big_history()
    workspace = MemoryWorkspace({HISTORY_FILE: old})
    workspace.conflicts_to_inject = 1  # someone changes HISTORY.md between read and write
    new = "[2024-03-10 12:00] Started a new notebook."
    append_history(workspace, new)

    everything = "".join(archives(workspace).values()) + history(workspace)
    assert "concurrent line" in everything  # nothing lost …
    assert everything.count(E1) == 1  # … and nothing archived twice
    assert all_entries(workspace).count(E1) == 1


def test_marker_still_deduplicates_after_the_entry_was_rolled_over(small_rollover: int) -> None:
    start = f"# History\n\n{E1}\n\n{E2}\n"
    assert len(start) < 150  # A's entry is appended without a rollover; B's append rolls over
    workspace = MemoryWorkspace({HISTORY_FILE: start})
    # Crash-and-retry of one consolidation, with another session's append rolling over between.
    append_history(workspace, "[2024-03-10 12:00] Session A summary.", marker="a 0-8")
    append_history(workspace, "[2024-03-10 12:05] Session B summary.", marker="b 0-6")
    [archived] = archives(workspace).values()
    assert "<!-- a 0-8 -->" in archived  # the rollover moved A's entry to an archive
    assert append_history(workspace, "[2024-03-10 12:00] Session A again.", marker="a 0-8") is False
    assert "Session A again" not in history(workspace)


def test_history_files_order_same_day_archives_by_age(small_rollover: int) -> None:
    workspace = MemoryWorkspace()
    day = "[2024-03-02 {:02d}:00] Item {}: groceries and errands for the week ahead."
    for number in range(8):
        append_history(workspace, day.format(number, number))
    assert len(archives(workspace)) >= 2
    entries = [entry.text for entry in read_history(workspace, history_files(workspace))]
    assert entries == [day.format(number, number) for number in range(8)]


# -- split_entries / history_files / read_history ----------------------------------------------


def test_split_entries_multi_line_header_ignored_markers_stripped() -> None:
    text = (
        "# History\n\nSome preface.\n<!-- a comment -->\n\n"
        "[2024-03-02 09:15] First line\ncontinues here. <!-- chat:1 0-8 -->\n\n"
        "[2024-03-05T18:40] Second, ISO style. <!-- chat:1 8-16 -->\n"
        "[2024-03-06 07:00] Third directly after.\n"
    )
    assert split_entries(text, "f.md") == [
        HistoryEntry("f.md", "[2024-03-02 09:15] First line\ncontinues here."),
        HistoryEntry("f.md", "[2024-03-05T18:40] Second, ISO style."),
        HistoryEntry("f.md", "[2024-03-06 07:00] Third directly after."),
    ]


def test_split_entries_only_at_line_starts() -> None:
    text = "[2024-03-02 09:15] Moved the meeting from [2024-03-03 10:00] to later.\n"
    assert [entry.text for entry in split_entries(text, "f")] == [text.strip()]


@pytest.mark.parametrize("text", ["", "# History\n", "# History\n\nno entries [2024-03-02 x]\n"])
def test_split_entries_without_entries(text: str) -> None:
    assert split_entries(text, "f") == []


def test_history_files_lists_archives_oldest_first_then_history() -> None:
    workspace = MemoryWorkspace(
        {
            "memory/history/2024-05-01_bbbbbbbbbbbb.md": f"{E3}\n",
            "memory/history/2023-12-24_ffffffffffff.md": f"{E1}\n",
            "memory/history/notes.txt": "not an archive",
            "memory/MEMORY.md": "# Memory\n",
        }
    )
    assert history_files(workspace) == [
        "memory/history/2023-12-24_ffffffffffff.md",
        "memory/history/2024-05-01_bbbbbbbbbbbb.md",
        HISTORY_FILE,
    ]
    assert history_files(MemoryWorkspace()) == [HISTORY_FILE]


def test_read_history_in_file_order_skipping_missing_and_binary_files() -> None:
    workspace = MemoryWorkspace(
        {
            "memory/history/2024-01-01_aaaaaaaaaaaa.md": f"# History\n\n{E1}\n\n{E2}\n",
            "memory/history/2024-02-01_bbbbbbbbbbbb.md": b"\xff\xfe\x00binary",
            HISTORY_FILE: f"# History\n\n{E3} <!-- m -->\n",
        }
    )
    entries = read_history(workspace, [*history_files(workspace), "memory/missing.md"])
    assert entries == [
        HistoryEntry("memory/history/2024-01-01_aaaaaaaaaaaa.md", E1),
        HistoryEntry("memory/history/2024-01-01_aaaaaaaaaaaa.md", E2),
        HistoryEntry(HISTORY_FILE, E3),
    ]


# -- guard_memory_update -----------------------------------------------------------------------


def big_memory() -> str:
    text = "# Memory\n" + "".join(
        f"- fact number {n}: something worth keeping\n" for n in range(20)
    )
    assert len(text) >= MIN_GUARDED_CHARS
    return text


def test_guard_unchanged_is_none() -> None:
    current = big_memory()
    assert guard_memory_update(current, current) is None
    assert guard_memory_update(current, "\n" + current.strip() + "\n\n\n") is None


@pytest.mark.parametrize("proposed", ["", "   \n\n"])
def test_guard_empty_proposal_is_none(proposed: str) -> None:
    assert guard_memory_update(big_memory(), proposed) is None
    assert guard_memory_update("", proposed) is None


def test_guard_refuses_a_drastic_shrink_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    current = big_memory()
    proposed = current[: int(len(current) * 0.4)]
    with caplog.at_level(logging.WARNING, logger="nanobot_lambda.core.memory"):
        assert guard_memory_update(current, proposed) is None
    [record] = [r for r in caplog.records if r.name == "nanobot_lambda.core.memory"]
    assert record.levelno == logging.WARNING
    assert "refused" in record.getMessage()
    assert str(len(current)) in record.getMessage()


def test_guard_allows_a_moderate_shrink(caplog: pytest.LogCaptureFixture) -> None:
    current = big_memory()
    proposed = current[: int(len(current) * 0.6)]
    with caplog.at_level(logging.WARNING):
        assert guard_memory_update(current, proposed) == proposed.rstrip("\n") + "\n"
    assert not caplog.records


def test_guard_allows_growth() -> None:
    current = big_memory()
    proposed = current + "- a new fact\n"
    assert guard_memory_update(current, proposed) == proposed


def test_guard_lets_small_memories_be_rewritten_freely() -> None:
    current = "# Memory\n- likes tea\n- lives in Paris\n"
    assert len(current) < MIN_GUARDED_CHARS
    assert guard_memory_update(current, "# Memory") == "# Memory\n"
    assert guard_memory_update("", "# Memory\n- new") == "# Memory\n- new\n"


def test_guard_normalises_the_trailing_newline() -> None:
    assert guard_memory_update("old", "# Memory\n- a") == "# Memory\n- a\n"
    assert guard_memory_update("old", "# Memory\n- a\n\n\n") == "# Memory\n- a\n"
