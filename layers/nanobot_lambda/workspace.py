"""The workspace: the assistant's files (AGENTS.md, SOUL.md, memory/, skills/…) in S3.

All keys live under `workspace/` in the workspace bucket. Paths given here are already
workspace-relative and normalised (see `paths.normalize_path`); this layer adds the prefix, so
nothing outside `workspace/` is ever read or written. Writes can be conditional (ETag), which
the edit tools use to never lose a concurrent edit.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Protocol

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

WORKSPACE_PREFIX = "workspace/"


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
    def read(self, path: str) -> WorkspaceFile | None: ...

    def write(
        self, path: str, data: bytes, *, if_match: str | None = None, if_none_match: bool = False
    ) -> str:
        """Store `data`; returns the new ETag. Raises WriteConflict when a condition fails."""
        ...

    def list_dir(self, path: str) -> list[Entry]: ...


class S3Workspace:
    def __init__(self, bucket: str, s3: S3Client, prefix: str = WORKSPACE_PREFIX) -> None:
        self._bucket = bucket
        self._s3 = s3
        self._prefix = prefix

    def _key(self, path: str) -> str:
        return self._prefix + path

    def read(self, path: str) -> WorkspaceFile | None:
        try:
            response = self._s3.get_object(Bucket=self._bucket, Key=self._key(path))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise
        return WorkspaceFile(path, response["Body"].read(), response["ETag"])

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
                raise WriteConflict(path) from None
            raise
        return response["ETag"]

    def list_dir(self, path: str) -> list[Entry]:
        """Immediate children of a folder ('' is the workspace root), folders first."""
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

    def walk(node: resources.abc.Traversable, prefix: str) -> None:
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
