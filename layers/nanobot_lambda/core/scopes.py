"""Scopes: a private workspace for every person and every group, beside the owner's.

The owner (`OWNER_ID`, by default the first user id in ALLOW_FROM) keeps the workspace as it
always was. Every other person's private chat, and every group chat, works in a scope of its
own: its memory (memory/MEMORY.md, memory/HISTORY.md and the archives), USER.md, uploads and any
file it creates live there, and nothing in it can be reached from another scope or from the
owner's workspace. The shared parts (AGENTS.md, SOUL.md, IDENTITY.md, TOOLS.md, skills/) are read
from the owner's workspace and are read-only in a scope.

A scope is a workspace of its own (the storage puts it beside the owner's, never under it, see
`adapters/aws/workspace.py`), so no path a tool is given, however it is written, can name
another scope: paths are normalised inside the workspace they are given to (`core/paths.py`),
and a scope's workspace holds only that scope.

Sessions, usage and jobs are per chat already; the scope of a job is that of its chat
(`scope_of_chat`), so a person's cron jobs and background tasks work in their scope too. The
heartbeat is the owner's. Which chat a job is for is derived in one place for every kind of
update and job (its subject, core/subjects.py); a job without a chat is refused, never run in
the owner's workspace for want of one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nanobot_lambda.core.errors import ToolError
from nanobot_lambda.core.workspace import Entry, Workspace, WorkspaceFile

# Read from the owner's workspace in every scope, and read-only there.
SHARED_FILES = frozenset({"AGENTS.md", "SOUL.md", "IDENTITY.md", "TOOLS.md"})
SHARED_FOLDERS = ("skills",)


@dataclass(frozen=True)
class Scope:
    """Whose workspace a job works in: the owner's (`name` ""), a person's or a group's."""

    name: str = ""

    @property
    def is_owner(self) -> bool:
        return not self.name


OWNER = Scope()


def scope_of_chat(chat_id: int, owner: int | None) -> Scope:
    """A private chat is its person's scope (the owner's is the owner's workspace), a group
    chat the group's. Without a known owner every chat shares the owner's workspace, as before
    scopes (README: set OWNER_ID when ALLOW_FROM lists no user id)."""
    if owner is None or chat_id == owner:
        return OWNER
    if chat_id > 0:
        return Scope(f"people/{chat_id}")
    return Scope(f"groups/{-chat_id}")


def is_shared(path: str) -> bool:
    """Whether a (normalised) path is one of the shared parts."""
    return path in SHARED_FILES or any(
        path == folder or path.startswith(f"{folder}/") for folder in SHARED_FOLDERS
    )


class SharedFileReadOnly(ToolError):
    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path} is shared by everyone who talks to the assistant and only its owner may "
            "change it; write your own notes to another file (for example notes.md)"
        )


class ScopedWorkspace:
    """A scope's view: the shared parts from the owner's workspace (`shared`), read-only;
    everything else from the scope's own workspace (`private`)."""

    def __init__(self, shared: Workspace, private: Workspace) -> None:
        self._shared = shared
        self._private = private

    def _for(self, path: str) -> Workspace:
        return self._shared if is_shared(path) else self._private

    def refresh(self) -> None:
        self._shared.refresh()
        self._private.refresh()

    def read(self, path: str, *, fresh: bool = False) -> WorkspaceFile | None:
        return self._for(path).read(path, fresh=fresh)

    def write(
        self, path: str, data: bytes, *, if_match: str | None = None, if_none_match: bool = False
    ) -> str:
        if is_shared(path):
            raise SharedFileReadOnly(path)
        return self._private.write(path, data, if_match=if_match, if_none_match=if_none_match)

    def list_dir(self, path: str) -> list[Entry]:
        if is_shared(path):
            return self._shared.list_dir(path)
        own = self._private.list_dir(path)
        if path:
            return own
        shared = [entry for entry in self._shared.list_dir("") if is_shared(entry.path)]
        taken = {entry.path for entry in shared}
        entries = [*shared, *(entry for entry in own if entry.path not in taken)]
        return sorted(entries, key=lambda entry: (not entry.is_dir, entry.path))

    def list_files(self, path: str) -> list[Entry]:
        if is_shared(path):
            return self._shared.list_files(path)
        own = self._private.list_files(path)
        if path:
            return own
        shared = [entry for entry in self._shared.list_files("") if is_shared(entry.path)]
        taken = {entry.path for entry in shared}
        return sorted(
            [*shared, *(entry for entry in own if entry.path not in taken)],
            key=lambda entry: entry.path,
        )


class ScopeWorkspaces:
    """Each scope's view (the owner's workspace, or a `ScopedWorkspace`), made once per
    container and kept, so that a scope's files stay cached from one of its jobs to the next.
    A job's context holds its scope's view (tools/context.py): nothing is switched."""

    def __init__(self, owner: Workspace, private: Callable[[Scope], Workspace]) -> None:
        self._owner = owner
        self._private = private
        self._views: dict[Scope, Workspace] = {}

    def of(self, scope: Scope) -> Workspace:
        """The workspace a job in `scope` works in."""
        if scope.is_owner:
            return self._owner
        if scope not in self._views:
            self._views[scope] = ScopedWorkspace(self._owner, self._private(scope))
        return self._views[scope]
