"""Memory that finds, compacts and restores, through the whole stack (webhook, queue, agent_turn
on moto server, the local Bot API, the scripted model and, for hybrid recall, the stand-in
embedding model over OpenAI's /v1/embeddings): a paraphrase recalled by meaning in a person's
own scope and not in another's, the compaction notice and /compact, /memory restore."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from nanobot_lambda.adapters.aws.recall_index import index_key
from nanobot_lambda.core import texts
from nanobot_lambda.core.memory import HISTORY_FILE, MEMORY_FILE
from nanobot_lambda.core.scopes import Scope
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory
from tests.support.embedding_server import EmbeddingServer
from tests.support.scripted_model import ScriptedModelServer

ADA = 111111111  # a person the owner (the local user) allows: her own scope, people/111111111
DENTIST = "[2026-10-05 18:40] Ada booked the dentist, Dr. Moreau, for December 3rd at 9am."
PARAPHRASE = "When do I see someone about my teeth?"


@pytest.fixture
def embeddings(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddingServer]:
    """The stand-in embedding model; the stack's EMBEDDING_API_BASE (empty in the template)
    comes from the caller's environment, as `sam local invoke --env-vars` would have it."""
    server = EmbeddingServer().start()
    monkeypatch.setenv("EMBEDDING_API_BASE", server.base_url)
    yield server
    server.stop()


def say(stack: LocalStack, text: str, chat_id: int | None = None) -> None:
    assert stack.post_update(stack.text_update(text, chat_id=chat_id))["statusCode"] == 200
    stack.process_queue()


def said(stack: LocalStack, chat_id: int) -> list[str]:
    return [m.plain_text for m in stack.bot_api.messages if m.chat_id == chat_id]


def request_asking(
    model_server: ScriptedModelServer, chat_id: int, question: str
) -> list[dict[str, Any]]:
    """The messages of the chat's request that asked `question` (its last: the runtime block
    and the words)."""
    for request in model_server.requests:
        content = str(request["messages"][-1]["content"])
        if content.endswith(question) and f"Chat: {chat_id}\n" in content:
            messages: list[dict[str, Any]] = request["messages"]
            return messages
    raise AssertionError(f"no request of chat {chat_id} asked {question!r}")


def test_a_paraphrase_is_recalled_by_meaning_in_the_persons_scope_only(
    stack_factory: StackFactory, model_server: ScriptedModelServer, embeddings: EmbeddingServer
) -> None:
    stack = stack_factory(HistoryWindow="2", EmbeddingModel=EmbeddingServer.MODEL)
    model_server.reply("Noted.").reply("You're welcome.")
    model_server.call_tool(
        "save_memory",
        {"history_entry": DENTIST, "memory_update": "# Memory\n- Name: Ada\n"},
    )
    model_server.reply("On December 3rd at 9am, with Dr. Moreau.")
    model_server.reply("I don't know.")

    say(stack, "I booked the dentist, Dr. Moreau, for December 3rd at 9am.", ADA)
    # 4 messages > 2: all summarised after the reply (an exchange is over half the window of
    # 2), then indexed; the next exchange alone does not pass the window.
    say(stack, "Thanks!", ADA)
    history = stack.workspace_of(ADA).read(HISTORY_FILE, fresh=True)
    assert history is not None and "Dr. Moreau" in history.text
    assert embeddings.requests, "the job's end embedded Ada's history"

    say(stack, PARAPHRASE, ADA)
    # No word of the question is in the entry: it was found by meaning, and put in the
    # request's runtime block (the user message), outside the cached prefix.
    ada_request = request_asking(model_server, ADA, PARAPHRASE)
    assert DENTIST in ada_request[-1]["content"]
    assert "Dr. Moreau" not in ada_request[0]["content"]  # the system prompt: not there
    # The turn after the summary told Ada once, before its answer.
    assert said(stack, ADA)[-2:] == [
        texts.load("compaction_notice"),
        "On December 3rd at 9am, with Dr. Moreau.",
    ]

    say(stack, PARAPHRASE)  # the owner asks the same: Ada's memory is not theirs
    assert "Moreau" not in str(request_asking(model_server, stack.user.id, PARAPHRASE))

    s3 = boto3.client("s3")
    bucket = stack.template.refs["WorkspaceBucket"]
    ada_index = s3.get_object(Bucket=bucket, Key=index_key(Scope(f"people/{ADA}")))
    assert b"Moreau" in ada_index["Body"].read()
    owner_index = s3.list_objects_v2(Bucket=bucket, Prefix=index_key(Scope()))
    for item in owner_index.get("Contents", []):
        assert b"Moreau" not in s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
    assert model_server.unexpected == [] and model_server.remaining == 0


def test_compact_summarises_on_demand_and_says_how_many(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Hello.").reply("Lyon is lovely.").reply("Tea it is.")
    model_server.call_tool(
        "save_memory",
        {"history_entry": "[2026-11-22 10:00] Said hello.", "memory_update": "# Memory\n"},
    )
    for text in ("Hi!", "I live in Lyon.", "I like tea."):
        say(stack, text)

    say(stack, "/compact")
    say(stack, "/compact")

    summarised = model_server.requests[3]["messages"][1]["content"]
    assert "USER: Hi!" in summarised and "Lyon" not in summarised  # the newest two stay
    assert said(stack, stack.user.id)[-2:] == [
        texts.render("compact_done", count="2"),
        texts.load("compact_nothing"),
    ]
    history = stack.workspace.read(HISTORY_FILE, fresh=True)
    assert history is not None and "Said hello." in history.text
    assert model_server.unexpected == []


def test_memory_restore_brings_back_an_earlier_memory(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """The bucket is versioned (as the template makes it): /memory lists MEMORY.md's versions,
    /memory restore N writes one back as a new version."""
    stack.workspace.write(MEMORY_FILE, b"# Memory\n- Name: Ada\n- Lives in Lyon\n")
    stack.workspace.write(MEMORY_FILE, b"# Memory\n- (a bad consolidation lost it all)\n")

    say(stack, "/memory")
    listing = said(stack, stack.user.id)[-1]
    assert "1. " in listing and "(current)" in listing and "2. " in listing

    say(stack, "/memory restore 2")

    memory = stack.workspace.read(MEMORY_FILE, fresh=True)
    assert memory is not None and memory.text == "# Memory\n- Name: Ada\n- Lives in Lyon\n"
    assert said(stack, stack.user.id)[-1] == texts.render(
        "memory_restored", path=MEMORY_FILE, number="2"
    )
    say(stack, "/memory")  # the restore is a version too: it can be undone the same way
    assert "3. " in said(stack, stack.user.id)[-1]
    assert model_server.requests == []
