"""Path confinement: hostile paths are refused with a message the model can act on."""

from __future__ import annotations

import pytest

from nanobot_lambda.paths import PathError, normalize_path

HOSTILE = [
    "../secrets.txt",
    "memory/../../x",
    "..",
    "a/../../b",
    "/etc/passwd",
    "/workspace/AGENTS.md",
    "~/notes.md",
    "~root/.ssh/id_rsa",
    "..\\windows\\system32",
    "memory\\MEMORY.md",
    "C:/Windows/win.ini",
    "c:notes",
    "memory/MEMORY.md\x00.png",
    "notes\n.md",
    "tab\there",
    "\x7fdelete",
    "evil\u202etxt.md",  # right-to-left override
    "zero\u200bwidth",  # zero-width space (format character)
    "a" * 600,
    "dir/" + "b" * 300,
    "../workspace_evil/x",
    "./../x",
    "",
    "   ",
    ".",
    "./",
]


@pytest.mark.parametrize("path", HOSTILE)
def test_hostile_paths_are_refused(path: str) -> None:
    with pytest.raises(PathError) as error:
        normalize_path(path)
    assert str(error.value)  # a readable reason for the model


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("memory/MEMORY.md", "memory/MEMORY.md"),
        ("./memory//MEMORY.md", "memory/MEMORY.md"),
        ("  AGENTS.md ", "AGENTS.md"),
        ("skills/weather/SKILL.md", "skills/weather/SKILL.md"),
        ("notes/日記.md", "notes/日記.md"),
        ("a/./b", "a/b"),
        ("..hidden", "..hidden"),  # a name starting with dots is not a parent reference
    ],
)
def test_safe_paths_are_normalised(path: str, expected: str) -> None:
    assert normalize_path(path) == expected


def test_root_only_where_allowed() -> None:
    assert normalize_path(".", allow_root=True) == ""
    assert normalize_path("", allow_root=True) == ""
    with pytest.raises(PathError, match="empty"):
        normalize_path(".")


@pytest.mark.parametrize("value", [None, 42, ["a"], {"path": "a"}])
def test_non_strings_are_refused(value: object) -> None:
    with pytest.raises(PathError, match="must be a string"):
        normalize_path(value)
