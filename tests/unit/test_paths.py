"""Path confinement: hostile paths are refused with a message the model can act on, through
`normalize_path` and through every file tool (the corpus is tests/support/hostile_paths.py)."""

from __future__ import annotations

import json

import pytest

from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.paths import PathError, normalize_path
from nanobot_lambda.tools.files import file_tools
from tests.support.fakes import MemoryWorkspace
from tests.support.hostile_paths import NORMALISED, REFUSED, tool_calls
from tests.support.job_context import JobTools

ORIGINAL = {"AGENTS.md": "# Agents\n", "memory/MEMORY.md": "# Memory\n"}


def test_the_corpus_is_large_enough() -> None:
    assert len(REFUSED) >= 30
    assert len({path for path, _ in REFUSED}) == len(REFUSED)  # no duplicates


@pytest.mark.parametrize(("path", "reason"), REFUSED)
def test_hostile_paths_are_refused(path: str, reason: str) -> None:
    with pytest.raises(PathError) as error:
        normalize_path(path)
    assert reason in str(error.value)


@pytest.mark.parametrize(("path", "reason"), REFUSED)
def test_every_file_tool_refuses_hostile_paths_and_changes_nothing(path: str, reason: str) -> None:
    workspace = MemoryWorkspace(dict(ORIGINAL))
    before = dict(workspace.files)
    registry = JobTools(file_tools(), workspace)
    for name, arguments in tool_calls(path).items():
        result = registry.execute(ToolCall("c1", name, json.dumps(arguments)))
        if name in ("list_dir", "grep") and path.strip() in ("", ".", "./"):
            continue  # the workspace root, where a folder is expected
        assert result.startswith("Error: "), (name, result)
        assert reason in result, (name, result)
    assert workspace.files == before


@pytest.mark.parametrize(("path", "expected"), NORMALISED)
def test_safe_paths_are_normalised(path: str, expected: str) -> None:
    assert normalize_path(path) == expected


@pytest.mark.parametrize(("path", "expected"), NORMALISED)
def test_normalised_paths_are_written_where_they_say(path: str, expected: str) -> None:
    workspace = MemoryWorkspace()
    registry = JobTools(file_tools(), workspace)
    result = registry.execute(
        ToolCall("c1", "write_file", json.dumps({"path": path, "content": "x"}))
    )
    assert result == f"Wrote 1 characters to {expected}."
    assert list(workspace.files) == [expected]


def test_root_only_where_allowed() -> None:
    assert normalize_path(".", allow_root=True) == ""
    assert normalize_path("", allow_root=True) == ""
    with pytest.raises(PathError, match="empty"):
        normalize_path(".")


@pytest.mark.parametrize("value", [None, 42, ["a"], {"path": "a"}])
def test_non_strings_are_refused(value: object) -> None:
    with pytest.raises(PathError, match="must be a string"):
        normalize_path(value)
