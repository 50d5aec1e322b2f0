"""Memory you can restore: the versions of a scope's MEMORY.md, and bringing one back.

The workspace bucket keeps every version of every file (S3 versioning; noncurrent versions
expire after 30 days). A consolidation that rewrote MEMORY.md badly, or a model that wrote
something wrong into it, is undone by writing an earlier version's content back: `/memory`
lists the recent versions (1 is the current one) with when, how big and what changed against
the version before; `/memory restore N` writes version N back as a new version, so a restore is
itself undone the same way. `nanobot-lambda workspace versions|restore` does the same from the
command line, for any file of any scope.

The write is conditional on the version that was current when the listing was read: a turn
that wrote MEMORY.md in between is never silently overwritten (the person is asked to look
again). The restored version notes the request that wrote it, so a retried command does not
restore twice (which, with the numbers shifted by one, would undo the first).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Literal, Protocol

from nanobot_lambda.core import texts
from nanobot_lambda.core.memory import MEMORY_FILE
from nanobot_lambda.core.workspace import WorkspaceFile, WriteConflict

VERSIONS_SHOWN = 10
# How many of the newest versions a restore looks through for its own earlier write (a retried
# job): the restore itself and whatever turns wrote in the minutes before the retry.
RESTORE_LOOKBACK = 5
SNIPPET_CHARS = 60


@dataclass(frozen=True)
class FileVersion:
    version_id: str
    modified: datetime  # aware
    size: int
    deleted: bool = False  # a delete marker: the file was absent from then on


class VersionedFiles(Protocol):
    """A workspace that keeps its files' earlier versions (`adapters/aws/workspace.py`)."""

    def read(self, path: str, *, fresh: bool = False) -> WorkspaceFile | None: ...

    def versions(self, path: str, limit: int) -> list[FileVersion]:
        """The file's newest `limit` versions, newest first (delete markers included)."""
        ...

    def read_version(self, path: str, version_id: str) -> bytes | None:
        """One version's content; None when it expired or never was."""
        ...

    def restored_by(self, path: str, version_id: str) -> str | None:
        """The request that wrote this version back as a restore, if one did."""
        ...

    def write_restored(self, path: str, data: bytes, *, request: str, if_match: str | None) -> None:
        """Write `data` as the file's new version, noting the request that restored it;
        conditional on `if_match` (None: on the file being absent). Raises WriteConflict."""
        ...


@dataclass(frozen=True)
class VersionLine:
    number: int  # 1: the current version
    version: FileVersion
    added: int
    removed: int
    first_added: str  # the first line this version added, shortened


def describe_versions(
    files: VersionedFiles, path: str = MEMORY_FILE, limit: int = VERSIONS_SHOWN
) -> list[VersionLine]:
    """The newest versions of `path`, each compared with the one before it."""
    return [line for line, _ in version_diffs(files, path, limit)]


def version_diffs(
    files: VersionedFiles, path: str = MEMORY_FILE, limit: int = VERSIONS_SHOWN
) -> list[tuple[VersionLine, str]]:
    """The newest versions of `path`, each with its unified diff against the one before it
    (the console shows them)."""
    versions = files.versions(path, limit + 1)  # one more: what the oldest shown changed
    contents = [
        b"" if version.deleted else (files.read_version(path, version.version_id) or b"")
        for version in versions
    ]
    lines = []
    for index, version in enumerate(versions[:limit]):
        before = contents[index + 1] if index + 1 < len(contents) else b""
        added, removed, first = _changes(before, contents[index])
        line = VersionLine(index + 1, version, added, removed, first)
        lines.append((line, _diff(before, contents[index])))
    return lines


def versions_text(lines: Sequence[VersionLine], zone: tzinfo, path: str = MEMORY_FILE) -> str:
    """`/memory`'s answer."""
    if not lines:
        return texts.render("memory_no_versions", path=path)
    rows = "\n".join(_row(line, zone) for line in lines)
    return texts.render("memory_versions", path=path, rows=rows)


