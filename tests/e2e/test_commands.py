"""Commands through the whole stack: /start, /help, /stop (and /new in test_memory_flow)."""

from __future__ import annotations

from nanobot_lambda.core import texts
from nanobot_lambda.core.bot_commands import help_text
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory, telegram_update
from tests.support.scripted_model import ScriptedModelServer


def test_start_and_help_answer_without_the_model(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    stack.post_update(telegram_update("command_start"))
    stack.post_update(stack.text_update("/help"))
    stack.process_queue()
    assert [m.plain_text for m in stack.bot_api.messages] == [
        texts.load("start").replace("\n\n", "\n\n"),
        help_text(),
    ]
    assert model_server.requests == []


def test_stop_interrupts_the_turn_queued_before_it(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """/stop waits behind the turn in the FIFO queue, but its flag reaches the turn at once."""
    model_server.call_tool("write_file", {"path": "notes/a.md", "content": "step 1"})
    model_server.call_tool("write_file", {"path": "notes/b.md", "content": "step 2"})
    stack.post_update(stack.text_update("do a long task"))
    stack.post_update(stack.text_update("/stop"))  # arrives while the task is queued/running
    stack.process_queue()
    assert [m.plain_text for m in stack.bot_api.messages] == [texts.load("stopped")]
    assert len(model_server.requests) == 1  # stopped after the first step
    assert model_server.remaining == 1
    note = stack.workspace.read("notes/a.md", fresh=True)
    assert note is not None and note.text == "step 1"  # the work done is kept

    # The flag is gone: the next message runs normally.
    model_server.steps.clear()
    model_server.reply("Back to work.")
    stack.post_update(stack.text_update("hello"))
    stack.process_queue()
    assert stack.bot_api.messages[-1].plain_text == "Back to work."


def test_stop_with_nothing_running(stack: LocalStack, model_server: ScriptedModelServer) -> None:
    stack.post_update(stack.text_update("/stop"))
    stack.process_queue()
    assert [m.plain_text for m in stack.bot_api.messages] == [texts.load("nothing_to_stop")]
    assert model_server.requests == []


def test_commands_are_checked_against_the_allow_list(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory()
    stranger = telegram_update("user_without_username")  # user 333333333, not allowed
    stranger["message"]["text"] = "/start"
    assert stack.post_update(stranger)["statusCode"] == 200
    stack.process_queue()
    assert stack.bot_api.messages == []


def test_progress_messages_can_be_turned_off(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(SendProgress="false")
    model_server.call_tool("list_dir", {}, content="Let me look.").reply("Done.")
    stack.post_update(stack.text_update("look around"))
    stack.process_queue()
    assert [m.plain_text for m in stack.bot_api.messages] == ["Done."]


def test_tool_hints_when_enabled(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(SendToolHints="true")
    model_server.call_tool("grep", {"pattern": "lisbon"}).reply("Nothing found.")
    stack.post_update(stack.text_update("search my notes for lisbon"))
    stack.process_queue()
    assert [m.plain_text for m in stack.bot_api.messages] == ['🔎 grep("lisbon")', "Nothing found."]
