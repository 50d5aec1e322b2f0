"""The workspace: the assistant's files (AGENTS.md, SOUL.md, memory/, skills/…).

Paths are workspace-relative and normalised (see `paths.normalize_path`); where the files live
is the adapter's business (`adapters/aws/workspace.py`: S3, under `workspace/`).

Concurrency: several containers may edit the same file at once. Every change goes through
`update_text`, a read-modify-write whose write is conditional on the version (ETag) that was
read; on a conflict the change is re-applied to the fresh version. No edit is ever lost and no
file is ever half-written.

Here too: the overlay of the package's built-in files (`WithBuiltinFiles`) and the default
files a new workspace starts with (`seed_workspace`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Protocol

from nanobot_lambda.core.errors import NanobotError, StorageConflict

UPDATE_ATTEMPTS = 10
CONFLICT_BACKOFF_SECONDS = 0.02  # doubled per lost race, with full jitter, at most 1 s


class WriteConflict(StorageConflict):
    """A conditional write lost a race: the file changed (or appeared) since it was read."""


class NotText(NanobotError):
    """The file is not UTF-8 text."""


@dataclass(frozen=True)
class WorkspaceFile:
    path: str
    data: bytes
    etag: str

    @property
    def text(self) -> str:
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            raise NotText(self.path) from None


@dataclass(frozen=True)
class Entry:
    path: str
    size: int
    is_dir: bool


def update_text(
    workspace: Workspace,
    path: str,
    change: Callable[[str | None], str | None],
    *,
    attempts: int = UPDATE_ATTEMPTS,
) -> str | None:
    """Apply `change` (old text or None -> new text, or None for "no change") atomically.

    The write is conditional on the version read; when another writer got there first, the
    change is applied again to the fresh version. Exceptions from `change` propagate (e.g. an
    edit whose old text is gone). Returns the text written, or None when nothing was written.
    """
    fresh = False
    for attempt in range(attempts):
        file = workspace.read(path, fresh=fresh)
        updated = change(file.text if file is not None else None)
        if updated is None:
            return None
        try:
            if file is None:
                workspace.write(path, updated.encode("utf-8"), if_none_match=True)
            else:
                workspace.write(path, updated.encode("utf-8"), if_match=file.etag)
        except WriteConflict:
            fresh = True
            _back_off(attempt)
            continue
        return updated
    raise WriteConflict(path)


def _back_off(attempt: int) -> None:
    """Spread out writers that keep colliding on the same file (full jitter)."""
    time.sleep(random.uniform(0, min(1.0, CONFLICT_BACKOFF_SECONDS * 2**attempt)))  # noqa: S311


def replace_file(
    workspace: Workspace, path: str, data: bytes, *, attempts: int = UPDATE_ATTEMPTS
) -> str:
    """Create or replace a whole file: a conditional create, or a write on the version read.

    The new content does not depend on the old, so a lost race simply retries on the newer
    version; the condition guarantees the write is never based on a version that vanished.
    """
    fresh = False
    for attempt in range(attempts):
        current = workspace.read(path, fresh=fresh)
        try:
            if current is None:
                return workspace.write(path, data, if_none_match=True)
            return workspace.write(path, data, if_match=current.etag)
        except WriteConflict:
            fresh = True
            _back_off(attempt)
    raise WriteConflict(path)


class WithBuiltinFiles:
    """The workspace as the model's tools see it: the package's built-in files (the built-in
    skills) are readable where the skills summary says they are, beneath the workspace's own.

    They are read-only: the package is never written. Writing one of their paths creates a
    workspace copy, which then overrides the built-in (as a workspace skill overrides a built-in
    skill of the same name).
    """

    BUILTIN_ETAG = '"builtin"'

    def __init__(self, workspace: Workspace, files: Mapping[str, bytes]) -> None:
        self._workspace = workspace
        self._files = dict(files)

    def refresh(self) -> None:
        self._workspace.refresh()

    def read(self, path: str, *, fresh: bool = False) -> WorkspaceFile | None:
        own = self._workspace.read(path, fresh=fresh)
        if own is not None or path not in self._files:
            return own
        return WorkspaceFile(path, self._files[path], self.BUILTIN_ETAG)

    def write(
        self, path: str, data: bytes, *, if_match: str | None = None, if_none_match: bool = False
    ) -> str:
        if if_match == self.BUILTIN_ETAG:  # replacing the built-in = creating the override
            if_match, if_none_match = None, True
        return self._workspace.write(path, data, if_match=if_match, if_none_match=if_none_match)

    def list_dir(self, path: str) -> list[Entry]:
        entries = {entry.path: entry for entry in self._workspace.list_dir(path)}
        folder = f"{path}/" if path else ""
        for name, data in self._files.items():
            if not name.startswith(folder):
                continue
            rest = name[len(folder) :]
            child = folder + rest.split("/", 1)[0]
            if child not in entries:
                entries[child] = (
                    Entry(child, 0, True) if "/" in rest else Entry(child, len(data), False)
                )
        return sorted(entries.values(), key=lambda entry: (not entry.is_dir, entry.path))

    def list_files(self, path: str) -> list[Entry]:
        entries = {entry.path: entry for entry in self._workspace.list_files(path)}
        folder = f"{path}/" if path else ""
        for name, data in self._files.items():
            if name.startswith(folder) and name not in entries:
                entries[name] = Entry(name, len(data), False)
        return sorted(entries.values(), key=lambda entry: entry.path)


def default_workspace_files() -> dict[str, bytes]:
    """The files a fresh workspace starts with, shipped in the package (workspace_defaults/)."""
    root = resources.files("nanobot_lambda") / "workspace_defaults"
    files: dict[str, bytes] = {}

    def walk(node: Traversable, prefix: str) -> None:
        for child in node.iterdir():
            name = f"{prefix}{child.name}"
            if child.is_dir():
                walk(child, name + "/")
            elif not child.name.startswith("."):
                files[name] = child.read_bytes()

    walk(root, "")
    return files


def seed_workspace(workspace: Workspace) -> list[str]:
    """Write the default files that do not exist yet; never overwrite. Returns what was written."""
    written = []
    for path, data in sorted(default_workspace_files().items()):
        try:
            workspace.write(path, data, if_none_match=True)
        except WriteConflict:
            continue
        written.append(path)
    return written


class Workspace(Protocol):
    """The assistant's files, by workspace-relative, normalised path (see `core/paths.py`)."""

    def refresh(self) -> None:
        """Start of a turn: revalidate what the container has cached."""
        ...

    def read(self, path: str, *, fresh: bool = False) -> WorkspaceFile | None:
        """The file, or None. `fresh` bypasses any cache (used after a write conflict)."""
        ...

    def write(
        self, path: str, data: bytes, *, if_match: str | None = None, if_none_match: bool = False
    ) -> str:
        """Store `data`; returns the new ETag. Raises WriteConflict when a condition fails, and
        NotFound when `if_match` names a version of a file deleted since."""
        ...

    def list_dir(self, path: str) -> list[Entry]:
        """Immediate children of a folder ('' is the root), folders first."""
        ...

    def list_files(self, path: str) -> list[Entry]:
        """Every file under a folder ('' is the root), recursively, sorted by path."""
        ...
