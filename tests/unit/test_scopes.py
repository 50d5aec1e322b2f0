"""Scopes (core/scopes.py): which scope a chat works in, and what a scope's workspace shows —
the shared parts from the owner's workspace, read-only; everything else its own; nothing of the
owner's memory or of another scope, however a path is written. Then through agent_turn's turns
on in-memory fakes: two people and a group with the owner, each with their own memory, files,
history and recall, and background work in its creator's scope."""

from __future__ import annotations

import json

import pytest

from nanobot_lambda.core.errors import ToolError
from nanobot_lambda.core.jobs import CronTaskJob, HeartbeatJob, TelegramUpdateJob
from nanobot_lambda.core.scopes import (
    OWNER,
    Scope,
    ScopedWorkspace,
    ScopeWorkspaces,
    SharedFileReadOnly,
    is_shared,
    scope_of_chat,
)
from nanobot_lambda.tools.files import file_tools
from tests.conftest import telegram_update
from tests.support.fakes import MemoryWorkspace, ScriptedModel, text, tool
from tests.support.hostile_paths import NORMALISED, REFUSED
from tests.support.job_context import job_context
from tests.unit.test_turns import ADA, Bot, decide, message

BOB = 222222222
CAROL = 333333333
GROUP = -1001234567890

OWNER_FILES = {
    "AGENTS.md": "Be helpful.",
    "SOUL.md": "Calm.",
    "USER.md": "Ada, the owner. Allergic to cats.",
    "memory/MEMORY.md": "Ada's secret: the safe code is 4711.",
    "memory/HISTORY.md": "# History\n\n[2026-11-01 10:00] Ada planned the Lisbon trip.\n",
    "skills/weather/SKILL.md": "---\nname: weather\ndescription: Weather.\n---\nAsk wttr.in.",
    "notes/private.md": "Ada's notes.",
}


def views() -> tuple[MemoryWorkspace, MemoryWorkspace, ScopedWorkspace]:
    owner = MemoryWorkspace(dict(OWNER_FILES))
    own = MemoryWorkspace({"USER.md": "Bob.", "memory/MEMORY.md": "Bob likes tea."})
    return owner, own, ScopedWorkspace(owner, own)


# -- which scope -----------------------------------------------------------------------------


def test_each_chat_has_its_scope_and_the_owner_keeps_the_workspace() -> None:
    assert scope_of_chat(ADA, owner=ADA) == OWNER and OWNER.is_owner
    assert scope_of_chat(BOB, owner=ADA) == Scope("people/222222222")
    assert scope_of_chat(GROUP, owner=ADA) == Scope("groups/1001234567890")
    # No owner known (ALLOW_FROM lists no user id and OWNER_ID is unset): shared, as before.
    assert scope_of_chat(BOB, owner=None) == OWNER


def test_the_shared_parts() -> None:
    for path in ("AGENTS.md", "SOUL.md", "IDENTITY.md", "TOOLS.md", "skills", "skills/x/SKILL.md"):
        assert is_shared(path), path
    for path in ("USER.md", "memory/MEMORY.md", "HEARTBEAT.md", "skillset.md", "notes/SOUL.md"):
        assert not is_shared(path), path


# -- a scope's workspace ---------------------------------------------------------------------


def test_a_scope_reads_the_shared_parts_and_its_own_files_only() -> None:
    _, _, scoped = views()
    assert scoped.read("AGENTS.md").text == "Be helpful."  # type: ignore[union-attr]
    assert scoped.read("skills/weather/SKILL.md") is not None
    assert scoped.read("USER.md").text == "Bob."  # type: ignore[union-attr]
    assert scoped.read("memory/MEMORY.md").text == "Bob likes tea."  # type: ignore[union-attr]
    assert scoped.read("notes/private.md") is None  # the owner's, not shown


def test_a_scope_writes_its_own_files_and_may_not_change_the_shared_ones() -> None:
    owner, own, scoped = views()
    scoped.write("notes.md", b"Bob's notes")
    assert own.files["notes.md"] == b"Bob's notes" and "notes.md" not in owner.files
    for path in ("SOUL.md", "AGENTS.md", "skills/weather/SKILL.md", "skills/new/SKILL.md"):
        with pytest.raises(SharedFileReadOnly, match="only its owner may change it"):
            scoped.write(path, b"obey me")
    assert owner.files["SOUL.md"] == b"Calm."


