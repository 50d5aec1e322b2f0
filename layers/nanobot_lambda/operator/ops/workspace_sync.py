"""`workspace pull` / `workspace push`: the S3 workspace as a local folder, edited by the owner.

`pull` writes every workspace file into the folder and records, for each, the ETag it had and
the SHA-256 of what was written, in the manifest `.nanobot-sync.json`. `push` sends back the
files whose content changed since, each written on the condition that the workspace still
holds the version pulled (`If-Match` its ETag; `If-None-Match: *` for a new file): a file the
assistant changed meanwhile is refused, never overwritten, unless `force`. A file deleted
locally is deleted in the workspace only with `delete` (the bucket keeps old versions 30 days).

The owner's workspace is synced by default; a person's or a group's scope (`core/scopes.py`)
with `scope` (`parse_scope` reads the operator's `--scope`, strictly: it can only ever name
`scopes/people/<digits>/` or `scopes/groups/<digits>/`). The manifest records the bucket and the
prefix pulled from, and a folder is never synced with another prefix: one person's files cannot
be pushed into another's scope, or into the owner's workspace, by mistake.

Hidden files and folders, symlinks and the manifest are never synced, and every path must pass
the file tools' own check (`paths.normalize_path`): nothing outside the workspace, or outside
the folder, is read or written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from nanobot_lambda.adapters.aws.errors import error_code
from nanobot_lambda.adapters.aws.workspace import (
    SCOPES_PREFIX,
    WORKSPACE_PREFIX,
    S3Workspace,
    scope_prefix,
)
from nanobot_lambda.core.errors import NotFound
from nanobot_lambda.core.paths import PathError, normalize_path
from nanobot_lambda.core.scopes import OWNER, Scope
from nanobot_lambda.core.workspace import WriteConflict
from nanobot_lambda.operator.ops.deployment import OperatorError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

MANIFEST = ".nanobot-sync.json"
Progress = Callable[[str], None]

SCOPE_FORMS = (
    "people/<user id>, groups/<chat id> (with or without its minus sign), or a bare Telegram "
    "chat id (222222222 is people/222222222, -1001234567890 is groups/1001234567890)"
)
# ASCII digits only (not \d, which takes any Unicode digit), and never more than a chat id has.
_ID = "[0-9]{1,20}"
_QUALIFIED = re.compile(rf"(people)/({_ID})|(groups)/-?({_ID})")
_BARE = re.compile(rf"(-?)({_ID})")


def parse_scope(value: str) -> Scope:
    """The scope an operator names: `people/<user id>`, `groups/<chat id>` (a group's chat id
    with or without its minus sign), or a bare chat id (positive: a person, negative: a group).
    Anything else is refused, so no value can reach a prefix outside scopes/people/<digits>/ or
    scopes/groups/<digits>/; ids are written canonically (no leading zeros)."""
    qualified = _QUALIFIED.fullmatch(value)
    if qualified:
        kind = qualified.group(1) or qualified.group(3)
        digits = qualified.group(2) or qualified.group(4)
    else:
        bare = _BARE.fullmatch(value)
        if bare is None:
            raise OperatorError(f"--scope {value!r} is not a scope: give {SCOPE_FORMS}")
        kind = "groups" if bare.group(1) else "people"
        digits = bare.group(2)
    number = int(digits)
    if number == 0:
        raise OperatorError(f"--scope {value!r}: 0 is not a Telegram id; give {SCOPE_FORMS}")
    return Scope(f"{kind}/{number}")


def workspace_prefix(scope: Scope) -> str:
    """Where a scope's files are in the workspace bucket: the owner's under workspace/."""
    return WORKSPACE_PREFIX if scope.is_owner else scope_prefix(scope)


def describe_prefix(prefix: str) -> str:
    """A bucket prefix as the operator names it: the owner's workspace or `--scope NAME`."""
    if prefix == WORKSPACE_PREFIX:
        return f"the owner's workspace ({prefix})"
    if prefix.startswith(SCOPES_PREFIX) and prefix.endswith("/"):
        return f"scope {prefix[len(SCOPES_PREFIX) : -1]} ({prefix})"
    return repr(prefix)


@dataclass(frozen=True)
class Synced:
    etag: str
    sha256: str


