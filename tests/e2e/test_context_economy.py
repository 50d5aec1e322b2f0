"""Context economy through the whole stack: what the provider receives (litellm's wire request
to the scripted model server) starts with the previous request byte for byte, a request never
outgrows the model's context window (the server refuses one that does, as OpenAI does; a server
that lists its window is asked it), and a long conversation is summarised rarely and told so
once."""

from __future__ import annotations

import itertools
import json

import boto3
import pytest

from nanobot_lambda.core import texts
from nanobot_lambda.core.budget import CUT_MARKER
from nanobot_lambda.core.consolidation import SAVE_MEMORY
from nanobot_lambda.core.memory import HISTORY_FILE
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory
from tests.support.scripted_model import ScriptedModelServer

BIG_FILE = "".join(f"line {n}: the quick brown fox jumps over the lazy dog\n" for n in range(600))
WINDOW = 6_000


def say(stack: LocalStack, text: str, update_id: int) -> None:
    update = stack.text_update(text)
    update["update_id"] = update_id
    assert stack.post_update(update)["statusCode"] == 200
    stack.process_queue()


def answers(stack: LocalStack) -> list[str]:
    return [message.plain_text for message in stack.bot_api.messages]


def test_each_request_on_the_wire_starts_with_the_previous_one(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory()
    stack.workspace.write("notes/fox.md", BIG_FILE.encode())
    model_server.reply("Hello Ada, nice to meet you.")
    model_server.call_tool("read_file", {"path": "notes/fox.md"})
    model_server.reply("The notes are about a quick brown fox.")
    model_server.reply("You are welcome, any time.")
    for n, text in enumerate(["hi", "what is in notes/fox.md?", "thanks"]):
        say(stack, text, 700000001 + n)

    sent = [request["messages"] for request in model_server.requests]
    assert len(sent) == 4 and not model_server.unexpected
    for previous, current in itertools.pairwise(sent):
        assert json.dumps(current[: len(previous)]) == json.dumps(previous)
    assert answers(stack)[-1] == "You are welcome, any time."


def test_a_tool_result_too_long_for_the_window_is_cut_instead_of_failing_the_turn(
    monkeypatch: pytest.MonkeyPatch, stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    monkeypatch.setenv("CONTEXT_WINDOW_TOKENS", str(WINDOW))
    monkeypatch.setenv("LLM_MAX_TOKENS", "1000")
    stack = stack_factory()
    model_server.context_window = WINDOW
    stack.workspace.write("notes/fox.md", BIG_FILE.encode())
    model_server.call_tool("read_file", {"path": "notes/fox.md"}).reply("It is all about a fox.")
    say(stack, "read notes/fox.md", 700000101)

    assert model_server.too_long == []  # every request fitted
    assert answers(stack) == ["It is all about a fox."]
    shown = model_server.requests[1]["messages"][-1]
    assert shown["role"] == "tool" and shown["content"].endswith("read in parts]")
    assert CUT_MARKER.split("{")[0] in shown["content"]


def test_without_the_window_the_provider_refuses_and_the_user_hears_it(
    monkeypatch: pytest.MonkeyPatch, stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    """What the guard prevents: the same turn with a window the product does not know."""
    monkeypatch.setenv("LLM_NUM_RETRIES", "0")
    stack = stack_factory()  # openai/scripted: litellm does not know it, 32,768 assumed
    model_server.context_window = WINDOW
    stack.workspace.write("notes/fox.md", BIG_FILE.encode())
    model_server.call_tool("read_file", {"path": "notes/fox.md"}).reply("never sent")
    say(stack, "read notes/fox.md", 700000201)

    assert len(model_server.too_long) >= 1
    assert "It is all about a fox." not in answers(stack)


def test_the_window_an_openai_compatible_server_lists_is_the_one_kept_to(
    monkeypatch: pytest.MonkeyPatch, stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    """The same turn with a server that lists its window (vLLM's `max_model_len`) and no
    CONTEXT_WINDOW_TOKENS: the stack reads it once and keeps every request within it."""
    monkeypatch.setenv("LLM_MAX_TOKENS", "1000")
    model_server.served_models = [
        {"id": "scripted", "object": "model", "owned_by": "vllm", "max_model_len": WINDOW}
    ]
    model_server.context_window = WINDOW
    stack = stack_factory()
    stack.workspace.write("notes/fox.md", BIG_FILE.encode())
    model_server.call_tool("read_file", {"path": "notes/fox.md"}).reply("It is all about a fox.")
    entry = {"history_entry": "[2030-01-01 10:00] Read about a fox.", "memory_update": ""}
    model_server.call_tool(SAVE_MEMORY, entry)  # the history is over its budget after it
    say(stack, "read notes/fox.md", 700000251)

    assert model_server.too_long == [] and model_server.remaining == 0
    assert answers(stack) == ["It is all about a fox."]
    assert model_server.requests[1]["messages"][-1]["content"].endswith("read in parts]")
    assert len(model_server.model_lists) == 1


def seed_long_session(stack: LocalStack, exchanges: int) -> None:
    table = boto3.resource("dynamodb").Table(stack.template.refs["SessionsTable"])
    key = f"telegram:{stack.user.id}"
    with table.batch_writer() as batch:
        for n in range(exchanges * 2):
            role = "user" if n % 2 == 0 else "assistant"
            text = f"{role} message {n}: " + "we talked about foxes and dogs at length " * 40
            message = {"role": role, "content": text}
            batch.put_item(Item={"pk": key, "sk": f"msg#{n:012d}", "message": json.dumps(message)})
        batch.put_item(Item={"pk": key, "sk": "~meta", "next_seq": exchanges * 2})


def test_a_history_over_budget_is_summarised_before_the_request_that_would_not_fit(
    monkeypatch: pytest.MonkeyPatch, stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    monkeypatch.setenv("CONTEXT_WINDOW_TOKENS", "8000")
    monkeypatch.setenv("LLM_MAX_TOKENS", "1000")
    monkeypatch.setenv("HISTORY_MAX_TOKENS", "3000")
    stack = stack_factory()
    model_server.context_window = 8_000
    seed_long_session(stack, exchanges=12)  # about 8,000 tokens of history: it cannot fit
    # Summarising all but the newest 1,500 tokens would not fit one request either: it is
    # summarised in two slices, each within half the request budget.
    for part in ("first", "second"):
        entry = {"history_entry": f"[2030-01-01 10:00] Foxes, {part} part.", "memory_update": ""}
        model_server.call_tool(SAVE_MEMORY, entry)
    model_server.reply("Still here, and I remember the foxes.")
    say(stack, "are you still there?", 700000301)

    assert model_server.too_long == [] and model_server.remaining == 0
    summaries = [request.get("tool_choice") for request in model_server.requests[:2]]
    assert all(choice["function"]["name"] == SAVE_MEMORY for choice in summaries)
    # The summary before the request is told in that very turn, before the answer.
    assert answers(stack) == [
        texts.load("compaction_notice"),
        "Still here, and I remember the foxes.",
    ]
    history = stack.workspace.read(HISTORY_FILE, fresh=True)
    assert history is not None and "Foxes, first part." in history.text
    assert "Foxes, second part." in history.text
    assert len(model_server.requests[2]["messages"]) < 1 + 24 + 1


# A 5,000-character answer in Russian: about 2,480 tokens by litellm's default tokenizer.
LONG_ANSWER = ("Быстрая коричневая лиса прыгает через ленивую собаку, пока фермер смотрит. " * 70)[
    :5_000
]


def test_long_answers_are_summarised_rarely_and_told_once(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    """Issue 37's scenario, its first 30 turns (moto's transactions slow down as the table
    grows; tests/unit/test_context_economy.py runs all 60): answers of 5,000 characters from a
    model litellm does not know, so the default window, 32,768 tokens: a request budget of
    27,033, a history budget of 13,516. An exchange is about 2,550 tokens: a consolidation keeps
    at most half the budget (2 exchanges) and the next is due past all of it (6), so there is
    one after the 6th turn and one every 4 turns after it: 7 in 30 turns. (With a quarter of the
    request budget there were 14, one every other turn, and the chat was told each time.) The
    turns take less than a day: the chat is told once."""
    stack = stack_factory(StreamReplies="false")  # drafts would pace each answer's words
    model_server.context_window = 32_768  # the server refuses what does not fit
    consolidations = 0
    for n in range(30):
        model_server.reply(f"Ответ {n}. {LONG_ANSWER}")
        entry = {"history_entry": f"[2030-01-01 10:00] Часть {n}.", "memory_update": ""}
        model_server.call_tool(SAVE_MEMORY, entry)  # taken only if the turn consolidates
        asked = len(model_server.requests)
        say(stack, f"вопрос {n}", 700001001 + n)
        turn = model_server.requests[asked:]
        assert turn[0].get("tool_choice") is None  # the answer first: nothing summarised before
        consolidations += len(turn) - 1
        model_server.steps.clear()

    assert model_server.too_long == [] and model_server.unexpected == []
    assert 1 <= consolidations <= 7
    assert answers(stack).count(texts.load("compaction_notice")) == 1
