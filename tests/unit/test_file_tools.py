"""File tools on an in-memory workspace: paging, edit semantics, errors the model can act on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.tools import files
from nanobot_lambda.tools.files import MAX_LIST_ENTRIES, file_tools
from tests.support.fakes import MemoryWorkspace
from tests.support.job_context import JobTools


@pytest.fixture
def workspace() -> MemoryWorkspace:
    return MemoryWorkspace(
        {
            "AGENTS.md": "# Agents\nBe brief.\n",
            "memory/MEMORY.md": "# Memory\n- likes tea\n- lives in Paris\n",
            "notes/a.md": "alpha\nbeta\nalpha\n",
            "images/cat.png": b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe",
        }
    )


def call(workspace: MemoryWorkspace, name: str, **arguments: object) -> str:
    registry = JobTools(file_tools(), workspace)
    return registry.execute(ToolCall("call_1", name, json.dumps(arguments)))


def test_read_file(workspace: MemoryWorkspace) -> None:
    assert call(workspace, "read_file", path="AGENTS.md") == "# Agents\nBe brief.\n"


def test_read_file_pages_by_line() -> None:
    workspace = MemoryWorkspace({"log.md": "".join(f"line {n}\n" for n in range(1, 101))})
    page = call(workspace, "read_file", path="log.md", offset=10, limit=5)
    assert page.startswith("line 10\nline 11\n")
    assert "line 15" not in page
    assert "[truncated: lines 10-14 of 100; use offset=15 to read more]" in page


def test_read_file_caps_huge_files() -> None:
    workspace = MemoryWorkspace({"big.md": "x" * 1000 + "\n" + ("y" * 100 + "\n") * 2000})
    page = call(workspace, "read_file", path="big.md")
    assert len(page) < 41_000
    assert "use offset=" in page


@pytest.mark.parametrize(
    "text",
    [
        "one\r\ntwo\rthree\nfour\x0bfive\x0csix\x1cseven\x85eight\u2028nine\u2029ten",
        "a\r\n" * 50 + "b" * 70 + "\r\n" + "no end",
        "\n" * 40,
        "x" * 100,  # one line longer than a window
        "",
    ],
    ids=["every line end", "crlf across windows", "empty lines", "one long line", "empty"],
)
def test_lines_come_in_windows_exactly_as_splitlines_gives_them(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "LINES_WINDOW_CHARS", 7)  # a window ends within \r\n often
    windows = list(files.line_windows(text))
    assert [line for lines in windows for line in lines] == text.splitlines(keepends=True)
    assert len(windows) > 1 or len(text.splitlines()) <= 1  # many lines: several windows


_READ_A_20_MB_UPLOAD = """
from tests.support.fakes import MemoryWorkspace
from tests.support.job_context import job_context
from nanobot_lambda.tools.files import ReadFile

def resident(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(field))

