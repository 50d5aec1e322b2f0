"""`sessions list|show|reset` on the template's sessions table (moto server)."""

from __future__ import annotations

import io

import boto3
import pytest

from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.adapters.aws.stop_flags import DynamoStopFlags
from nanobot_lambda.adapters.aws.workspace import S3Workspace
from nanobot_lambda.operator.cli import main
from nanobot_lambda.operator.local.cfn import TemplateContext
from tests.support.deployed import deploy_stack


@pytest.fixture
def stack(resources: TemplateContext) -> str:
    store = DynamoSessionStore(resources.refs["SessionsTable"], boto3.client("dynamodb"))
    ada = store.load("telegram:111111111", 50)
    store.append(
        ada,
        [
            {"role": "user", "content": "What is the capital of Portugal?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "grep", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "name": "grep", "content": "no match"},
            {"role": "assistant", "content": "Lisbon."},
        ],
    )
    topic = store.load("telegram:-1001234:7", 50)
    store.append(topic, [{"role": "user", "content": "hello topic"}])
    DynamoStopFlags(resources.refs["SessionsTable"], lambda: boto3.client("dynamodb")).request(
        "telegram:111111111"
    )
    return deploy_stack(resources)


def test_list_shows_sessions_not_stop_flags(stack: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "list", "--stack", stack]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    by_key = {line.split()[0]: line for line in lines}
    assert set(by_key) == {"telegram:111111111", "telegram:-1001234:7"}
    assert "4 messages (0 in memory)" in by_key["telegram:111111111"]
    assert "1 messages" in by_key["telegram:-1001234:7"]
    assert "last 20" in by_key["telegram:111111111"]  # a timestamp


def test_show_prints_the_recent_messages(stack: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "show", "111111111", "--stack", stack]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["#0", "#1", "#2", "#3"]
    assert lines[0].endswith("user: What is the capital of Portugal?")
    assert lines[1].endswith("assistant: → grep(…)")
    assert lines[2].endswith("tool: grep: no match")
    assert lines[3].endswith("assistant: Lisbon.")

    assert main(["sessions", "show", "111111111", "--limit", "1", "--stack", stack]) == 0
    assert capsys.readouterr().out.splitlines() == [lines[3]]
    assert main(["sessions", "show", "telegram:-1001234:7", "--stack", stack]) == 0
    assert "user: hello topic" in capsys.readouterr().out
    assert main(["sessions", "show", "999", "--stack", stack]) == 1


def test_reset_asks_first_and_keeps_memory(
    stack: str,
    resources: TemplateContext,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    workspace = S3Workspace(resources.refs["WorkspaceBucket"], boto3.client("s3"))
    workspace.write("memory/MEMORY.md", b"Ada lives in Lisbon.")

    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert main(["sessions", "reset", "111111111", "--stack", stack]) == 1
    assert "Nothing deleted." in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # no terminal: no is the answer
    assert main(["sessions", "reset", "111111111", "--stack", stack]) == 1

    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert main(["sessions", "reset", "111111111", "--stack", stack]) == 0
    assert "Deleted 5 items of session telegram:111111111" in capsys.readouterr().out
    store = DynamoSessionStore(resources.refs["SessionsTable"], boto3.client("dynamodb"))
    assert store.load("telegram:111111111", 50).next_seq == 0
    assert store.load("telegram:-1001234:7", 50).next_seq == 1  # the other session stays
    memory = workspace.read("memory/MEMORY.md", fresh=True)
    assert memory is not None and memory.text == "Ada lives in Lisbon."
    flags = DynamoStopFlags(resources.refs["SessionsTable"], lambda: boto3.client("dynamodb"))
    assert flags.requested_since("telegram:111111111", 0)  # not part of the session

    assert main(["sessions", "reset", "telegram:-1001234:7", "--yes", "--stack", stack]) == 0
    assert store.load("telegram:-1001234:7", 50).next_seq == 0
