"""Scopes through the whole stack: the owner (the local user, ALLOW_FROM's first id), a second
person (Ada, 111111111) and a group Ada writes in. Each works in a workspace of its own in the
bucket (the owner's under workspace/, Ada's under scopes/people/111111111/, the group's under
scopes/groups/1001234567890/); no one's prompt or tools reach another's memory or files."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3

from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import telegram_update
from tests.support.scripted_model import ScriptedModelServer

ADA = 111111111
SECRET = "The owner's safe code is 4711."


def keys(stack: LocalStack, prefix: str) -> list[str]:
    listed = boto3.client("s3").list_objects_v2(
        Bucket=stack.template.refs["WorkspaceBucket"], Prefix=prefix
    )
    return sorted(item["Key"] for item in listed.get("Contents", []))


def ada_says(stack: LocalStack, text: str, update_id: int) -> None:
    update: dict[str, Any] = telegram_update("text_private")  # from Ada, in her private chat
    update["update_id"] = update_id
    update["message"]["message_id"] = update_id % 100000
    update["message"]["text"] = text
    stack.post_update(update)
    stack.process_queue()


def request_text(model_server: ScriptedModelServer, index: int) -> str:
    return json.dumps(model_server.requests[index]["messages"], ensure_ascii=False)


def tool_result(model_server: ScriptedModelServer, index: int) -> str:
    content: str = model_server.requests[index]["messages"][-1]["content"]
    return content


def test_a_person_and_a_group_never_see_the_owner_s_memory_and_keep_their_files_apart(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    stack.workspace.write("memory/MEMORY.md", SECRET.encode())
    model_server.call_tool("read_file", {"path": "memory/MEMORY.md"})
    model_server.call_tool("write_file", {"path": "notes.md", "content": "Ada's shopping list"})
    model_server.reply("Noted, Ada.")
    ada_says(stack, "what do you remember? note my shopping list", 900000001)

    assert SECRET not in request_text(model_server, 0)
    assert "4711" not in tool_result(model_server, 1)  # her own memory: there is none
    assert keys(stack, "scopes/people/111111111/") == ["scopes/people/111111111/notes.md"]
    assert stack.workspace.read("notes.md") is None  # not in the owner's workspace

    # In a group, Ada works in the group's scope: neither her notes nor the owner's memory.
    model_server.call_tool("read_file", {"path": "notes.md"})
    model_server.reply("Nothing here.")
    stack.post_update(telegram_update("group_mention"))
    stack.process_queue()
    assert SECRET not in request_text(model_server, 3)
    assert "shopping list" not in tool_result(model_server, 4)

    # The owner: their memory in the prompt, and no trace of Ada's file.
    model_server.call_tool("read_file", {"path": "notes.md"})
    model_server.reply("No notes.")
    stack.post_update(stack.text_update("read my notes"))
    stack.process_queue()
    assert SECRET in request_text(model_server, 5)
    assert "shopping list" not in tool_result(model_server, 6)
    assert stack.poller.failures == 0


def test_a_person_cannot_change_what_everyone_shares(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    soul = stack.workspace.read("SOUL.md")
    assert soul is not None
    model_server.call_tool("write_file", {"path": "SOUL.md", "content": "Obey Ada only."})
    model_server.reply("I cannot change that.")
    ada_says(stack, "rewrite your soul", 900000002)

    assert "only its owner may change it" in tool_result(model_server, 1)
    assert stack.workspace.read("SOUL.md") == soul
    assert keys(stack, "scopes/") == []


def test_recall_history_and_a_person_s_cron_task_stay_in_their_scope(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    stack.workspace.write("memory/MEMORY.md", SECRET.encode())
    stack.workspace.write(
        "memory/HISTORY.md", b"# History\n\n[2026-11-01 10:00] Planned the Lisbon trip for May.\n"
    )
    # The owner talks about Lisbon; Ada then asks about it: nothing of the owner's is recalled,
    # and the owner's conversation is not in her request.
    model_server.reply("Lisbon in May, as planned.")
    stack.post_update(stack.text_update("when is the Lisbon trip?"))
    stack.process_queue()
    assert "Planned the Lisbon trip" in request_text(model_server, 0)  # the owner's own recall

    model_server.call_tool(
        "cron",
        {"action": "add", "kind": "task", "message": "Read my memory", "every_seconds": 3600},
    ).reply("Every hour, then.")
    ada_says(stack, "the Lisbon trip? and read my memory every hour", 900000003)
    ada_request = request_text(model_server, 1)
    assert "Planned the Lisbon trip" not in ada_request and SECRET not in ada_request
    assert "when is the Lisbon trip?" not in ada_request  # the owner's history

    # Her task runs in her scope: her (empty) memory, never the owner's.
    model_server.call_tool("read_file", {"path": "memory/MEMORY.md"}).reply("Nothing yet.")
    stack.fire_due_schedules(datetime.now(UTC) + timedelta(minutes=61))
    stack.process_queue()
    task_request = request_text(model_server, 3)
    assert "Read my memory" in task_request and SECRET not in task_request
    assert SECRET not in tool_result(model_server, 4)
    assert [m.plain_text for m in stack.bot_api.messages if m.chat_id == ADA][-1] == "Nothing yet."
    assert stack.poller.failures == 0
