"""/memory and /memory restore: the versions of MEMORY.md, and bringing one back."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from nanobot_lambda.core.memory import MEMORY_FILE
from nanobot_lambda.core.memory_versions import (
    describe_versions,
    restore_version,
    versions_text,
)
from tests.support.fakes import MemoryWorkspace

UTC = ZoneInfo("UTC")


def remembered(*versions: str) -> MemoryWorkspace:
    workspace = MemoryWorkspace({MEMORY_FILE: versions[0]})
    for text in versions[1:]:
        workspace.write(MEMORY_FILE, text.encode())
    return workspace


def test_versions_are_listed_newest_first_with_what_each_changed() -> None:
    workspace = remembered(
        "# Memory\n- likes tea\n",
        "# Memory\n- likes tea\n- dentist on Tuesday\n",
        "# Memory\n",  # a bad consolidation dropped both facts
    )
    lines = describe_versions(workspace)
    assert [(line.number, line.added, line.removed) for line in lines] == [
        (1, 0, 2),
        (2, 1, 0),
        (3, 2, 0),
    ]
    assert lines[1].first_added == "- dentist on Tuesday"
    text = versions_text(lines, UTC)
    assert "1. 2026-01-01 02:00 (current)" in text
    assert "+1 −0 lines, e.g. “\\- dentist on Tuesday”" in text
    assert "/memory restore N" in text


def test_restore_brings_an_earlier_memory_back_as_a_new_version() -> None:
    workspace = remembered("# Memory\n- likes tea\n", "# Memory\n")
    answer = restore_version(workspace, "2", request="update:1")
    assert "Restored memory/MEMORY.md" in answer
    assert workspace.files[MEMORY_FILE] == b"# Memory\n- likes tea\n"
    # The bad version is still there: the restore can itself be undone.
    assert [line.version.size for line in describe_versions(workspace)] == [21, 9, 21]
    restore_version(workspace, "2", request="update:2")
    assert workspace.files[MEMORY_FILE] == b"# Memory\n"


def test_a_retried_restore_does_not_undo_itself() -> None:
    """The queue delivers the command again after the restore was written: version 2 is now
    the bad memory, and restoring it would undo the restore. The request's note stops it, also
    when a turn wrote MEMORY.md in between."""
    workspace = remembered("# Memory\n- likes tea\n", "# Memory\n")
    restore_version(workspace, "2", request="update:7")
    workspace.write(MEMORY_FILE, b"# Memory\n- likes tea\n- and cake\n")
    answer = restore_version(workspace, "2", request="update:7")
    assert "Restored" in answer
    assert workspace.files[MEMORY_FILE] == b"# Memory\n- likes tea\n- and cake\n"


def test_restore_refuses_what_it_cannot_do_and_changes_nothing() -> None:
    workspace = remembered("a\n", "b\n")
    for argument, says in [
        ("", "/memory restore N"),
        ("two", "/memory restore N"),
        ("1", "current"),
        ("3", "no version 3: I have 2"),
        ("0", "no version 0"),
        ("-4", "no version -4"),
    ]:
        assert says in restore_version(workspace, argument, request="update:1"), argument
    assert workspace.files[MEMORY_FILE] == b"b\n" and workspace.writes == 1


def test_a_memory_written_meanwhile_is_not_overwritten() -> None:
    workspace = remembered("a\n", "b\n")
    workspace.conflicts_to_inject = 1  # a turn writes MEMORY.md between the read and the write
    answer = restore_version(workspace, "2", request="update:1")
    assert "changed while I was restoring it" in answer
    assert workspace.files[MEMORY_FILE] == b"b\n\nconcurrent line"


def test_no_memory_yet() -> None:
    workspace = MemoryWorkspace()
    assert "nothing has been remembered" in versions_text(describe_versions(workspace), UTC)
