"""Memory through the whole stack: warm-turn cost, consolidation, /new, recall."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest

from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.core import texts
from nanobot_lambda.core.context import RUNTIME_FIELD
from nanobot_lambda.core.memory import HISTORY_FILE, MEMORY_FILE
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory
from tests.support.aws_requests import RequestCounter
from tests.support.scripted_model import ScriptedModelServer


@pytest.fixture
def counter() -> Iterator[RequestCounter]:
    counting = RequestCounter()  # before the stack creates its clients
    yield counting
    counting.close()


def say(stack: LocalStack, text: str) -> None:
    assert stack.post_update(stack.text_update(text))["statusCode"] == 200
    stack.process_queue()


def read(stack: LocalStack, path: str) -> str:
    file = stack.workspace.read(path, fresh=True)
    return file.text if file is not None else ""


def session_store(stack: LocalStack) -> DynamoSessionStore:
    return DynamoSessionStore(stack.template.refs["SessionsTable"], boto3.client("dynamodb"))


def add_skills(stack: LocalStack, count: int) -> None:
    for n in range(count):
        body = f"---\nname: skill-{n:02d}\ndescription: Does task number {n}.\n---\n# Skill {n}\n"
        stack.workspace.write(f"skills/skill-{n:02d}/SKILL.md", body.encode())
        stack.workspace.write(f"skills/skill-{n:02d}/references/notes.md", b"details")


def test_warm_turn_aws_requests(
    counter: RequestCounter, stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory()
    add_skills(stack, 20)
    model_server.reply("first").reply("second").reply("third")
    say(stack, "cold turn")  # fills the container's caches

    counter.reset()
    say(stack, "warm turn")
    assert counter.operations("s3") == {"ListObjectsV2": 1}  # one listing validates the cache
    # agent_turn: the session Query (history, header, unfinished turns), the message's latest
    # edit if it was edited before its turn ran (one GetItem), and the one transaction that
    # saves the turn; the webhook: the Powertools Idempotency record of the update.
    assert counter.operations("dynamodb") == {
        "Query": 1,
        "GetItem": 1,
        "TransactWriteItems": 1,
        "PutItem": 1,
        "UpdateItem": 1,
    }
    idempotency = stack.template.refs["IdempotencyTable"]
    assert counter.on_table(idempotency) == {"PutItem": 1, "UpdateItem": 1}
    assert "skill-19" in model_server.requests[1]["messages"][0]["content"]

    # A changed file is picked up by the next turn, for one more request.
    stack.workspace.write("USER.md", b"# User\nName: Ada, lives in Lyon.")
    counter.reset()
    say(stack, "after an edit")
    assert counter.operations("s3") == {"ListObjectsV2": 1, "GetObject": 1}
    assert "Name: Ada, lives in Lyon." in model_server.requests[2]["messages"][0]["content"]


def save_memory(entry: str, memory: str) -> dict[str, str]:
    return {"history_entry": entry, "memory_update": memory}


def test_consolidation_after_the_window(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(HistoryWindow="4")
    model_server.reply("Hello Ada.").reply("Lyon is lovely.").reply("Noted: tea.")
    model_server.call_tool(
        "save_memory",
        save_memory(
            "[2026-11-22 10:00] Ada introduced herself; she lives in Lyon.",
            "# Memory\n- Name: Ada\n- Lives in Lyon\n",
        ),
    )
    model_server.reply("You like tea.")
    say(stack, "I am Ada.")
    say(stack, "I live in Lyon.")
    say(stack, "I like tea.")  # 6 messages > window 4: the oldest 4 are consolidated

    consolidation = model_server.requests[3]
    assert consolidation["tool_choice"] == {"type": "function", "function": {"name": "save_memory"}}
    assert [tool["function"]["name"] for tool in consolidation["tools"]] == ["save_memory"]
    excerpt = consolidation["messages"][1]["content"]
    assert "USER: I am Ada." in excerpt and "USER: I live in Lyon." in excerpt
    assert "I like tea." not in excerpt  # the newest half is kept as it is

    history = read(stack, HISTORY_FILE)
    assert "[2026-11-22 10:00] Ada introduced herself; she lives in Lyon." in history
    assert read(stack, MEMORY_FILE) == "# Memory\n- Name: Ada\n- Lives in Lyon\n"
    header = session_store(stack).load(f"telegram:{stack.user.id}", 0)
    assert header.consolidated_upto == 4 and header.next_seq == 6

    say(stack, "What do I like?")
    request = model_server.requests[4]["messages"]
    assert [m["role"] for m in request] == ["system", "user", "assistant", "user"]
    # Sent again as first sent: with the runtime block it had then (the prefix stays cached).
    assert request[1]["content"].startswith("[Runtime context")
    assert request[1]["content"].endswith("\n\nI like tea.")
    assert "- Lives in Lyon" in request[0]["content"]  # memory is in the system prompt
    assert model_server.unexpected == []


def test_failed_consolidation_keeps_the_cursor_and_is_retried(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(HistoryWindow="2")
    model_server.reply("one").reply("two").reply("not a tool call")  # consolidation fails
    say(stack, "first")
    say(stack, "second")
    key = f"telegram:{stack.user.id}"
    assert session_store(stack).load(key, 0).consolidated_upto == 0
    assert [m.plain_text for m in stack.bot_api.messages] == ["one", "two"]  # user unaffected

    # The next turn finds more unsummarised messages than the window sends: it summarises them
    # before its request (the retry; all of them, an exchange being over half the window of 2)
    # and answers; its own exchange does not pass the window.
    model_server.call_tool(
        "save_memory", save_memory("[2026-11-22 11:00] Two exchanges.", "# Memory\n")
    )
    model_server.reply("three")
    say(stack, "third")
    assert session_store(stack).load(key, 0).consolidated_upto == 4
    assert "[2026-11-22 11:00] Two exchanges." in read(stack, HISTORY_FILE)
    assert [m.plain_text for m in stack.bot_api.messages][2:] == [
        texts.load("compaction_notice"),
        "three",
    ]
    assert model_server.unexpected == [] and model_server.remaining == 0


def test_new_archives_and_starts_fresh(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Booked the train to Lyon.")
    model_server.call_tool(
        "save_memory",
        save_memory("[2026-11-22 12:00] Booked a train to Lyon.", "# Memory\n- Trip: Lyon\n"),
    )
    model_server.reply("Fresh start!")
    say(stack, "Book the train to Lyon")
    say(stack, "/new")
    assert stack.bot_api.messages[-1].plain_text == texts.load("new_session")
    assert "Booked a train to Lyon." in read(stack, HISTORY_FILE)

    say(stack, "hello again")
    request = model_server.requests[-1]["messages"]
    assert [m["role"] for m in request] == ["system", "user"]  # the old turns are gone
    assert "- Trip: Lyon" in request[0]["content"]


def test_new_keeps_the_session_when_archiving_fails(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Noted.").fail(500, times=3).reply("Still here.")
    say(stack, "Remember the milk")
    say(stack, "/new@nano_lambda_bot")
    assert stack.bot_api.messages[-1].plain_text == texts.load("new_session_failed")
    say(stack, "what did I say?")
    request = model_server.requests[-1]["messages"]
    assert request[1]["content"].endswith("\n\nRemember the milk")  # the session was kept


def test_recall_adds_relevant_history_to_the_runtime_context(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    entries = [
        "[2026-01-10 09:00] Discussed the garden: tomatoes need watering twice a week.",
        "[2026-02-14 18:30] Ada chose the Lisbon apartment over the Porto one (cheaper, sunnier).",
        "[2026-03-01 08:15] Talked about the quarterly tax filing due in April.",
    ]
    stack.workspace.write(HISTORY_FILE, ("# History\n\n" + "\n\n".join(entries) + "\n").encode())
    model_server.reply("It was the Lisbon one.").reply("Hi!")
    say(stack, "Which apartment did I pick, Lisbon or Porto?")
    user = model_server.requests[0]["messages"][-1]["content"]
    assert "Possibly relevant entries from memory/HISTORY.md:" in user
    assert entries[1] in user
    assert entries[0] not in user and entries[2] not in user

    say(stack, "hi there")  # nothing relevant: no recall block, no extra tokens
    assert "Possibly relevant" not in model_server.requests[1]["messages"][-1]["content"]
    # The recall block is metadata: saved apart from the message's text, with the runtime block
    # it came in, so that later turns send the message as it was first sent.
    saved = session_store(stack).load(f"telegram:{stack.user.id}", 10).messages
    assert all("Possibly relevant" not in message["content"] for message in saved)
    assert "Possibly relevant" in saved[0][RUNTIME_FIELD]
    assert "Possibly relevant" not in saved[2][RUNTIME_FIELD]


def test_built_in_skills_are_readable_by_the_model(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.call_tool("read_file", {"path": "skills/weather/SKILL.md"}).reply("Sunny.")
    say(stack, "weather in Paris?")
    tool_result = model_server.requests[1]["messages"][-1]
    assert tool_result["role"] == "tool"
    assert "wttr.in" in tool_result["content"]
    assert stack.workspace.read("skills/weather/SKILL.md", fresh=True) is None  # not copied