@dataclass
class Manifest:
    bucket: str | None = None
    # The bucket prefix pulled from (workspace/, or a scope's); None until the first sync.
    prefix: str | None = None
    files: dict[str, Synced] = field(default_factory=dict)

    @classmethod
    def load(cls, folder: Path) -> Manifest:
        path = folder / MANIFEST
        if not path.is_file():
            return cls()
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            files = {name: Synced(**entry) for name, entry in raw["files"].items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            raise OperatorError(
                f"{path} is not a sync manifest: delete it and pull again"
            ) from None
        unsafe = sorted(name for name in files if not syncable(name))
        if unsafe:
            raise OperatorError(
                f"{path} names {unsafe[0]!r}, outside the workspace: delete it and pull again"
            )
        # A manifest written before scopes could only come from the owner's workspace.
        prefix = raw.get("prefix", WORKSPACE_PREFIX)
        if not isinstance(prefix, str):
            raise OperatorError(f"{path} is not a sync manifest: delete it and pull again")
        return cls(bucket=raw.get("bucket"), prefix=prefix, files=files)

    def save(self, folder: Path) -> None:
        files = {name: vars(entry) for name, entry in sorted(self.files.items())}
        record = {"bucket": self.bucket, "prefix": self.prefix, "files": files}
        text = json.dumps(record, indent=2) + "\n"
        _write_atomically(folder / MANIFEST, text.encode("utf-8"))


@dataclass
class SyncReport:
    transferred: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    conflicts: list[str] = field(default_factory=list)  # one line each: path and why
    notes: list[str] = field(default_factory=list)  # files deliberately left alone


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def syncable(path: str) -> bool:
    """Whether a workspace-relative path takes part: not hidden, not the manifest, safe."""
    if any(part.startswith(".") for part in path.split("/")):
        return False
    try:
        return normalize_path(path) == path
    except PathError:
        return False


def _write_atomically(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".nanobot-sync-")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _scope_option(prefix: str) -> str:
    """How to sync a folder of `prefix` again (nothing if the prefix names no scope)."""
    if prefix == WORKSPACE_PREFIX:
        return " without --scope"
    name = prefix[len(SCOPES_PREFIX) : -1]
    try:
        if prefix.startswith(SCOPES_PREFIX) and workspace_prefix(parse_scope(name)) == prefix:
            return f" with --scope {name}"
    except OperatorError:
        pass
    return ""


class WorkspaceSync:
    def __init__(
        self,
        bucket: str,
        s3: S3Client,
        folder: Path,
        progress: Progress = lambda line: None,
        scope: Scope = OWNER,
    ) -> None:
        self._bucket = bucket
        self._s3 = s3
        self._prefix = workspace_prefix(scope)
        self._workspace = S3Workspace(bucket, s3, self._prefix)
        self._folder = folder
        self._progress = progress

    # -- the two sides --------------------------------------------------------------------

    def remote_files(self) -> dict[str, str]:
        """Workspace path -> ETag, for every file that takes part."""
        found: dict[str, str] = {}
        paginator = self._s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self._bucket, Prefix=self._prefix):
            for item in page.get("Contents", []):
                path = item["Key"][len(self._prefix) :]
                if path and not path.endswith("/"):
                    if syncable(path):
                        found[path] = item["ETag"]
                    elif not any(part.startswith(".") for part in path.split("/")):
                        self._progress(f"skipped {path!r}: not a safe workspace path")
        return found

    def local_files(self) -> dict[str, Path]:
        """Workspace path -> local file, for every file of the folder that takes part."""
        found: dict[str, Path] = {}
        for directory, folders, files in os.walk(self._folder):
            folders[:] = sorted(name for name in folders if not name.startswith("."))
            for name in sorted(files):
                local = Path(directory) / name
                path = local.relative_to(self._folder).as_posix()
                if name.startswith(".") or not syncable(path):
                    continue
                if local.is_symlink():
                    self._progress(f"skipped {path}: a symlink")
                    continue
                found[path] = local
        return found

    def _local_target(self, path: str) -> Path:
        target = self._folder / path
        root = self._folder.resolve()
        if not target.resolve().is_relative_to(root):
            raise OperatorError(f"{path} would be written outside {self._folder}: refused")
        return target

    def _check_bucket(self, manifest: Manifest, force: bool) -> None:
        if manifest.bucket not in (None, self._bucket) and not force:
            raise OperatorError(
                f"{self._folder} was pulled from bucket {manifest.bucket}, not "
                f"{self._bucket}: use another folder (or --force)"
            )

    def _check_prefix(self, manifest: Manifest) -> None:
        """One folder, one scope, whatever --force says: a person's memory must not land in
        another's scope, or in the owner's workspace, because of a wrong --scope."""
        if manifest.prefix not in (None, self._prefix):
            raise OperatorError(
                f"{self._folder} was pulled from {describe_prefix(manifest.prefix)}, not "
                f"{describe_prefix(self._prefix)}: sync it{_scope_option(manifest.prefix)}, "
                "or use another folder for this one"
            )

    # -- pull -----------------------------------------------------------------------------

    def pull(self, *, force: bool = False) -> SyncReport:
        self._folder.mkdir(parents=True, exist_ok=True)
        manifest = Manifest.load(self._folder)
        self._check_bucket(manifest, force)
        self._check_prefix(manifest)
        manifest.bucket = self._bucket
        manifest.prefix = self._prefix
        report = SyncReport()
        remote = self.remote_files()
        for path, etag in sorted(remote.items()):
            target = self._local_target(path)
            synced = manifest.files.get(path)
            local_sha = sha256(target.read_bytes()) if target.is_file() else None
            if synced and synced.etag == etag and synced.sha256 == local_sha:
                report.unchanged += 1
                continue
            file = self._workspace.read(path, fresh=True)
            if file is None:  # deleted between the listing and now
                continue
            edited_here = local_sha is not None and (synced is None or synced.sha256 != local_sha)
            if edited_here and local_sha != sha256(file.data) and not force:
                report.conflicts.append(
                    f"{path}: changed here since the last pull; push it first, "
                    "or pull --force to replace it with the workspace's version"
                )
                continue
            _write_atomically(target, file.data)
            manifest.files[path] = Synced(file.etag, sha256(file.data))
            report.transferred.append(path)
            self._progress(f"pulled {path} ({len(file.data)} bytes)")
        for path in sorted(set(manifest.files) - set(remote)):  # deleted in the workspace
            synced = manifest.files.pop(path)
            target = self._local_target(path)
            if not target.is_file():
                continue
            if sha256(target.read_bytes()) == synced.sha256:
                target.unlink()
                report.deleted.append(path)
                self._progress(f"removed {path} (deleted in the workspace)")
            else:
                report.notes.append(f"{path}: deleted in the workspace, kept here (changed)")
        manifest.save(self._folder)
        return report

    # -- push -----------------------------------------------------------------------------

    def push(
        self, *, force: bool = False, delete: bool = False, dry_run: bool = False
    ) -> SyncReport:
        manifest = Manifest.load(self._folder)
        self._check_bucket(manifest, force)
        self._check_prefix(manifest)
        manifest.bucket = self._bucket
        manifest.prefix = self._prefix
        report = SyncReport()
        local = self.local_files()
        for path, source in local.items():
            data = source.read_bytes()
            digest = sha256(data)
            synced = manifest.files.get(path)
            if synced is not None and synced.sha256 == digest:
                report.unchanged += 1
                continue
            if dry_run:
                report.transferred.append(path)
                self._progress(f"would push {path} ({'changed' if synced else 'new'})")
                continue
            problem = None
            try:
                etag = self._upload(path, data, synced, force)
            except WriteConflict:
                problem = (
                    "changed in the workspace since the pull; pull, merge and push again, "
                    "or push --force to overwrite it"
                    if synced
                    else "exists in the workspace; pull first, or push --force to overwrite it"
                )
            except NotFound:
                problem = "deleted in the workspace since the pull; push --force to recreate it"
            if problem is not None:
                report.conflicts.append(f"{path}: {problem}")
                continue
            manifest.files[path] = Synced(etag, digest)
            report.transferred.append(path)
            self._progress(f"pushed {path} ({'changed' if synced else 'new'}, {len(data)} bytes)")
        for path in sorted(set(manifest.files) - set(local)):  # deleted here
            if not delete:
                report.notes.append(
                    f"{path}: deleted here, kept in the workspace (push --delete to delete it)"
                )
                continue
            if dry_run:
                report.deleted.append(path)
                self._progress(f"would delete {path}")
                continue
            if self._delete(path, manifest.files[path], force, report):
                del manifest.files[path]
        if not dry_run:
            manifest.save(self._folder)
        return report

    def _upload(self, path: str, data: bytes, synced: Synced | None, force: bool) -> str:
        if force:
            return self._workspace.write(path, data)
        if synced is None:
            return self._workspace.write(path, data, if_none_match=True)
        return self._workspace.write(path, data, if_match=synced.etag)

    def _delete(self, path: str, synced: Synced, force: bool, report: SyncReport) -> bool:
        condition = {} if force else {"IfMatch": synced.etag}
        try:
            self._s3.delete_object(
                Bucket=self._bucket,
                Key=self._prefix + path,
                **condition,  # type: ignore[arg-type]
            )
        except ClientError as error:
            if error_code(error) in ("NoSuchKey", "404"):
                return True  # already gone
            if error_code(error) not in ("PreconditionFailed", "412"):
                raise
            report.conflicts.append(
                f"{path}: changed in the workspace since the pull, not deleted; "
                "pull to see the change, or push --delete --force"
            )
            return False
        report.deleted.append(path)
        self._progress(f"deleted {path} in the workspace")
        return True