def restore_version(
    files: VersionedFiles, number_text: str, *, request: str, path: str = MEMORY_FILE
) -> str:
    """`/memory restore N`: write version N back; the answer says what happened.

    `request` names the command (its Telegram update): a job the queue delivers again after the
    restore was written finds its note on one of the newest versions and writes nothing, so a
    retried restore never undoes itself (version N is another version once one is added).
    """
    try:
        number = int(number_text.strip())
    except ValueError:
        return texts.render("memory_restore_usage", path=path)
    versions = files.versions(path, max(number, RESTORE_LOOKBACK)) if 1 <= number <= 100 else []
    if any(files.restored_by(path, v.version_id) == request for v in versions[:RESTORE_LOOKBACK]):
        return texts.render("memory_restored", path=path, number=str(number))
    if number < 1 or len(versions) < number:
        return texts.render("memory_restore_no_such", number=str(number), count=str(len(versions)))
    if number == 1:
        return texts.render("memory_restore_current", path=path)
    outcome = _write_back(files, path, versions[number - 1], request)
    if outcome == "expired":
        return texts.render("memory_restore_expired", number=str(number))
    if outcome == "conflict":
        return texts.render("memory_restore_conflict", path=path)
    return texts.render("memory_restored", path=path, number=str(number))


RestoreOutcome = Literal["restored", "current", "expired", "conflict", "no_such"]


def restore_by_id(
    files: VersionedFiles, version_id: str, *, request: str, path: str = MEMORY_FILE
) -> RestoreOutcome:
    """The console's restore: version `version_id` (as the console listed it; a version id
    names one version however many were added since) written back, as `/memory restore N`
    writes it: noting `request`, so a retried press restores nothing twice, and conditional on
    the current version, so a turn's write in between is never lost ("conflict")."""
    versions = files.versions(path, VERSIONS_SHOWN + 1)
    if any(files.restored_by(path, v.version_id) == request for v in versions[:RESTORE_LOOKBACK]):
        return "restored"
    chosen = next((version for version in versions if version.version_id == version_id), None)
    if chosen is None:
        return "no_such"
    if chosen is versions[0]:
        return "current"
    return _write_back(files, path, chosen, request)


def _write_back(
    files: VersionedFiles, path: str, chosen: FileVersion, request: str
) -> Literal["restored", "expired", "conflict"]:
    data = b"" if chosen.deleted else files.read_version(path, chosen.version_id)
    if data is None:
        return "expired"
    current = files.read(path, fresh=True)
    try:
        files.write_restored(
            path, data, request=request, if_match=current.etag if current else None
        )
    except WriteConflict:
        return "conflict"
    return "restored"


def _diff(before: bytes, after: bytes) -> str:
    old = before.decode("utf-8", "replace").splitlines()
    new = after.decode("utf-8", "replace").splitlines()
    return "\n".join(list(difflib.unified_diff(old, new, lineterm="", n=1))[2:])


def _changes(before: bytes, after: bytes) -> tuple[int, int, str]:
    old = before.decode("utf-8", "replace").splitlines()
    new = after.decode("utf-8", "replace").splitlines()
    added = removed = 0
    first = ""
    for line in difflib.unified_diff(old, new, lineterm="", n=0):
        if line.startswith(("+++", "---", "@@")):
            continue
        if line.startswith("+"):
            added += 1
            if not first and line[1:].strip():
                first = line[1:].strip()
        elif line.startswith("-"):
            removed += 1
    if len(first) > SNIPPET_CHARS:
        first = first[: SNIPPET_CHARS - 1] + "…"
    return added, removed, first


def _row(line: VersionLine, zone: tzinfo) -> str:
    when = line.version.modified.astimezone(zone).strftime("%Y-%m-%d %H:%M")
    if line.version.deleted:
        return f"{line.number}. {when}: deleted"
    change = f"+{line.added} −{line.removed} lines"
    if line.first_added:
        change += f", e.g. “{texts.literal(line.first_added)}”"
    current = " (current)" if line.number == 1 else ""
    return f"{line.number}. {when}{current} · {_size(line.version.size)} · {change}"


def _size(size: int) -> str:
    return f"{size} B" if size < 1024 else f"{size / 1024:.1f} KB"
