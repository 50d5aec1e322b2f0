"""The cold start's workspace prefetch (issue 31) on moto server: the system prompt's files are
read before the first turn, served only while the turn's own listing shows them unchanged, and
a prefetch that failed or is late costs the turn nothing but its usual reads."""

from __future__ import annotations

import threading

import pytest

from nanobot_lambda.adapters.aws.clients import s3_client
from nanobot_lambda.adapters.aws.workspace import S3Workspace, WorkspacePrefetch
from nanobot_lambda.core.context import ContextBuilder, is_prompt_file
from nanobot_lambda.core.workspace import seed_workspace
from nanobot_lambda.operator.local.cfn import TemplateContext
from tests.support.aws_requests import RequestCounter


@pytest.fixture
def bucket(resources: TemplateContext) -> str:
    bucket: str = resources.refs["WorkspaceBucket"]
    owner = S3Workspace(bucket, s3_client())
    seed_workspace(owner)
    owner.write("memory/MEMORY.md", b"# Memory\n- takes tea, no sugar")
    for n in range(3):
        owner.write(f"skills/chore-{n}/SKILL.md", f"---\ndescription: chore {n}\n---\n".encode())
    owner.write("skills/chore-0/notes.md", b"not in the prompt")
    owner.write("uploads/photo.jpg", b"\xff\xd8 not in the prompt either")
    return bucket


def test_prompt_files_are_exactly_what_the_system_prompt_reads() -> None:
    for path in ("AGENTS.md", "SOUL.md", "memory/MEMORY.md", "skills/x/SKILL.md"):
        assert is_prompt_file(path)
    for path in ("memory/HISTORY.md", "skills/x/notes.md", "skills/SKILL.md", "notes/SOUL.md"):
        assert not is_prompt_file(path)


def test_the_first_turn_reads_its_prompt_without_a_get(
    bucket: str, aws_requests: RequestCounter
) -> None:
    s3 = s3_client()
    prefetch = WorkspacePrefetch(bucket, s3, is_prompt_file).start()
    expected = ContextBuilder().system_prompt(S3Workspace(bucket, s3_client()))
    assert prefetch.wait()  # init ends after the imports: the prefetch has finished by then
    aws_requests.reset()

    workspace = S3Workspace(bucket, s3, prefetch=prefetch)
    workspace.refresh()
    prompt = ContextBuilder().system_prompt(workspace)

    assert prompt == expected
    assert "takes tea, no sugar" in prompt
    assert aws_requests.operations("s3") == {"ListObjectsV2": 1}  # the turn's own listing only


def test_a_file_changed_since_the_prefetch_is_read_again(
    bucket: str, aws_requests: RequestCounter
) -> None:
    s3 = s3_client()
    prefetch = WorkspacePrefetch(bucket, s3, is_prompt_file).start()
    assert prefetch.wait()
    S3Workspace(bucket, s3_client()).write("memory/MEMORY.md", b"# Memory\n- coffee now")
    aws_requests.reset()

    workspace = S3Workspace(bucket, s3, prefetch=prefetch)
    workspace.refresh()
    prompt = ContextBuilder().system_prompt(workspace)

    assert "coffee now" in prompt and "tea" not in prompt
    assert aws_requests.operations("s3") == {"ListObjectsV2": 1, "GetObject": 1}


def test_only_the_first_refresh_takes_the_prefetch(bucket: str) -> None:
    s3 = s3_client()
    prefetch = WorkspacePrefetch(bucket, s3, is_prompt_file).start()
    workspace = S3Workspace(bucket, s3, prefetch=prefetch)
    workspace.refresh()
    assert prefetch.take() == {}  # handed over once


def test_a_failed_prefetch_leaves_the_turn_to_read_for_itself(
    bucket: str, aws_requests: RequestCounter, caplog: pytest.LogCaptureFixture
) -> None:
    s3 = s3_client()
    prefetch = WorkspacePrefetch("no-such-bucket", s3, is_prompt_file).start()
    assert prefetch.wait()
    assert "workspace prefetch failed: NoSuchBucket" in caplog.text
    aws_requests.reset()

    workspace = S3Workspace(bucket, s3, prefetch=prefetch)
    workspace.refresh()
    assert "takes tea, no sugar" in ContextBuilder().system_prompt(workspace)
    assert aws_requests.operations("s3")["GetObject"] > 1  # as without a prefetch


def test_a_late_prefetch_is_not_waited_for_past_its_limit(bucket: str) -> None:
    release = threading.Event()

    def slow(path: str) -> bool:
        release.wait(10)  # the prefetch is stuck, say on a slow connection
        return is_prompt_file(path)

    prefetch = WorkspacePrefetch(bucket, s3_client(), slow).start()
    try:
        assert prefetch.take(wait_seconds=0.05) == {}
    finally:
        release.set()
    workspace = S3Workspace(bucket, s3_client(), prefetch=prefetch)
    workspace.refresh()
    assert "takes tea, no sugar" in ContextBuilder().system_prompt(workspace)