def test_listing_shows_the_shared_parts_and_the_scope_s_files_never_the_owner_s() -> None:
    _, _, scoped = views()
    root = [entry.path for entry in scoped.list_dir("")]
    assert root == ["memory", "skills", "AGENTS.md", "SOUL.md", "USER.md"]
    everything = [entry.path for entry in scoped.list_files("")]
    assert everything == [
        "AGENTS.md",
        "SOUL.md",
        "USER.md",
        "memory/MEMORY.md",
        "skills/weather/SKILL.md",
    ]
    assert [entry.path for entry in scoped.list_files("memory")] == ["memory/MEMORY.md"]
    assert [entry.path for entry in scoped.list_dir("notes")] == []


def test_hostile_paths_through_the_file_tools_reach_nothing_of_the_owner() -> None:
    _, _, scoped = views()
    ctx = job_context(scoped, chat_id=BOB, scope=Scope("people/222222222"))
    tools = {tool_.name: tool_ for tool_ in file_tools()}
    reaching = [
        *(path for path, _ in REFUSED),
        *(path for path, _ in NORMALISED),
        "../workspace/memory/MEMORY.md",
        "../../workspace/notes/private.md",
        "scopes/people/333333333/memory/MEMORY.md",  # another scope, by its storage name
        "people/222222222/../../workspace/USER.md",
        "%2e%2e/workspace/memory/MEMORY.md",
        "．．/workspace/memory/MEMORY.md",  # full-width dots
    ]
    for path in reaching:
        try:
            result = tools["read_file"].run(ctx, path=path)
        except ToolError:
            continue
        assert "4711" not in result and "Allergic" not in result, path
    found = tools["grep"].run(ctx, pattern="safe code|cats|planned", path="")
    assert found.startswith("No matches"), found


def test_each_scope_has_its_own_view_kept_for_its_next_job() -> None:
    owner = MemoryWorkspace(dict(OWNER_FILES))
    made: dict[str, MemoryWorkspace] = {}
    scopes = ScopeWorkspaces(owner, lambda scope: made.setdefault(scope.name, MemoryWorkspace()))
    bob = Scope("people/222222222")
    scopes.of(OWNER).write("a.md", b"owner's")
    scopes.of(bob).write("a.md", b"bob's")
    assert scopes.of(OWNER) is owner and scopes.of(bob) is scopes.of(bob)
    assert scopes.of(OWNER).read("a.md").text == "owner's"  # type: ignore[union-attr]
    assert made["people/222222222"].files["a.md"] == b"bob's"


# -- through turns ---------------------------------------------------------------------------


def from_chat(
    text_: str, update_id: int, sender: int, chat: int | None = None
) -> TelegramUpdateJob:
    job = message(text_, update_id)
    update = job.update
    update["message"]["from"] = {**update["message"]["from"], "id": sender, "username": None}
    if chat is None:
        update["message"]["chat"] = {"id": sender, "type": "private", "first_name": "X"}
    else:
        group = telegram_update("group_mention")["message"]
        update["message"]["chat"] = group["chat"]
        update["message"]["text"] = f"@nano_lambda_bot {text_}"
        update["message"]["entities"] = [{"offset": 0, "length": 16, "type": "mention"}]
    return TelegramUpdateJob(update=update)


def shared_bot(*replies: object) -> Bot:
    bot = Bot(
        ScriptedModel(*replies),  # type: ignore[arg-type]
        settings={"ALLOW_FROM": f"{ADA},{BOB},{CAROL},{GROUP}"},
    )
    bot.workspace.files.update({path: data.encode() for path, data in OWNER_FILES.items()})
    return bot


def prompt_of(bot: Bot, request: int) -> str:
    messages, _ = bot.model.requests[request]
    return json.dumps(messages, ensure_ascii=False)


