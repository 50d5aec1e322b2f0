"""A cold agent_turn (issue 31): the system prompt's files are read during init, beside the
imports, so its first turn reads none of them from S3 and still sees the workspace as it is."""

from __future__ import annotations

from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory
from tests.support.aws_requests import RequestCounter
from tests.support.scripted_model import ScriptedModelServer


def system_prompt(model_server: ScriptedModelServer) -> str:
    content: str = model_server.requests[-1]["messages"][0]["content"]
    return content


def first_turn(stack: LocalStack, aws_requests: RequestCounter) -> dict[str, int]:
    prefetch = stack.handlers["agent_turn"].prefetch
    assert prefetch is not None and prefetch.wait(10)  # done within init on Lambda
    aws_requests.reset()
    assert stack.post_update(stack.text_update("hello"))["statusCode"] == 200
    stack.process_queue()
    return aws_requests.operations("s3")


def test_the_first_turn_of_a_new_container_gets_its_prompt_files_from_init(
    aws_requests: RequestCounter, stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory()
    model_server.reply("Hi.")

    s3 = first_turn(stack, aws_requests)

    assert s3.get("GetObject", 0) == 0
    assert s3["ListObjectsV2"] >= 1  # the turn's own listing, which vouches for them
    assert "## AGENTS.md" in system_prompt(model_server)


def test_a_file_changed_after_init_is_read_as_it_now_is(
    aws_requests: RequestCounter, stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory()
    model_server.reply("Hi.")
    prefetch = stack.handlers["agent_turn"].prefetch
    assert prefetch is not None and prefetch.wait(10)
    stack.workspace.write("USER.md", b"# User\n\nCalls the assistant Jeeves.")

    s3 = first_turn(stack, aws_requests)

    assert s3["GetObject"] == 1
    assert "Calls the assistant Jeeves." in system_prompt(model_server)
