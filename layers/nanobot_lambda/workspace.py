"""The workspace: the assistant's files (AGENTS.md, SOUL.md, memory/, skills/…) in S3.

All keys live under `workspace/` in the workspace bucket. Paths given here are already
workspace-relative and normalised (see `paths.normalize_path`); this layer adds the prefix, so
nothing outside `workspace/` is ever read or written.

Concurrency: several containers may edit the same file at once. Every change goes through
`update_text`, a read-modify-write whose write is conditional on the ETag that was read
(`If-Match`, or `If-None-Match: *` for a new file); on a conflict the change is re-applied to
the fresh version. No edit is ever lost and no file is ever half-written (S3 puts are atomic).

Cost: a container keeps the files it has read, keyed by ETag. `refresh()` at the start of a turn
lists the workspace once; reads of listed files whose ETag has not changed then cost no request,
and absent files are known absent. So a warm turn on an unchanged workspace makes one S3 request
however many bootstrap files and skills there are. The listing stops after `skills/`: folders
sorting after it (such as `uploads/`, where media lands) are read on demand, not listed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING, Protocol

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

WORKSPACE_PREFIX = "workspace/"
# Workspace paths up to and including the skills/ folder are listed by refresh().
LISTED_UNTIL = "skills/\U0010ffff"
UPDATE_ATTEMPTS = 10
CONFLICT_BACKOFF_SECONDS = 0.02  # doubled per lost race, with full jitter, at most 1 s
MAX_CACHED_FILE_BYTES = 2_000_000


class WriteConflict(Exception):
    """A conditional write lost a race: the file changed (or appeared) since it was read."""


class NotText(Exception):
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


class Workspace(Protocol):
    def refresh(self) -> None:
        """Start of a turn: revalidate what the container has cached."""
        ...

    def read(self, path: str, *, fresh: bool = False) -> WorkspaceFile | None:
        """The file, or None. `fresh` bypasses any cache (used after a write conflict)."""
        ...

    def write(
        self, path: str, data: bytes, *, if_match: str | None = None, if_none_match: bool = False
    ) -> str:
        """Store `data`; returns the new ETag. Raises WriteConflict when a condition fails."""
        ...

    def list_dir(self, path: str) -> list[Entry]:
        """Immediate children of a folder ('' is the root), folders first."""
        ...

    def list_files(self, path: str) -> list[Entry]:
        """Every file under a folder ('' is the root), recursively, sorted by path."""
        ...


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


@dataclass(frozen=True)
class _Listed:
    etag: str
    size: int


_UNKNOWN = _Listed(etag="", size=-1)  # listed path whose current version must be fetched


class S3Workspace:
    def __init__(self, bucket: str, s3: S3Client, prefix: str = WORKSPACE_PREFIX) -> None:
        self._bucket = bucket
        self._s3 = s3
        self._prefix = prefix
        self._cache: dict[str, WorkspaceFile] = {}
        self._listing: dict[str, _Listed] | None = None

    def _key(self, path: str) -> str:
        return self._prefix + path

    def refresh(self) -> None:
        """List the workspace (up to skills/) so that unchanged cached files cost no request."""
        listing: dict[str, _Listed] = {}
        arguments = {"Bucket": self._bucket, "Prefix": self._prefix}
        while True:
            page = self._s3.list_objects_v2(**arguments)  # type: ignore[arg-type]
            beyond = False
            for item in page.get("Contents", []):
                path = item["Key"][len(self._prefix) :]
                if path > LISTED_UNTIL:
                    beyond = True
                    break
                listing[path] = _Listed(item["ETag"], item["Size"])
            if beyond or not page.get("IsTruncated"):
                break
            arguments["ContinuationToken"] = page["NextContinuationToken"]
        self._listing = listing
        for path in [path for path in self._cache if path <= LISTED_UNTIL]:
            if path not in listing or listing[path].etag != self._cache[path].etag:
                del self._cache[path]

    def _listed(self, path: str) -> tuple[bool, _Listed | None]:
        """(whether the listing covers `path`, its entry if it exists)."""
        if self._listing is None or path > LISTED_UNTIL:
            return False, None
        return True, self._listing.get(path)

    def read(self, path: str, *, fresh: bool = False) -> WorkspaceFile | None:
        if not fresh:
            covered, listed = self._listed(path)
            if covered and listed is None:
                return None
            cached = self._cache.get(path)
            if cached is not None and listed is not None and listed.etag == cached.etag:
                return cached
        try:
            response = self._s3.get_object(Bucket=self._bucket, Key=self._key(path))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                self._cache.pop(path, None)
                if self._listing is not None and path <= LISTED_UNTIL:
                    self._listing.pop(path, None)  # now known to be absent
                return None
            raise
        file = WorkspaceFile(path, response["Body"].read(), response["ETag"])
        self._remember(file)
        return file

    def write(
        self, path: str, data: bytes, *, if_match: str | None = None, if_none_match: bool = False
    ) -> str:
        conditions: dict[str, str] = {}
        if if_match is not None:
            conditions["IfMatch"] = if_match
        if if_none_match:
            conditions["IfNoneMatch"] = "*"
        try:
            response = self._s3.put_object(
                Bucket=self._bucket,
                Key=self._key(path),
                Body=data,
                ContentType=_content_type(path),
                **conditions,  # type: ignore[arg-type]
            )
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code")
            if code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409"):
                self._forget(path)
                raise WriteConflict(path) from None
            raise
        self._remember(WorkspaceFile(path, data, response["ETag"]))
        return response["ETag"]

    def _remember(self, file: WorkspaceFile) -> None:
        """Cache what the per-turn listing revalidates (up to skills/); other paths, such as
        uploads/, are read from S3 each time and never pile up in the container's memory."""
        covered, _ = self._listed(file.path)
        if not covered or self._listing is None:
            return
        self._listing[file.path] = _Listed(file.etag, len(file.data))
        if len(file.data) <= MAX_CACHED_FILE_BYTES:
            self._cache[file.path] = file

    def _forget(self, path: str) -> None:
        """The stored version is unknown (a write lost a race): the next read goes to S3."""
        self._cache.pop(path, None)
        if self._listing is not None and path <= LISTED_UNTIL:
            self._listing[path] = _UNKNOWN

    def list_dir(self, path: str) -> list[Entry]:
        prefix = self._key(f"{path}/" if path else "")
        folders: list[Entry] = []
        files: list[Entry] = []
        paginator = self._s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self._bucket, Prefix=prefix, Delimiter="/"):
            for common in page.get("CommonPrefixes", []):
                name = common["Prefix"][len(self._prefix) :].rstrip("/")
                folders.append(Entry(name, 0, True))
            for item in page.get("Contents", []):
                name = item["Key"][len(self._prefix) :]
                if name and not name.endswith("/"):
                    files.append(Entry(name, item["Size"], False))
        return folders + files

    def list_files(self, path: str) -> list[Entry]:
        folder = f"{path}/" if path else ""
        if self._listing is not None and folder + "\U0010ffff" <= LISTED_UNTIL:
            # The turn's listing covers this whole folder: no request.
            return [
                Entry(name, listed.size, False)
                for name, listed in sorted(self._listing.items())
                if name.startswith(folder)
            ]
        prefix = self._key(folder)
        files: list[Entry] = []
        paginator = self._s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self._bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                name = item["Key"][len(self._prefix) :]
                if name and not name.endswith("/"):
                    files.append(Entry(name, item["Size"], False))
        return files


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


def _content_type(path: str) -> str:
    if path.endswith((".md", ".txt")):
        return "text/markdown; charset=utf-8" if path.endswith(".md") else "text/plain"
    if path.endswith(".json"):
        return "application/json"
    return "application/octet-stream"


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