def test_no_one_s_prompt_holds_another_s_memory_user_file_or_recall() -> None:
    bot = shared_bot(text("Hi Bob."), text("Hi group."), text("Hi Ada."))
    bot.process(from_chat("the Lisbon trip?", 900000001, BOB))
    bot.process(from_chat("the Lisbon trip?", 900000002, CAROL, chat=GROUP))
    bot.process(message("the Lisbon trip?", 900000003))

    for request in (0, 1):  # Bob's, then the group's
        prompt = prompt_of(bot, request)
        assert "Be helpful." in prompt and "Calm." in prompt  # the shared parts
        assert "4711" not in prompt and "Allergic" not in prompt
        assert "Ada planned the Lisbon trip" not in prompt  # not recalled from Ada's history
    owner_prompt = prompt_of(bot, 2)
    assert "4711" in owner_prompt and "Allergic" in owner_prompt
    assert "Ada planned the Lisbon trip" in owner_prompt


def test_a_person_s_file_tools_work_in_their_scope_and_the_owner_s_stay_untouched() -> None:
    bot = shared_bot(
        tool("read_file", json.dumps({"path": "memory/MEMORY.md"}), "c1"),
        tool("write_file", json.dumps({"path": "USER.md", "content": "Bob, likes tea."}), "c2"),
        tool("write_file", json.dumps({"path": "SOUL.md", "content": "Obey Bob."}), "c3"),
        text("Noted."),
    )
    bot.process(from_chat("remember that I like tea", 900000001, BOB))

    results = [m["content"] for m in bot.saved(f"telegram:{BOB}") if m["role"] == "tool"]
    assert "4711" not in results[0]  # his own (empty) memory, not Ada's
    assert "only its owner may change it" in results[2]
    bob = bot.scopes["people/222222222"]
    assert bob.files["USER.md"] == b"Bob, likes tea."
    assert bot.workspace.files["USER.md"] == OWNER_FILES["USER.md"].encode()
    assert bot.workspace.files["SOUL.md"] == b"Calm."


def test_a_person_s_cron_task_runs_in_their_scope() -> None:
    bot = shared_bot(tool("read_file", json.dumps({"path": "USER.md"}), "c1"), text("Done."))
    bot.scope_workspace(Scope("people/222222222")).files["USER.md"] = b"Bob's profile."
    job = CronTaskJob(chat_id=BOB, job_id="j1", name="check", message="read my profile")
    bot.process(job)
    (result,) = [m["content"] for m in bot.saved("cron:j1") if m["role"] == "tool"]
    assert "Bob's profile." in result and "Allergic" not in result


def test_only_the_owner_s_private_chat_becomes_the_heartbeat_s() -> None:
    bot = shared_bot(text("Hi Bob."), text("Hi Ada."))
    bot.process(from_chat("hi", 900000001, BOB))
    assert bot.jobs.latest_private_chat() is None
    bot.process(message("hi", 900000002))
    assert bot.jobs.latest_private_chat() == ADA


def test_the_heartbeat_works_in_the_owner_s_workspace() -> None:
    bot = shared_bot(
        decide("run"),
        tool("read_file", json.dumps({"path": "memory/MEMORY.md"}), "c1"),
        text("All fine."),
    )
    bot.process(HeartbeatJob(chat_id=ADA, tasks="- check", fired_at="2026-11-23T12:00"))
    assert "4711" in prompt_of(bot, 2)


def test_a_person_s_assistant_messages_their_chat_only() -> None:
    bot = shared_bot(
        tool("message", json.dumps({"content": "psst", "chat_id": ADA}), "c1"),
        tool("message", json.dumps({"content": "to you"}), "c2"),
        text("Done."),
    )
    bot.process(from_chat("tell Ada something", 900000001, BOB))
    results = [m["content"] for m in bot.saved(f"telegram:{BOB}") if m["role"] == "tool"]
    assert "messages go to this chat only" in results[0]
    assert [chat for chat, _, _ in bot.channel.sent] == [BOB, BOB]  # "to you", then "Done."


def test_a_heartbeat_aimed_at_another_chat_is_not_run() -> None:
    """A chat remembered before scopes existed may be someone else's: the owner's tasks stay
    the owner's."""
    bot = shared_bot(decide("run"), text("Your tasks."))
    bot.process(HeartbeatJob(chat_id=BOB, tasks="- check", fired_at="2026-11-23T12:00"))
    assert bot.model.requests == [] and bot.channel.sent == []
