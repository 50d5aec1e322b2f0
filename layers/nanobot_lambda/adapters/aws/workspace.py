"""The workspace in S3: every key under `workspace/` in the workspace bucket.

Paths given here are already workspace-relative and normalised (`core/paths.py`); this adapter
adds the prefix, so nothing outside `workspace/` is ever read or written. Writes are
conditional (`If-Match` on the ETag that was read, or `If-None-Match: *` for a new file), which
is what `core.workspace.update_text` relies on; a lost race is a `WriteConflict`.

Cost: a container keeps the files it has read, keyed by ETag. `refresh()` at the start of a turn
lists the workspace once; reads of listed files whose ETag has not changed then cost no request,
and absent files are known absent. So a warm turn on an unchanged workspace makes one S3 request
however many bootstrap files and skills there are. The listing stops after `skills/`: folders
sorting after it (such as `uploads/`, where media lands) are read on demand, not listed.

A new container's first turn would read every file of the system prompt one GET after another
(bootstrap files, memory, each skill's SKILL.md). `WorkspacePrefetch` reads them at init
instead, in a thread, while agent_turn's heavy imports (litellm) run; the workspace takes what
arrived at its first `refresh()`, keeping only files whose ETag the turn's own listing still
shows. So nothing read early is ever served stale, and a prefetch that failed or has not
finished costs the turn nothing but the reads it would have made anyway.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from nanobot_lambda.adapters.aws.errors import aws_errors, error_code
from nanobot_lambda.core.errors import NotFound
from nanobot_lambda.core.memory_versions import FileVersion
from nanobot_lambda.core.scopes import Scope
from nanobot_lambda.core.workspace import Entry, WorkspaceFile, WriteConflict

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

logger = logging.getLogger(__name__)

WORKSPACE_PREFIX = "workspace/"
# A person's or a group's own workspace: scopes/people/<user id>/, scopes/groups/<chat id>/,
# beside the owner's, never under it (core/scopes.py).
SCOPES_PREFIX = "scopes/"
# Workspace paths up to and including the skills/ folder are listed by refresh().
LISTED_UNTIL = "skills/\U0010ffff"
MAX_CACHED_FILE_BYTES = 2_000_000
# User metadata of a version written back by /memory restore: the request that wrote it.
RESTORE_REQUEST = "restore-request"
# The prefetch's parallel GETs (they wait on the network, not the imports' CPU).
PREFETCH_WORKERS = 8
# How long the first turn waits for a prefetch still running before reading for itself.
PREFETCH_WAIT_SECONDS = 2.0


@dataclass(frozen=True)
class _Listed:
    etag: str
    size: int


_UNKNOWN = _Listed(etag="", size=-1)  # listed path whose current version must be fetched


def _list(s3: S3Client, bucket: str, prefix: str) -> dict[str, _Listed]:
    """Every file under `prefix` up to and including skills/, by workspace-relative path."""
    listing: dict[str, _Listed] = {}
    arguments = {"Bucket": bucket, "Prefix": prefix}
    while True:
        page = s3.list_objects_v2(**arguments)  # type: ignore[arg-type]
        for item in page.get("Contents", []):
            path = item["Key"][len(prefix) :]
            if path > LISTED_UNTIL:
                return listing
            listing[path] = _Listed(item["ETag"], item["Size"])
        if not page.get("IsTruncated"):
            return listing
        arguments["ContinuationToken"] = page["NextContinuationToken"]


class WorkspacePrefetch:
    """The files `wanted` picks (the system prompt's), read in a background thread: made at
    agent_turn's init, before its heavy imports, and taken by the workspace's first refresh."""

    def __init__(
        self,
        bucket: str,
        s3: S3Client,
        wanted: Callable[[str], bool],
        prefix: str = WORKSPACE_PREFIX,
    ) -> None:
        self._bucket = bucket
        self._s3 = s3
        self._wanted = wanted
        self._prefix = prefix
        self._files: dict[str, WorkspaceFile] = {}
        self._thread = threading.Thread(target=self._run, name="workspace-prefetch", daemon=True)

    def start(self) -> WorkspacePrefetch:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            listing = _list(self._s3, self._bucket, self._prefix)
            paths = [
                path
                for path, listed in listing.items()
                if self._wanted(path) and listed.size <= MAX_CACHED_FILE_BYTES
            ]
            with ThreadPoolExecutor(PREFETCH_WORKERS, "workspace-prefetch") as pool:
                files = list(pool.map(self._get, paths))
        except Exception as error:  # whatever it was, the turn then reads for itself
            logger.warning("workspace prefetch failed: %s", type(error).__name__)
            return
        self._files = {file.path: file for file in files}

    def _get(self, path: str) -> WorkspaceFile:
        response = self._s3.get_object(Bucket=self._bucket, Key=self._prefix + path)
        return WorkspaceFile(path, response["Body"].read(), response["ETag"])

    def wait(self, seconds: float | None = None) -> bool:
        """Whether the prefetch has finished (after waiting at most `seconds` for it)."""
        self._thread.join(seconds)
        return not self._thread.is_alive()

    def take(self, wait_seconds: float = PREFETCH_WAIT_SECONDS) -> dict[str, WorkspaceFile]:
        """What arrived, once (later calls: nothing); nothing if still running after the wait."""
        if not self.wait(wait_seconds):
            logger.info("workspace prefetch still running: the turn reads for itself")
            return {}
        files, self._files = self._files, {}
        return files


class S3Workspace:
    def __init__(
        self,
        bucket: str,
        s3: S3Client,
        prefix: str = WORKSPACE_PREFIX,
        prefetch: WorkspacePrefetch | None = None,
    ) -> None:
        self._bucket = bucket
        self._s3 = s3
        self._prefix = prefix
        self._cache: dict[str, WorkspaceFile] = {}
        self._listing: dict[str, _Listed] | None = None
        self._prefetch = prefetch  # taken at the first refresh

    def _key(self, path: str) -> str:
        return self._prefix + path

    @aws_errors
    def refresh(self) -> None:
        """List the workspace (up to skills/) so that unchanged cached files cost no request."""
        listing = _list(self._s3, self._bucket, self._prefix)
        self._listing = listing
        if self._prefetch is not None:
            prefetched, self._prefetch = self._prefetch.take(), None
            self._cache.update(prefetched)  # those changed since are dropped just below
        for path in [path for path in self._cache if path <= LISTED_UNTIL]:
            if path not in listing or listing[path].etag != self._cache[path].etag:
                del self._cache[path]

    def _listed(self, path: str) -> tuple[bool, _Listed | None]:
        """(whether the listing covers `path`, its entry if it exists)."""
        if self._listing is None or path > LISTED_UNTIL:
            return False, None
        return True, self._listing.get(path)

    @aws_errors
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
            if error_code(error) in ("NoSuchKey", "404"):
                self._cache.pop(path, None)
                if self._listing is not None and path <= LISTED_UNTIL:
                    self._listing.pop(path, None)  # now known to be absent
                return None
            raise
        file = WorkspaceFile(path, response["Body"].read(), response["ETag"])
        self._remember(file)
        return file

    @aws_errors
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
            if error_code(error) in (
                "PreconditionFailed",
                "ConditionalRequestConflict",
                "412",
                "409",
            ):
                self._forget(path)
                raise WriteConflict(path) from None
            if error_code(error) in ("NoSuchKey", "404"):  # If-Match on a file deleted since
                self._forget(path)
                raise NotFound(path) from None
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

    @aws_errors
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

    @aws_errors
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

    @aws_errors
    def versions(self, path: str, limit: int) -> list[FileVersion]:
        """The bucket is versioned (template): its versions of the file, newest first."""
        key = self._key(path)
        found: list[FileVersion] = []
        arguments = {"Bucket": self._bucket, "Prefix": key, "MaxKeys": max(limit, 1) + 10}
        while len(found) < limit:
            page = self._s3.list_object_versions(**arguments)  # type: ignore[arg-type]
            found += [
                FileVersion(item["VersionId"], item["LastModified"], item.get("Size", 0))
                for item in page.get("Versions", [])
                if item["Key"] == key
            ]
            found += [
                FileVersion(item["VersionId"], item["LastModified"], 0, deleted=True)
                for item in page.get("DeleteMarkers", [])
                if item["Key"] == key
            ]
            if not page.get("IsTruncated"):
                break
            arguments["KeyMarker"] = page["NextKeyMarker"]
            arguments["VersionIdMarker"] = page["NextVersionIdMarker"]
        found.sort(key=lambda version: version.modified, reverse=True)
        return found[:limit]

    @aws_errors
    def restored_by(self, path: str, version_id: str) -> str | None:
        try:
            head = self._s3.head_object(
                Bucket=self._bucket, Key=self._key(path), VersionId=version_id
            )
        except ClientError as error:
            if error_code(error) in ("NoSuchKey", "NoSuchVersion", "404", "400", "405"):
                return None  # expired, or a delete marker (HEAD of one is 405)
            raise
        return head.get("Metadata", {}).get(RESTORE_REQUEST)

    @aws_errors
    def write_restored(self, path: str, data: bytes, *, request: str, if_match: str | None) -> None:
        condition = {"IfMatch": if_match} if if_match is not None else {"IfNoneMatch": "*"}
        try:
            response = self._s3.put_object(
                Bucket=self._bucket,
                Key=self._key(path),
                Body=data,
                ContentType=_content_type(path),
                Metadata={RESTORE_REQUEST: request},
                **condition,  # type: ignore[arg-type]
            )
        except ClientError as error:
            if error_code(error) in ("PreconditionFailed", "ConditionalRequestConflict", "412"):
                self._forget(path)
                raise WriteConflict(path) from None
            raise
        self._remember(WorkspaceFile(path, data, response["ETag"]))

    @aws_errors
    def read_version(self, path: str, version_id: str) -> bytes | None:
        try:
            response = self._s3.get_object(
                Bucket=self._bucket, Key=self._key(path), VersionId=version_id
            )
        except ClientError as error:
            if error_code(error) in ("NoSuchKey", "NoSuchVersion", "404", "400"):
                return None
            raise
        return response["Body"].read()


def _content_type(path: str) -> str:
    if path.endswith((".md", ".txt")):
        return "text/markdown; charset=utf-8" if path.endswith(".md") else "text/plain"
    if path.endswith(".json"):
        return "application/json"
    return "application/octet-stream"


def scope_prefix(scope: Scope) -> str:
    return f"{SCOPES_PREFIX}{scope.name}/"


def scope_workspaces(bucket: str, s3: S3Client) -> Callable[[Scope], S3Workspace]:
    """A scope's own workspace in the bucket (the caller keeps one per scope)."""
    return lambda scope: S3Workspace(bucket, s3, scope_prefix(scope))


def any_scope_workspace(bucket: str, s3: S3Client) -> Callable[[Scope], S3Workspace]:
    """Any scope's workspace, the owner's (`workspace/`) included: for /memory's versions."""
    return lambda scope: S3Workspace(
        bucket, s3, WORKSPACE_PREFIX if scope.is_owner else scope_prefix(scope)
    )
