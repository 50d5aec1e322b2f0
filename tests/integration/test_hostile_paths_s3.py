"""Hostile paths against the real S3 workspace adapter on moto server: nothing outside the
`workspace/` prefix is read or written, whatever path the model sends."""

from __future__ import annotations

import json

import boto3
import pytest

from nanobot_lambda.adapters.aws.clients import s3_client
from nanobot_lambda.adapters.aws.workspace import S3Workspace, scope_workspaces
from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.scopes import Scope, ScopedWorkspace
from nanobot_lambda.operator.local.cfn import TemplateContext
from nanobot_lambda.tools.files import file_tools
from tests.support.hostile_paths import NORMALISED, REFUSED, tool_calls
from tests.support.job_context import JobTools

SECRET = "TOP-SECRET-OUTSIDE-THE-WORKSPACE"
# Keys beside the workspace that a path must never reach (sibling prefixes included).
OUTSIDE = ["secret.txt", "workspace_evil/x.md", "workspace", "workspace.md", "etc/passwd"]


def objects(bucket: str) -> dict[str, bytes]:
    s3 = boto3.client("s3")
    listed = s3.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {
        item["Key"]: s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read() for item in listed
    }


@pytest.fixture
def bucket(resources: TemplateContext) -> str:
    name = resources.refs["WorkspaceBucket"]
    s3 = boto3.client("s3")
    for key in OUTSIDE:
        s3.put_object(Bucket=name, Key=key, Body=f"{SECRET} {key}".encode())
    s3.put_object(Bucket=name, Key="workspace/AGENTS.md", Body=b"# Agents\n")
    return name


def run_everything(registry: JobTools, path: str) -> list[str]:
    return [
        registry.execute(ToolCall("c1", name, json.dumps(arguments)))
        for name, arguments in tool_calls(path).items()
    ]


def test_no_hostile_path_reaches_outside_the_workspace_prefix(bucket: str) -> None:
    before = objects(bucket)
    registry = JobTools(file_tools(), S3Workspace(bucket, s3_client()))
    results = []
    for path, reason in REFUSED:
        outcome = run_everything(registry, path)
        if path.strip() not in ("", ".", "./"):  # list_dir and grep take those as the root
            assert all(result.startswith("Error: ") and reason in result for result in outcome)
        results += outcome
    for path, _ in NORMALISED:
        results += run_everything(registry, path)
    results.append(registry.execute(ToolCall("c1", "grep", json.dumps({"pattern": "SECRET"}))))

    after = objects(bucket)
    # The keys outside the workspace are exactly as they were; nothing new appeared there.
    assert {k: v for k, v in after.items() if not k.startswith("workspace/")} == {
        key: before[key] for key in OUTSIDE
    }
    # Inside, exactly the normalised paths were written (and edited), nothing else.
    written = {f"workspace/{expected}" for _, expected in NORMALISED}
    assert {k for k in after if k.startswith("workspace/")} == written | {"workspace/AGENTS.md"}
    assert all(after[key] == b"edited" for key in written)
    # And no tool ever returned what lies outside.
    assert not [result for result in results if SECRET in result]


def test_no_hostile_path_reaches_out_of_a_scope(bucket: str) -> None:
    """A person's scope (scopes/people/222222222/) with the owner's workspace beside it and
    another person's scope: whatever the path, including the scopes' own storage names, the
    tools write only inside the scope and read nothing of the owner's or the other's."""
    s3 = boto3.client("s3")
    s3.put_object(Bucket=bucket, Key="workspace/memory/MEMORY.md", Body=f"{SECRET} owner".encode())
    s3.put_object(Bucket=bucket, Key="scopes/people/333/USER.md", Body=f"{SECRET} carol".encode())
    before = objects(bucket)
    client = s3_client()
    scoped = ScopedWorkspace(
        S3Workspace(bucket, client), scope_workspaces(bucket, client)(Scope("people/222222222"))
    )
    registry = JobTools(file_tools(), scoped)
    aimed = [
        "scopes/people/333/USER.md",
        "../333/USER.md",
        "../../workspace/memory/MEMORY.md",
        "people/333/USER.md",
        "%2e%2e/%2e%2e/workspace/memory/MEMORY.md",
        "\u2025/\u2025/workspace/memory/MEMORY.md",  # two-dot leaders
        "memory/MEMORY.md",  # the scope's own, not the owner's
    ]
    results = []
    for path in [*aimed, *(path for path, _ in REFUSED), *(path for path, _ in NORMALISED)]:
        results += run_everything(registry, path)
    results.append(registry.execute(ToolCall("c1", "grep", json.dumps({"pattern": "SECRET"}))))

    after = objects(bucket)
    mine = "scopes/people/222222222/"
    assert {k: v for k, v in after.items() if not k.startswith(mine)} == before
    assert {k for k in after if k.startswith(mine)}  # it did write, inside its scope
    assert not [result for result in results if SECRET in result]
