"""The S3 workspace adapter on moto server: confinement to workspace/, conditional writes."""

from __future__ import annotations

import json

import boto3
import pytest

from nanobot_lambda.adapters.aws.clients import s3_client
from nanobot_lambda.adapters.aws.workspace import S3Workspace
from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.workspace import WriteConflict, default_workspace_files, seed_workspace
from nanobot_lambda.operator.local.cfn import TemplateContext
from nanobot_lambda.tools.files import file_tools
from tests.support.job_context import JobTools


@pytest.fixture
def bucket(resources: TemplateContext) -> str:
    return resources.refs["WorkspaceBucket"]


@pytest.fixture
def workspace(bucket: str) -> S3Workspace:
    return S3Workspace(bucket, s3_client())


def keys(bucket: str) -> list[str]:
    listed = boto3.client("s3").list_objects_v2(Bucket=bucket)
    return sorted(item["Key"] for item in listed.get("Contents", []))


def test_write_read_under_the_workspace_prefix(workspace: S3Workspace, bucket: str) -> None:
    etag = workspace.write("memory/MEMORY.md", b"# Memory\n- tea")
    file = workspace.read("memory/MEMORY.md")
    assert file is not None
    assert file.text == "# Memory\n- tea"
    assert file.etag == etag
    assert keys(bucket) == ["workspace/memory/MEMORY.md"]
    assert workspace.read("missing.md") is None


def test_conditional_writes(workspace: S3Workspace) -> None:
    first = workspace.write("notes.md", b"v1", if_none_match=True)
    with pytest.raises(WriteConflict):
        workspace.write("notes.md", b"other", if_none_match=True)
    second = workspace.write("notes.md", b"v2", if_match=first)
    with pytest.raises(WriteConflict):
        workspace.write("notes.md", b"stale", if_match=first)
    file = workspace.read("notes.md")
    assert file is not None and file.data == b"v2" and file.etag == second


def test_list_dir(workspace: S3Workspace) -> None:
    for path in ("AGENTS.md", "memory/MEMORY.md", "memory/HISTORY.md", "skills/w/SKILL.md"):
        workspace.write(path, b"x")
    root = workspace.list_dir("")
    assert [(e.path, e.is_dir) for e in root] == [
        ("memory", True),
        ("skills", True),
        ("AGENTS.md", False),
    ]
    assert [e.path for e in workspace.list_dir("memory")] == [
        "memory/HISTORY.md",
        "memory/MEMORY.md",
    ]
    assert workspace.list_dir("nothing-here") == []


def test_seed_writes_defaults_once_and_never_overwrites(
    workspace: S3Workspace, bucket: str
) -> None:
    workspace.write("SOUL.md", b"my own soul")
    written = seed_workspace(workspace)
    assert "SOUL.md" not in written
    assert set(written) == set(default_workspace_files()) - {"SOUL.md"}
    soul = workspace.read("SOUL.md")
    assert soul is not None and soul.data == b"my own soul"
    assert seed_workspace(workspace) == []
    assert all(key.startswith("workspace/") for key in keys(bucket))


def test_file_tools_cannot_leave_the_workspace(workspace: S3Workspace, bucket: str) -> None:
    boto3.client("s3").put_object(Bucket=bucket, Key="outside.txt", Body=b"private")
    boto3.client("s3").put_object(Bucket=bucket, Key="workspace_evil/x.md", Body=b"evil")
    registry = JobTools(file_tools(), workspace)
    for path in ("../outside.txt", "/outside.txt", "../workspace_evil/x.md", "..\\outside.txt"):
        result = registry.execute(ToolCall("1", "read_file", json.dumps({"path": path})))
        assert result.startswith("Error:"), path
        assert "private" not in result and "evil" not in result
    registry.execute(ToolCall("1", "write_file", json.dumps({"path": "../x", "content": "y"})))
    assert keys(bucket) == ["outside.txt", "workspace_evil/x.md"]


def test_memory_versions_come_from_the_versioned_bucket_and_restore_brings_one_back(
    workspace: S3Workspace, bucket: str
) -> None:
    """The template versions the bucket: /memory lists MEMORY.md's versions in a scope (and not
    another file's that shares its name as a prefix), and a restore writes one back."""
    from zoneinfo import ZoneInfo

    from nanobot_lambda.adapters.aws.workspace import scope_workspaces
    from nanobot_lambda.core.memory_versions import (
        describe_versions,
        restore_version,
        versions_text,
    )
    from nanobot_lambda.core.scopes import Scope

    alice = scope_workspaces(bucket, s3_client())(Scope("people/222"))
    alice.write("memory/MEMORY.md", b"# Memory\n- likes tea\n")
    alice.write("memory/MEMORY.md", b"# Memory\n")
    alice.write("memory/MEMORY.md.bak", b"not memory")
    workspace.write("memory/MEMORY.md", b"the owner's memory\n")

    lines = describe_versions(alice)
    assert [(line.number, line.added, line.removed) for line in lines] == [(1, 0, 1), (2, 2, 0)]
    assert "(current)" in versions_text(lines, ZoneInfo("Europe/Lisbon"))

    assert "Restored" in restore_version(alice, "2", request="update:9")
    restored = alice.read("memory/MEMORY.md", fresh=True)
    assert restored is not None and restored.text == "# Memory\n- likes tea\n"
    assert len(alice.versions("memory/MEMORY.md", 10)) == 3
    owner = workspace.read("memory/MEMORY.md", fresh=True)
    assert owner is not None and owner.text == "the owner's memory\n"  # another scope untouched
    assert alice.read_version("memory/MEMORY.md", "no-such-version") is None
    # Delivered again: the restored version's note says this request wrote it.
    assert "Restored" in restore_version(alice, "2", request="update:9")
    assert len(alice.versions("memory/MEMORY.md", 10)) == 3
