"""A turn that waits for a person's approval (functions/agent_turn/approvals.py), with fakes:
the call is recorded and asked about and the invocation ends; the decision resumes the turn,
runs the call once (or tells the model it was denied) and is recorded before the call runs.
(tests/e2e/test_approvals.py drives the same through the local stack with a real MCP server.)"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from nanobot_lambda.core import texts
from nanobot_lambda.core.approvals import parse_callback
from nanobot_lambda.core.jobs import ApprovalJob, TelegramUpdateJob
from tests.support.fakes import ScriptedModel, text, tool
from tests.unit.test_turns import ADA, SESSION, Bot, message

SOUL = json.dumps({"path": "SOUL.md", "content": "Be kinder."})


def asked(bot: Bot) -> tuple[str, str]:
    """(the approval id, the question's text) of the one approval asked."""
    [(message_id, buttons)] = bot.channel.keyboards.items()
    data = [button[1] for button in buttons if isinstance(button, tuple)]
    assert len(data) == 3
    parsed = parse_callback(data[0])
    assert parsed is not None
    return parsed[0], bot.channel.texts[message_id - 1].replace("\u2060", "")


def decided(job: TelegramUpdateJob, approval_id: str, decision: str, **more: object) -> ApprovalJob:
    now = datetime.now(UTC).isoformat(timespec="seconds")
    fields: dict[str, object] = {"decided_by": ADA, "decided_by_name": "Ada", "decided_at": now}
    fields.update(more)
    return ApprovalJob.model_validate(
        {"job": job.model_dump(), "approval_id": approval_id, "decision": decision, **fields}
    )


def soul_bot(*after: object) -> Bot:
    return Bot(ScriptedModel(tool("write_file", SOUL), *after))  # type: ignore[arg-type]


def test_a_write_to_a_shared_file_asks_and_allow_once_runs_it_once() -> None:
    bot = soul_bot(text("Done: kinder."))
    job = message("be kinder")
    bot.process(job)

    approval_id, question = asked(bot)
    assert "SOUL.md" in question and "write_file" in question
    assert "SOUL.md" not in bot.workspace.files or bot.workspace.files["SOUL.md"] != b"Be kinder."
    assert bot.saved() == []  # the turn waits: nothing saved, nothing answered
    assert bot.journal.records[(SESSION, "update-800000001")].pending is not None
    assert approval_id in bot.deadlines.deadlines

    bot.process(decided(job, approval_id, "once"))
    assert bot.workspace.files["SOUL.md"] == b"Be kinder."
    assert bot.said[-1] == "Done: kinder."
    assert "Allowed once by Ada" in bot.channel.edits[-1][2]
    assert [m["role"] for m in bot.saved()] == ["user", "assistant", "tool", "assistant"]

    # The same press again (SQS, or a second tap): the turn is done, nothing runs twice.
    bot.workspace.files["SOUL.md"] = b"changed since"
    bot.process(decided(job, approval_id, "once"))
    assert bot.workspace.files["SOUL.md"] == b"changed since"


def test_deny_tells_the_model_and_runs_nothing() -> None:
    bot = soul_bot(text("Understood, left as it is."))
    job = message("be kinder")
    bot.process(job)
    approval_id, _ = asked(bot)

    bot.process(decided(job, approval_id, "deny"))
    assert "SOUL.md" not in bot.workspace.files or bot.workspace.files["SOUL.md"] != b"Be kinder."
    result = bot.model.requests[-1][0][-1]
    assert result["role"] == "tool" and result["content"] == texts.load("approval_denied")
    assert bot.said[-1] == "Understood, left as it is."


def test_a_press_after_the_deadline_counts_as_the_deadline() -> None:
    bot = soul_bot(text("Nobody allowed it."))
    job = message("be kinder")
    bot.process(job)
    approval_id, _ = asked(bot)

    late = (datetime.now(UTC) + timedelta(hours=2)).isoformat(timespec="seconds")
    bot.process(decided(job, approval_id, "once", decided_at=late))
    assert "SOUL.md" not in bot.workspace.files or bot.workspace.files["SOUL.md"] != b"Be kinder."
    result = bot.model.requests[-1][0][-1]["content"]
    assert result == texts.render("approval_timed_out", minutes=60)


def test_always_allow_records_a_standing_permission_and_the_next_turn_does_not_ask() -> None:
    bot = soul_bot(text("Done."), tool("write_file", SOUL), text("Done again."))
    job = message("be kinder")
    bot.process(job)
    approval_id, _ = asked(bot)
    bot.process(decided(job, approval_id, "always"))
    assert bot.approvals.allowed("", "write_file")

    bot.workspace.files["SOUL.md"] = b"old"
    bot.process(message("again", update_id=800000002))
    assert bot.workspace.files["SOUL.md"] == b"Be kinder."
    assert bot.said[-1] == "Done again."
    assert len(bot.approvals.approvals) == 1  # no second question


def test_a_new_message_while_a_call_waits_denies_it_then_is_answered() -> None:
    """The person moved on: the waiting turn finishes first, its call denied and the model
    told, then the new message gets its own answer."""
    bot = soul_bot(text("Left SOUL.md as it is."), text("It is 21 °C."))
    bot.process(message("be kinder"))
    asked(bot)
    bot.process(message("what is the weather?", update_id=800000002))

    assert "SOUL.md" not in bot.workspace.files or bot.workspace.files["SOUL.md"] != b"Be kinder."
    denied = bot.model.requests[1][0][-1]
    assert denied["role"] == "tool" and denied["content"] == texts.load("approval_moved_on")
    assert bot.said[-2:] == ["Left SOUL.md as it is.", "It is 21 °C."]
    assert "the conversation went on" in bot.channel.edits[-1][2]
    users = [m["content"] for m in bot.saved() if m["role"] == "user"]
    assert len(users) == 2 and "weather" in str(users[1])
    assert bot.journal.records == {}
