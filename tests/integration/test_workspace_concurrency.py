"""Concurrent edits on moto server, with real threads, each its own "container" (client + cache):
no edit is ever lost."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import boto3
import pytest

from nanobot_lambda.adapters.aws.clients import s3_client
from nanobot_lambda.adapters.aws.workspace import S3Workspace
from nanobot_lambda.core.memory import HISTORY_FILE, append_history, split_entries
from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.operator.local.cfn import TemplateContext
from nanobot_lambda.tools.files import file_tools
from tests.support.job_context import JobTools

WRITERS = 12


def run_concurrently(work: Callable[[int], None], count: int = WRITERS) -> None:
    start = threading.Barrier(count)
    errors: list[BaseException] = []

    def runner(index: int) -> None:
        start.wait()
        try:
            work(index)
        except BaseException as error:  # surfaced below, in the test thread
            errors.append(error)

    threads = [threading.Thread(target=runner, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []


@pytest.fixture
def bucket(resources: TemplateContext) -> str:
    return resources.refs["WorkspaceBucket"]


def container(bucket: str) -> S3Workspace:
    """A fresh container's view: its own client and cache, warmed by a listing."""
    workspace = S3Workspace(bucket, s3_client())
    workspace.refresh()
    return workspace


def test_concurrent_edit_file_calls_all_land(bucket: str) -> None:
    lines = "".join(f"- slot {n}: empty\n" for n in range(WRITERS))
    container(bucket).write("memory/MEMORY.md", f"# Memory\n{lines}".encode())
    workspaces = [container(bucket) for _ in range(WRITERS)]
    for workspace in workspaces:  # every container has the same version cached
        assert workspace.read("memory/MEMORY.md") is not None

    def edit(n: int) -> None:
        registry = JobTools(file_tools(), workspaces[n])
        arguments = {
            "path": "memory/MEMORY.md",
            "old_text": f"- slot {n}: empty",
            "new_text": f"- slot {n}: filled by writer {n}",
        }
        result = registry.execute(ToolCall(str(n), "edit_file", json.dumps(arguments)))
        assert result.startswith("Replaced 1"), result

    run_concurrently(edit)
    final = boto3.client("s3").get_object(Bucket=bucket, Key="workspace/memory/MEMORY.md")
    text = final["Body"].read().decode()
    for n in range(WRITERS):
        assert f"- slot {n}: filled by writer {n}" in text
    assert "empty" not in text


def test_concurrent_history_appends_all_land(bucket: str) -> None:
    workspaces = [container(bucket) for _ in range(WRITERS)]

    def append(n: int) -> None:
        append_history(workspaces[n], f"[2026-11-22 10:{n:02d}] entry number {n}")

    run_concurrently(append)
    text = container(bucket).read(HISTORY_FILE)
    assert text is not None
    entries = split_entries(text.text, HISTORY_FILE)
    assert sorted(entry.text for entry in entries) == sorted(
        f"[2026-11-22 10:{n:02d}] entry number {n}" for n in range(WRITERS)
    )


def test_concurrent_appends_across_a_rollover_lose_nothing(
    bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("nanobot_lambda.core.memory.ROLLOVER_BYTES", 300)
    seed = container(bucket)
    for n in range(8):  # past the rollover size
        append_history(seed, f"[2026-11-01 09:{n:02d}] early entry {n}")
    workspaces = [container(bucket) for _ in range(WRITERS)]

    def append(n: int) -> None:
        append_history(workspaces[n], f"[2026-11-22 11:{n:02d}] late entry {n}")

    run_concurrently(append)
    reader = container(bucket)
    texts = []
    for entry in reader.list_files("memory"):
        file = reader.read(entry.path)
        assert file is not None
        texts += [e.text for e in split_entries(file.text, entry.path)]
    expected = [f"[2026-11-01 09:{n:02d}] early entry {n}" for n in range(8)]
    expected += [f"[2026-11-22 11:{n:02d}] late entry {n}" for n in range(WRITERS)]
    assert sorted(texts) == sorted(expected)  # every entry exactly once, archives included
    archives = reader.list_files("memory/history")
    assert archives, "the rollover archived the early entries"
    head = reader.read(HISTORY_FILE)
    assert head is not None and len(head.data) < 300 * 3
