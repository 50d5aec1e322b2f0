"""`onboard` and `workspace pull|push`: the assistant's files in the workspace bucket."""

from __future__ import annotations

import argparse
import secrets
import sys
from datetime import UTC
from pathlib import Path
from typing import Any

from nanobot_lambda.adapters.aws.workspace import S3Workspace
from nanobot_lambda.core.memory import MEMORY_FILE
from nanobot_lambda.core.memory_versions import (
    VERSIONS_SHOWN,
    describe_versions,
    restore_version,
    versions_text,
)
from nanobot_lambda.core.paths import PathError, normalize_path
from nanobot_lambda.core.scopes import OWNER, Scope
from nanobot_lambda.core.workspace import default_workspace_files, seed_workspace
from nanobot_lambda.operator.cli.common import add_command, add_stack_option, deployment
from nanobot_lambda.operator.ops.deployment import OperatorError
from nanobot_lambda.operator.ops.workspace_sync import (
    MANIFEST,
    SCOPE_FORMS,
    SyncReport,
    WorkspaceSync,
    describe_prefix,
    parse_scope,
    workspace_prefix,
)


def register(commands: Any) -> None:
    onboard = add_command(
        commands,
        "onboard",
        help="write the default workspace files, keeping every file that exists",
        description="Write the default workspace files (AGENTS.md, SOUL.md, USER.md, memory/, "
        "...) to the workspace bucket of --stack (or WORKSPACE_BUCKET; with AWS_ENDPOINT_URL, "
        "a local moto server's). A file that exists is never overwritten (conditional write, "
        "If-None-Match: *): running it again writes nothing.",
        examples=[
            "nanobot-lambda onboard --stack nanobot-lambda",
            "AWS_ENDPOINT_URL=http://localhost:5000 WORKSPACE_BUCKET=local-ws nanobot-lambda "
            "onboard",
        ],
        handler=onboard_command,
    )
    add_stack_option(onboard)

    group = add_command(
        commands,
        "workspace",
        help="pull the workspace into a folder to edit it, push your edits back",
        description="Sync the S3 workspace with a local folder, so you edit SOUL.md, USER.md or "
        f"skills in your editor. pull records each file's version in DIR/{MANIFEST}; push "
        "sends the files you changed, refusing any file the assistant changed in the "
        "meantime (unless --force). Hidden files are not synced. The owner's workspace by "
        "default; --scope people/<user id> or groups/<chat id> for the workspace of another "
        "person's private chat or of a group (a folder stays tied to the scope it was pulled "
        "from).",
        examples=[
            "nanobot-lambda workspace pull ./ws --stack nanobot-lambda",
            "nanobot-lambda workspace push ./ws --stack nanobot-lambda",
            "nanobot-lambda workspace pull ./ws-alice --scope people/222222222 --stack "
            "nanobot-lambda",
        ],
    )
    actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    pull = add_command(
        actions,
        "pull",
        help="download every workspace file into DIR",
        description="Download every workspace file into DIR and record its version. Files "
        "you changed in DIR since the last pull are not replaced (unless --force); files "
        "deleted in the workspace are removed from DIR if you had not changed them. With "
        "--scope, the workspace of that person's private chat or of that group instead of the "
        "owner's.",
        examples=[
            "nanobot-lambda workspace pull ./ws --stack nanobot-lambda",
            "nanobot-lambda workspace pull ./ws --force --stack nanobot-lambda",
            "nanobot-lambda workspace pull ./ws-alice --scope people/222222222 --stack "
            "nanobot-lambda",
            "nanobot-lambda workspace pull ./ws-team --scope groups/-1001234567890 --stack "
            "nanobot-lambda",
        ],
        handler=pull_command,
    )
    push = add_command(
        actions,
        "push",
        help="upload the files changed in DIR since the pull",
        description="Upload the files of DIR that changed since the last pull, and new ones. "
        "Each write is conditional on the workspace still holding the version pulled: a file "
        "changed there since is refused (pull, merge, push again) unless --force. Files you "
        "deleted in DIR are deleted in the workspace only with --delete (the bucket keeps old "
        "versions for 30 days). Give the --scope DIR was pulled with: a folder pulled from "
        "one scope is never pushed into another, or into the owner's workspace.",
        examples=[
            "nanobot-lambda workspace push ./ws --stack nanobot-lambda",
            "nanobot-lambda workspace push ./ws --dry-run --stack nanobot-lambda",
            "nanobot-lambda workspace push ./ws --delete --stack nanobot-lambda",
            "nanobot-lambda workspace push ./ws-alice --scope people/222222222 --stack "
            "nanobot-lambda",
        ],
        handler=push_command,
    )
    for action in (pull, push):
        action.add_argument("directory", metavar="DIR", type=Path, help="the local folder")
        action.add_argument(
            "--force", action="store_true", help="overwrite despite a conflicting change"
        )
        action.add_argument(
            "--scope",
            metavar="SCOPE",
            help=f"a person's or a group's workspace instead of the owner's: {SCOPE_FORMS}",
        )
        add_stack_option(action)
    push.add_argument(
        "--delete", action="store_true", help="delete in the workspace what you deleted in DIR"
    )
    push.add_argument("--dry-run", action="store_true", help="show what would be pushed")

    versions = add_command(
        actions,
        "versions",
        help="list a file's earlier versions (memory/MEMORY.md by default)",
        description="List the newest versions of a workspace file, newest first (1 is the "
        "current one), with when, how big and what each changed against the one before: the "
        "bucket keeps every version for 30 days. What /memory shows in the chat.",
        examples=[
            "nanobot-lambda workspace versions --stack nanobot-lambda",
            "nanobot-lambda workspace versions USER.md --scope people/222222222 --stack "
            "nanobot-lambda",
        ],
        handler=versions_command,
    )
    restore = add_command(
        actions,
        "restore",
        help="bring back version N of a file (as a new version)",
        description="Write version N (as `versions` numbers them) of a workspace file back as "
        "its current content. The version it replaces is kept, so a restore is undone the "
        "same way. What /memory restore N does in the chat.",
        examples=[
            "nanobot-lambda workspace restore 2 --stack nanobot-lambda",
            "nanobot-lambda workspace restore 3 USER.md --scope people/222222222 --stack "
            "nanobot-lambda",
        ],
        handler=restore_command,
    )
    restore.add_argument("number", metavar="N", help="the version, as `versions` lists it")
    for action in (versions, restore):
        action.add_argument(
            "path", metavar="PATH", nargs="?", default=MEMORY_FILE, help=f"default: {MEMORY_FILE}"
        )
        action.add_argument(
            "--scope",
            metavar="SCOPE",
            help=f"a person's or a group's workspace instead of the owner's: {SCOPE_FORMS}",
        )
        add_stack_option(action)
    versions.add_argument("--limit", type=int, default=VERSIONS_SHOWN, help="how many to list")


