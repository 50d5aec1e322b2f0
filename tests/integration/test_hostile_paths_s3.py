"""Hostile paths against the real S3 workspace adapter on moto server: nothing outside the
`workspace/` prefix is read or written, whatever path the model sends."""

from __future__ import annotations

import json

import boto3
import pytest

from nanobot_lambda.adapters.aws.clients import s3_client
from nanobot_lambda.adapters.aws.workspace import S3Workspace
from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.tools import ToolRegistry
from nanobot_lambda.operator.local.cfn import TemplateContext
from nanobot_lambda.tools.files import file_tools
from tests.support.hostile_paths import NORMALISED, REFUSED, tool_calls

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


def run_everything(registry: ToolRegistry, path: str) -> list[str]:
    return [
        registry.execute(ToolCall("c1", name, json.dumps(arguments)))
        for name, arguments in tool_calls(path).items()
    ]


def test_no_hostile_path_reaches_outside_the_workspace_prefix(bucket: str) -> None:
    before = objects(bucket)
    registry = ToolRegistry(file_tools(S3Workspace(bucket, s3_client())))
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
