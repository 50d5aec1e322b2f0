"""The Workspace port: S3Workspace on moto server and MemoryWorkspace behave alike."""

from __future__ import annotations

import hashlib

import pytest

from nanobot_lambda.core.errors import NotFound
from nanobot_lambda.core.ports import Workspace
from nanobot_lambda.core.workspace import Entry, WriteConflict


def test_a_missing_file_reads_as_none(workspace: Workspace) -> None:
    workspace.refresh()
    assert workspace.read("memory/MEMORY.md") is None
    assert workspace.read("memory/MEMORY.md", fresh=True) is None


def test_a_written_file_reads_back_with_the_etag_the_write_returned(
    workspace: Workspace,
) -> None:
    etag = workspace.write("notes/a.md", "héllo".encode())
    file = workspace.read("notes/a.md")
    assert file is not None
    assert (file.path, file.data, file.etag) == ("notes/a.md", "héllo".encode(), etag)
    assert file.text == "héllo"
    # S3's ETag of a single-part upload: the quoted MD5 of the bytes, which the fake copies.
    assert etag == f'"{hashlib.md5("héllo".encode(), usedforsecurity=False).hexdigest()}"'


def test_a_new_version_has_a_new_etag_and_the_same_bytes_the_same(workspace: Workspace) -> None:
    first = workspace.write("a.md", b"one")
    second = workspace.write("a.md", b"two")
    again = workspace.write("a.md", b"one")
    assert first != second
    assert again == first


def test_if_match_writes_over_the_version_read(workspace: Workspace) -> None:
    etag = workspace.write("a.md", b"one")
    new = workspace.write("a.md", b"two", if_match=etag)
    file = workspace.read("a.md", fresh=True)
    assert file is not None and (file.data, file.etag) == (b"two", new)


def test_if_match_on_a_changed_file_is_a_conflict_and_keeps_the_other_write(
    workspace: Workspace,
) -> None:
    stale = workspace.write("a.md", b"one")
    workspace.write("a.md", b"theirs")
    with pytest.raises(WriteConflict):
        workspace.write("a.md", b"mine", if_match=stale)
    file = workspace.read("a.md", fresh=True)
    assert file is not None and file.data == b"theirs"


def test_if_match_on_a_file_deleted_since_is_not_found(workspace: Workspace) -> None:
    """The port's promise (S3 answers 404 NoSuchKey): the version named is gone, and nothing is
    written."""
    with pytest.raises(NotFound):
        workspace.write("gone.md", b"mine", if_match='"0123456789abcdef0123456789abcdef"')
    assert workspace.read("gone.md", fresh=True) is None


def test_if_none_match_creates_once(workspace: Workspace) -> None:
    workspace.write("new.md", b"first", if_none_match=True)
    with pytest.raises(WriteConflict):
        workspace.write("new.md", b"second", if_none_match=True)
    file = workspace.read("new.md", fresh=True)
    assert file is not None and file.data == b"first"


def test_list_dir_gives_folders_first_then_files_each_sorted(workspace: Workspace) -> None:
    for path in ("b.md", "a.md", "skills/z/SKILL.md", "memory/MEMORY.md", "skills/a/SKILL.md"):
        workspace.write(path, b"x" * len(path))
    assert workspace.list_dir("") == [
        Entry("memory", 0, True),
        Entry("skills", 0, True),
        Entry("a.md", 4, False),
        Entry("b.md", 4, False),
    ]
    assert workspace.list_dir("skills") == [
        Entry("skills/a", 0, True),
        Entry("skills/z", 0, True),
    ]
    assert workspace.list_dir("skills/a") == [Entry("skills/a/SKILL.md", 17, False)]
    assert workspace.list_dir("nothing") == []


def test_list_files_gives_every_file_under_a_folder_sorted(workspace: Workspace) -> None:
    for path in ("skills/z/SKILL.md", "skills/a/SKILL.md", "skills/a/notes/x.md", "top.md"):
        workspace.write(path, b"12345")
    workspace.refresh()  # the S3 adapter then answers from its listing: the same answer
    expected = [
        Entry("skills/a/SKILL.md", 5, False),
        Entry("skills/a/notes/x.md", 5, False),
        Entry("skills/z/SKILL.md", 5, False),
    ]
    assert workspace.list_files("skills") == expected
    assert [entry.path for entry in workspace.list_files("")] == [
        *(entry.path for entry in expected),
        "top.md",
    ]
    assert workspace.list_files("skill") == []  # a folder, not a prefix of names


def test_a_file_written_after_refresh_is_read_and_listed(workspace: Workspace) -> None:
    workspace.refresh()
    workspace.write("memory/MEMORY.md", b"remember")
    file = workspace.read("memory/MEMORY.md")
    assert file is not None and file.data == b"remember"
    assert [entry.path for entry in workspace.list_files("memory")] == ["memory/MEMORY.md"]