def _progress(line: str) -> None:
    print(f"  {line}", flush=True)


def onboard_command(arguments: argparse.Namespace) -> int:
    target = deployment(arguments)
    (bucket,) = target.require("workspace_bucket")
    print(f"Writing the default workspace files to s3://{bucket}/workspace/ …", flush=True)
    written = seed_workspace(S3Workspace(bucket, target.client("s3")))
    for path in sorted(default_workspace_files()):
        _progress(f"{'wrote' if path in written else 'kept '} {path}")
    kept = len(default_workspace_files()) - len(written)
    print(f"Wrote {len(written)} file(s); kept {kept} that already existed.")
    return 0


def _scope(arguments: argparse.Namespace) -> Scope:
    return OWNER if arguments.scope is None else parse_scope(arguments.scope)


def _sync(arguments: argparse.Namespace, scope: Scope) -> WorkspaceSync:
    target = deployment(arguments)
    (bucket,) = target.require("workspace_bucket")
    return WorkspaceSync(bucket, target.client("s3"), arguments.directory, _progress, scope)


def _finish(report: SyncReport, summary: str) -> int:
    for note in report.notes:
        _progress(note)
    for conflict in report.conflicts:
        print(f"conflict: {conflict}", file=sys.stderr)
    print(summary)
    return 1 if report.conflicts else 0


def pull_command(arguments: argparse.Namespace) -> int:
    scope = _scope(arguments)  # first: a value that is no scope touches nothing
    sync = _sync(arguments, scope)
    print(
        f"Pulling {describe_prefix(workspace_prefix(scope))} into {arguments.directory} …",
        flush=True,
    )
    report = sync.pull(force=arguments.force)
    return _finish(
        report,
        f"Pulled {len(report.transferred)} file(s), removed {len(report.deleted)}, "
        f"{report.unchanged} unchanged, {len(report.conflicts)} conflict(s).",
    )


def _versioned(arguments: argparse.Namespace) -> tuple[S3Workspace, str]:
    scope = _scope(arguments)  # first: a value that is no scope touches nothing
    try:
        path = normalize_path(arguments.path)
    except PathError as error:
        raise OperatorError(f"{arguments.path!r} is not a workspace path: {error}") from None
    target = deployment(arguments)
    (bucket,) = target.require("workspace_bucket")
    return S3Workspace(bucket, target.client("s3"), workspace_prefix(scope)), path


def versions_command(arguments: argparse.Namespace) -> int:
    files, path = _versioned(arguments)
    lines = describe_versions(files, path, max(1, arguments.limit))
    print(versions_text(lines, UTC, path))
    return 0


def restore_command(arguments: argparse.Namespace) -> int:
    files, path = _versioned(arguments)
    # Each run of the command is its own request: running it again restores again.
    answer = restore_version(
        files, arguments.number, request=f"cli:{secrets.token_hex(8)}", path=path
    )
    print(answer)
    return 0 if answer.startswith("Restored") else 1


def push_command(arguments: argparse.Namespace) -> int:
    scope = _scope(arguments)  # first: a value that is no scope touches nothing
    sync = _sync(arguments, scope)
    if not arguments.directory.is_dir():
        print(f"error: {arguments.directory} is not a folder (pull into it first)", file=sys.stderr)
        return 2
    verb = "Would push" if arguments.dry_run else "Pushed"
    report = sync.push(force=arguments.force, delete=arguments.delete, dry_run=arguments.dry_run)
    if not report.transferred and not report.deleted and not report.conflicts:
        return _finish(report, f"Nothing changed ({report.unchanged} file(s) as pulled).")
    return _finish(
        report,
        f"{verb} {len(report.transferred)} file(s), deleted {len(report.deleted)}, "
        f"{report.unchanged} unchanged, {len(report.conflicts)} conflict(s).",
    )