workspace = MemoryWorkspace({"uploads/1/2025-11/log.txt": b"a\\n" * 9_500_000})
before = resident("VmRSS:")
ctx = job_context(workspace)
page = ReadFile().run(ctx, "uploads/1/2025-11/log.txt", offset=5_000_000, limit=2)
print(resident("VmHWM:") - before)
print(page)
"""


def test_reading_a_20_mb_upload_of_short_lines_stays_in_bounded_memory() -> None:
    """9.5 million lines are never 9.5 million strings at once (that was 670 MB): a window of
    them at a time, beside the file's text. Measured in a process of its own (its VmHWM)."""
    done = subprocess.run(  # noqa: S603 - this interpreter, the code above
        [sys.executable, "-c", _READ_A_20_MB_UPLOAD],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    grown, page = done.stdout.split("\n", 1)
    assert page == (
        "a\na\n\n[truncated: lines 5000000-5000001 of 9500000; use offset=5000002 to read more]\n"
    )
    assert int(grown) < 19_000_000 + 40_000_000  # the text (a byte a character) and a window


def test_a_failed_edit_of_a_large_file_gives_no_similar_text_search() -> None:
    workspace = MemoryWorkspace({"big.txt": "line\n" * 200_000})
    result = call(workspace, "edit_file", path="big.txt", old_text="lime", new_text="lemon")
    assert (
        result == "Error: old_text was not found in big.txt. Read the file to get the exact text."
    )


def test_read_missing_and_binary(workspace: MemoryWorkspace) -> None:
    assert call(workspace, "read_file", path="nope.md").startswith("Error: file not found: nope.md")
    assert "binary file" in call(workspace, "read_file", path="images/cat.png")


def test_write_file_creates_and_overwrites(workspace: MemoryWorkspace) -> None:
    assert call(workspace, "write_file", path="notes/new.md", content="hello") == (
        "Wrote 5 characters to notes/new.md."
    )
    assert workspace.files["notes/new.md"] == b"hello"
    call(workspace, "write_file", path="notes/new.md", content="bye")
    assert workspace.files["notes/new.md"] == b"bye"


def test_hostile_path_is_an_error_result_and_nothing_is_written(workspace: MemoryWorkspace) -> None:
    before = dict(workspace.files)
    result = call(workspace, "write_file", path="../outside.md", content="x")
    assert result.startswith("Error: '..' is not allowed")
    assert workspace.files == before


def test_edit_file_exact_single_match(workspace: MemoryWorkspace) -> None:
    result = call(
        workspace,
        "edit_file",
        path="memory/MEMORY.md",
        old_text="likes tea",
        new_text="likes coffee",
    )
    assert result == "Replaced 1 occurrence(s) in memory/MEMORY.md."
    assert b"likes coffee" in workspace.files["memory/MEMORY.md"]


def test_edit_file_multiple_matches_needs_context(workspace: MemoryWorkspace) -> None:
    before = workspace.files["notes/a.md"]
    result = call(workspace, "edit_file", path="notes/a.md", old_text="alpha", new_text="gamma")
    assert "occurs 2 times" in result and "replace_all" in result
    assert workspace.files["notes/a.md"] == before
    result = call(
        workspace,
        "edit_file",
        path="notes/a.md",
        old_text="alpha",
        new_text="gamma",
        replace_all=True,
    )
    assert result == "Replaced 2 occurrence(s) in notes/a.md."
    assert workspace.files["notes/a.md"] == b"gamma\nbeta\ngamma\n"


def test_edit_file_not_found_shows_the_closest_text(workspace: MemoryWorkspace) -> None:
    result = call(
        workspace, "edit_file", path="memory/MEMORY.md", old_text="- lives in Pariss", new_text="x"
    )
    assert "not found" in result
    assert "most similar text is at line 3" in result
    assert "- lives in Paris" in result


def test_edit_file_not_found_without_close_match(workspace: MemoryWorkspace) -> None:
    result = call(workspace, "edit_file", path="AGENTS.md", old_text="zzzz qqqq", new_text="x")
    assert "Read the file to get the exact text" in result


def test_edit_file_reapplies_after_a_concurrent_change(workspace: MemoryWorkspace) -> None:
    workspace.conflicts_to_inject = 1  # someone appends a line between our read and our write
    result = call(
        workspace,
        "edit_file",
        path="memory/MEMORY.md",
        old_text="likes tea",
        new_text="likes coffee",
    )
    assert result.startswith("Replaced")
    content = workspace.files["memory/MEMORY.md"]
    assert b"likes coffee" in content
    assert b"concurrent line" in content  # the other edit survived


def test_list_dir(workspace: MemoryWorkspace) -> None:
    listing = call(workspace, "list_dir", path=".")
    assert listing.splitlines() == [
        "images/ (folder)",
        "memory/ (folder)",
        "notes/ (folder)",
        "AGENTS.md (19 bytes)",
    ]
    assert call(workspace, "list_dir", path="memory") == "memory/MEMORY.md (38 bytes)"


def test_list_dir_is_capped() -> None:
    workspace = MemoryWorkspace({f"many/{n:04d}.md": "x" for n in range(MAX_LIST_ENTRIES + 25)})
    listing = call(workspace, "list_dir", path="many")
    assert listing.splitlines()[-1] == "… and 25 more entries"


def test_registry_errors_come_back_as_results() -> None:
    registry = JobTools(file_tools(), MemoryWorkspace())
    assert "no tool named 'shell'" in registry.execute(ToolCall("1", "shell", "{}"))
    assert "not valid JSON" in registry.execute(ToolCall("1", "read_file", "{path:"))
    assert "must be a JSON object" in registry.execute(ToolCall("1", "read_file", "[1]"))
    assert "missing required argument 'path'" in registry.execute(ToolCall("1", "read_file", "{}"))
    assert "must be of type integer" in registry.execute(
        ToolCall("1", "read_file", '{"path": "a", "offset": true}')
    )
    assert "unknown argument 'mode'" in registry.execute(
        ToolCall("1", "read_file", '{"path": "a", "mode": "x"}')
    )
    assert ">= 1" in registry.execute(ToolCall("1", "read_file", '{"path": "a", "offset": 0}'))
