"""WithBuiltinFiles: the built-in skills readable beneath the workspace, overridden on write."""

from __future__ import annotations

import json

import pytest

from nanobot_lambda.core import workspace as workspace_module
from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.skills import builtin_skill_files
from nanobot_lambda.core.workspace import Entry, WithBuiltinFiles, replace_file, update_text
from nanobot_lambda.tools.files import file_tools
from tests.support.fakes import MemoryWorkspace
from tests.support.job_context import JobTools

BUILTINS = {
    "skills/weather/SKILL.md": b"# Weather\nUse wttr.in.\n",
    "skills/weather/references/codes.md": b"0 clear\n",
    "skills/cron/SKILL.md": b"# Cron\nSchedule things.\n",
}


@pytest.fixture(autouse=True)
def no_conflict_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lost races are retried at once (update_text may sleep between attempts)."""
    monkeypatch.setattr(workspace_module, "CONFLICT_BACKOFF_SECONDS", 0, raising=False)


@pytest.fixture
def workspace() -> MemoryWorkspace:
    return MemoryWorkspace(
        {
            "AGENTS.md": "# Agents\n",
            "skills/cron/SKILL.md": "# My cron\nMine wins.\n",
            "skills/mine/SKILL.md": "# Mine\n",
        }
    )


@pytest.fixture
def builtins() -> dict[str, bytes]:
    return dict(BUILTINS)


@pytest.fixture
def view(workspace: MemoryWorkspace, builtins: dict[str, bytes]) -> WithBuiltinFiles:
    return WithBuiltinFiles(workspace, builtins)


# -- reading ------------------------------------------------------------------------------------


def test_a_builtin_file_is_readable_where_the_workspace_has_none(view: WithBuiltinFiles) -> None:
    file = view.read("skills/weather/SKILL.md")
    assert file is not None
    assert file.data == b"# Weather\nUse wttr.in.\n"
    assert file.etag == WithBuiltinFiles.BUILTIN_ETAG
    assert view.read("skills/weather/references/codes.md") is not None
    assert view.read("skills/nothing/SKILL.md") is None


def test_the_workspace_file_wins(view: WithBuiltinFiles) -> None:
    file = view.read("skills/cron/SKILL.md")
    assert file is not None
    assert file.text == "# My cron\nMine wins.\n"
    assert file.etag != WithBuiltinFiles.BUILTIN_ETAG
    assert view.read("AGENTS.md") is not None


# -- writing ------------------------------------------------------------------------------------


def test_replace_file_on_a_builtin_creates_a_workspace_copy(
    view: WithBuiltinFiles, workspace: MemoryWorkspace, builtins: dict[str, bytes]
) -> None:
    replace_file(view, "skills/weather/SKILL.md", b"# My weather\n")
    assert workspace.files["skills/weather/SKILL.md"] == b"# My weather\n"
    assert builtins == BUILTINS
    file = view.read("skills/weather/SKILL.md")
    assert file is not None and file.data == b"# My weather\n"
    # A fresh view over an empty workspace still serves the built-in unchanged.
    pristine = WithBuiltinFiles(MemoryWorkspace(), builtins).read("skills/weather/SKILL.md")
    assert pristine is not None and pristine.data == BUILTINS["skills/weather/SKILL.md"]


def test_update_text_on_a_builtin_creates_a_workspace_copy(
    view: WithBuiltinFiles, workspace: MemoryWorkspace, builtins: dict[str, bytes]
) -> None:
    written = update_text(view, "skills/weather/SKILL.md", lambda text: (text or "") + "More.\n")
    assert written == "# Weather\nUse wttr.in.\nMore.\n"
    assert workspace.files["skills/weather/SKILL.md"] == written.encode()
    assert builtins == BUILTINS


def test_the_builtin_etag_turns_into_a_create_condition() -> None:
    writes: list[tuple[str | None, bool]] = []

    class Recording(MemoryWorkspace):
        def write(
            self,
            path: str,
            data: bytes,
            *,
            if_match: str | None = None,
            if_none_match: bool = False,
        ) -> str:
            writes.append((if_match, if_none_match))
            return super().write(path, data, if_match=if_match, if_none_match=if_none_match)

    view = WithBuiltinFiles(Recording(), BUILTINS)
    view.write("skills/weather/SKILL.md", b"x", if_match=WithBuiltinFiles.BUILTIN_ETAG)
    view.write("notes.md", b"y")
    assert writes == [(None, True), (None, False)]


def test_an_override_created_concurrently_is_edited_not_overwritten() -> None:
    class Racing(MemoryWorkspace):
        raced = False

        def write(
            self,
            path: str,
            data: bytes,
            *,
            if_match: str | None = None,
            if_none_match: bool = False,
        ) -> str:
            if not self.raced:
                self.raced = True
                self.files[path] = b"# Their weather\n"  # someone else's override appears
            return super().write(path, data, if_match=if_match, if_none_match=if_none_match)

    inner = Racing()
    view = WithBuiltinFiles(inner, BUILTINS)
    update_text(view, "skills/weather/SKILL.md", lambda text: (text or "") + "mine\n")
    assert inner.files["skills/weather/SKILL.md"] == b"# Their weather\nmine\n"


# -- listing ------------------------------------------------------------------------------------


def test_list_dir_merges_without_duplicates_folders_first(view: WithBuiltinFiles) -> None:
    assert view.list_dir("") == [
        Entry("skills", 0, True),
        Entry("AGENTS.md", 9, False),
    ]
    assert view.list_dir("skills") == [
        Entry("skills/cron", 0, True),
        Entry("skills/mine", 0, True),
        Entry("skills/weather", 0, True),
    ]
    assert view.list_dir("skills/weather") == [
        Entry("skills/weather/references", 0, True),
        Entry("skills/weather/SKILL.md", len(BUILTINS["skills/weather/SKILL.md"]), False),
    ]
    # The workspace's own file, with its own size, not the built-in's.
    assert view.list_dir("skills/cron") == [Entry("skills/cron/SKILL.md", 21, False)]


def test_list_dir_does_not_mix_up_folders_sharing_a_prefix() -> None:
    view = WithBuiltinFiles(
        MemoryWorkspace({"skills/weather-extra/SKILL.md": "x"}), {"skills/weather/SKILL.md": b"y"}
    )
    assert [entry.path for entry in view.list_dir("skills/weather")] == ["skills/weather/SKILL.md"]


def test_list_files_merges_without_duplicates(view: WithBuiltinFiles) -> None:
    assert view.list_files("skills") == [
        Entry("skills/cron/SKILL.md", 21, False),
        Entry("skills/mine/SKILL.md", 7, False),
        Entry("skills/weather/SKILL.md", len(BUILTINS["skills/weather/SKILL.md"]), False),
        Entry("skills/weather/references/codes.md", 8, False),
    ]
    assert [entry.path for entry in view.list_files("")] == [
        "AGENTS.md",
        "skills/cron/SKILL.md",
        "skills/mine/SKILL.md",
        "skills/weather/SKILL.md",
        "skills/weather/references/codes.md",
    ]
    assert view.list_files("memory") == []


# -- through the real tools ---------------------------------------------------------------------


@pytest.fixture
def real_builtins() -> dict[str, bytes]:
    return {path: text.encode() for path, text in builtin_skill_files().items()}


def call(view: WithBuiltinFiles, name: str, **arguments: object) -> str:
    return JobTools(file_tools(), view).execute(ToolCall("call_1", name, json.dumps(arguments)))


def test_read_file_of_a_builtin_skill(real_builtins: dict[str, bytes]) -> None:
    view = WithBuiltinFiles(MemoryWorkspace(), real_builtins)
    assert "skills/weather/SKILL.md" in real_builtins
    result = call(view, "read_file", path="skills/weather/SKILL.md")
    assert result == real_builtins["skills/weather/SKILL.md"].decode()
    assert "name: weather" in result


def test_edit_file_on_a_builtin_skill_creates_an_override(real_builtins: dict[str, bytes]) -> None:
    inner = MemoryWorkspace()
    view = WithBuiltinFiles(inner, real_builtins)
    original = real_builtins["skills/weather/SKILL.md"]
    result = call(
        view,
        "edit_file",
        path="skills/weather/SKILL.md",
        old_text="# Weather",
        new_text="# Weather (mine)",
    )
    assert result == "Replaced 1 occurrence(s) in skills/weather/SKILL.md."
    assert inner.files["skills/weather/SKILL.md"] == original.replace(
        b"# Weather", b"# Weather (mine)", 1
    )
    assert real_builtins["skills/weather/SKILL.md"] == original
    assert call(view, "read_file", path="skills/weather/SKILL.md").count("# Weather (mine)") == 1


def test_write_file_on_a_builtin_skill_creates_an_override(real_builtins: dict[str, bytes]) -> None:
    inner = MemoryWorkspace()
    view = WithBuiltinFiles(inner, real_builtins)
    assert call(view, "write_file", path="skills/cron/SKILL.md", content="# Cron\n").startswith(
        "Wrote"
    )
    assert inner.files == {"skills/cron/SKILL.md": b"# Cron\n"}


def test_grep_finds_text_in_builtin_skills(real_builtins: dict[str, bytes]) -> None:
    view = WithBuiltinFiles(
        MemoryWorkspace({"skills/mine/SKILL.md": "uses wttr.in too\n"}), real_builtins
    )
    result = call(view, "grep", pattern="wttr.in", path="skills", literal=True)
    lines = result.splitlines()
    assert any(line.startswith("skills/weather/SKILL.md:") for line in lines)
    assert "skills/mine/SKILL.md:1: uses wttr.in too" in lines


def test_list_dir_tool_shows_builtin_skill_folders(real_builtins: dict[str, bytes]) -> None:
    view = WithBuiltinFiles(MemoryWorkspace(), real_builtins)
    listing = call(view, "list_dir", path="skills").splitlines()
    assert "skills/weather/ (folder)" in listing
    assert "skills/memory/ (folder)" in listing
