"""The proactive assistant through the whole stack: cron jobs on (local) EventBridge Scheduler,
the heartbeat, background tasks (spawn), and the message tool."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from nanobot_lambda.adapters.aws.jobs import DynamoJobStore
from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.adapters.telegram.client import TelegramError
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory
from tests.support.faults import BotApiFaults
from tests.support.scripted_model import ScriptedModelServer


def say(stack: LocalStack, text: str) -> None:
    assert stack.post_update(stack.text_update(text))["statusCode"] == 200
    stack.process_queue()


def tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def jobs(stack: LocalStack) -> DynamoJobStore:
    return DynamoJobStore(stack.template.refs["JobsTable"], boto3.client("dynamodb"))


def schedules(stack: LocalStack) -> list[dict[str, Any]]:
    group = stack.template.refs["ScheduleGroup"]
    listed = boto3.client("scheduler").list_schedules(GroupName=group)["Schedules"]
    client = boto3.client("scheduler")
    return [client.get_schedule(Name=item["Name"], GroupName=group) for item in listed]


def job_schedules(stack: LocalStack) -> list[dict[str, Any]]:
    """The cron tool's schedules (the group also holds the heartbeat's)."""
    return [s for s in schedules(stack) if json.loads(s["Target"]["Input"])["kind"] == "cron"]


def added_job_id(request: dict[str, Any]) -> str:
    (result,) = tool_results(request)
    assert result.startswith("Added"), result
    return result.split("(id ")[1].split(")")[0]


def test_a_reminder_arrives_at_its_time_without_a_model_call(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    at = (datetime.now(UTC) + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
    model_server.call_tool(
        "cron", {"action": "add", "kind": "reminder", "message": "Call mum", "at": at}
    ).reply("I'll remind you.")
    say(stack, "remind me to call mum in 10 minutes")
    job_id = added_job_id(model_server.requests[1])
    (schedule,) = job_schedules(stack)
    assert schedule["ScheduleExpression"].startswith("at(")
    assert schedule["ActionAfterCompletion"] == "DELETE"
    target_input = json.loads(schedule["Target"]["Input"])
    assert target_input == {
        "kind": "cron",
        "chat_id": stack.user.id,
        "job_id": job_id,
        "scheduled_time": "<aws.scheduler.scheduled-time>",
    }
    assert schedule["Target"]["Arn"] == stack.template.attributes[("SchedulerFunction", "Arn")]

    requests_before = len(model_server.requests)
    early = stack.fire_due_schedules(datetime.now(UTC) + timedelta(minutes=5))
    assert schedule["Name"] not in [name for name, _ in early]  # not yet
    fired = stack.fire_due_schedules(datetime.now(UTC) + timedelta(minutes=11))
    assert schedule["Name"] in [name for name, _ in fired]
    stack.process_queue()
    assert stack.bot_api.messages[-1].plain_text == "⏰ Call mum"
    assert len(model_server.requests) == requests_before  # no model call at all
    assert jobs(stack).get(stack.user.id, job_id) is None  # a one-time job is done
    assert job_schedules(stack) == []


def test_a_task_runs_as_a_turn_in_its_own_session_and_reports(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.call_tool(
        "cron",
        {"action": "add", "kind": "task", "message": "Summarise my notes", "every_seconds": 3600},
    ).reply("Scheduled hourly.")
    say(stack, "every hour, summarise my notes")
    job_id = added_job_id(model_server.requests[1])
    (schedule,) = job_schedules(stack)
    assert schedule["ScheduleExpression"] == "rate(1 hour)"
    assert schedule["StartDate"] > datetime.now(UTC) + timedelta(minutes=59)  # not at once

    model_server.reply("Your notes: nothing new.")
    stack.fire_due_schedules(datetime.now(UTC) + timedelta(minutes=61))
    stack.process_queue()
    task_request = model_server.requests[2]["messages"]
    assert "Summarise my notes" in task_request[-1]["content"]
    assert "every hour, summarise my notes" not in json.dumps(
        task_request
    )  # not the chat's session
    assert stack.bot_api.messages[-1].plain_text == "Your notes: nothing new."
    cron_session = DynamoSessionStore(
        stack.template.refs["SessionsTable"], boto3.client("dynamodb")
    )
    assert len(cron_session.load(f"cron:{job_id}", 10).messages) == 2
    record = jobs(stack).get(stack.user.id, job_id)
    assert record is not None and record.last_status == "done"


def add_hourly_task(
    stack: LocalStack, model_server: ScriptedModelServer, *, quiet: bool | None
) -> tuple[str, datetime]:
    """The user asks for an hourly status check: the job's id, and when it was added."""
    arguments: dict[str, Any] = {
        "action": "add",
        "kind": "task",
        "message": "Check the status page",
        "every_seconds": 3600,
    }
    if quiet is not None:
        arguments["quiet"] = quiet
    model_server.call_tool("cron", arguments).reply("I'll check it every hour.")
    added = datetime.now(UTC)
    say(stack, "check the status page every hour")
    return added_job_id(model_server.requests[-1]), added


def sent_since(stack: LocalStack, before: int) -> list[str]:
    return [message.plain_text for message in stack.bot_api.messages[before:]]


def test_a_quiet_task_says_nothing_until_there_is_news(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    job_id, added = add_hourly_task(stack, model_server, quiet=True)
    assert "quiet" in tool_results(model_server.requests[-1])[0]
    before = len(stack.bot_api.messages)

    # The first run: nothing to report. Not even its progress text reaches the chat.
    model_server.call_tool("list_dir", {"path": ""}, content="Checking the status page.")
    model_server.reply("HEARTBEAT_OK")
    stack.fire_due_schedules(added + timedelta(minutes=61))
    stack.process_queue()
    prompt = model_server.requests[-2]["messages"][-1]["content"]
    assert "Check the status page" in prompt and "answer exactly HEARTBEAT_OK" in prompt
    assert sent_since(stack, before) == []
    sessions = DynamoSessionStore(stack.template.refs["SessionsTable"], boto3.client("dynamodb"))
    saved = sessions.load(f"cron:{job_id}", 10).messages
    assert [m["role"] for m in saved] == ["user", "assistant", "tool", "assistant"]
    record = jobs(stack).get(stack.user.id, job_id)
    assert record is not None and record.quiet
    assert record.last_status == "done: nothing to report"

    # The next hour there is news: one message, and the model saw the earlier run.
    model_server.reply("The status page reports an outage since 10:05.")
    stack.fire_due_schedules(added + timedelta(minutes=121))
    stack.process_queue()
    assert {"role": "assistant", "content": "HEARTBEAT_OK"} in model_server.requests[-1]["messages"]
    assert sent_since(stack, before) == ["The status page reports an outage since 10:05."]
    assert len(sessions.load(f"cron:{job_id}", 10).messages) == 6
    record = jobs(stack).get(stack.user.id, job_id)
    assert record is not None and record.last_status == "done"
    assert model_server.unexpected == []


def test_a_task_that_is_not_quiet_reports_every_run(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    job_id, added = add_hourly_task(stack, model_server, quiet=None)
    before = len(stack.bot_api.messages)
    model_server.reply("Status page: all green.")
    stack.fire_due_schedules(added + timedelta(minutes=61))
    stack.process_queue()
    model_server.reply("Status page: still all green.")
    stack.fire_due_schedules(added + timedelta(minutes=121))
    stack.process_queue()

    assert "HEARTBEAT_OK" not in model_server.requests[-2]["messages"][-1]["content"]
    assert sent_since(stack, before) == ["Status page: all green.", "Status page: still all green."]
    record = jobs(stack).get(stack.user.id, job_id)
    assert record is not None and not record.quiet and record.last_status == "done"


def test_duplicate_and_late_firings_do_nothing(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.call_tool(
        "cron",
        {"action": "add", "message": "Stretch", "cron_expr": "0 9 * * *", "tz": "Europe/Paris"},
    ).reply("Daily at 9.")
    say(stack, "remind me to stretch at 9 every day")
    job_id = added_job_id(model_server.requests[1])
    (schedule,) = job_schedules(stack)
    assert schedule["ScheduleExpression"] == "cron(0 9 * * ? *)"
    assert schedule["ScheduleExpressionTimezone"] == "Europe/Paris"
    event = {
        "kind": "cron",
        "chat_id": stack.user.id,
        "job_id": job_id,
        "scheduled_time": "2030-01-01T08:00:00Z",
    }
    sent_before = len(stack.bot_api.messages)
    assert stack.handlers["scheduler"].handler(event, stack._context("scheduler")) == {
        "status": "sent"
    }
    assert stack.handlers["scheduler"].handler(event, stack._context("scheduler")) == {
        "status": "duplicate"
    }
    assert len(stack.bot_api.messages) == sent_before + 1

    model_server.call_tool("cron", {"action": "remove", "job_id": job_id}).reply("Removed.")
    say(stack, "stop the stretch reminder")
    assert job_schedules(stack) == []
    later = {**event, "scheduled_time": "2030-01-02T08:00:00Z"}
    assert stack.handlers["scheduler"].handler(later, stack._context("scheduler")) == {
        "status": "removed"
    }


def test_cron_list_and_validation_errors_reach_the_model(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.call_tool("cron", {"action": "add", "message": "x", "every_seconds": 10})
    model_server.call_tool("cron", {"action": "add", "message": "x", "at": "tomorrow-ish"})
    model_server.call_tool("cron", {"action": "add", "message": "x", "cron_expr": "61 * * * *"})
    model_server.call_tool("cron", {"action": "add", "every_seconds": 120})
    model_server.call_tool(
        "cron", {"action": "add", "message": "Water plants", "every_seconds": 7200}
    )
    model_server.call_tool("cron", {"action": "list"})
    model_server.reply("Done.")
    say(stack, "set things up")
    results = [tool_results(request)[-1] for request in model_server.requests[1:]]
    assert "every_seconds must be at least 60" in results[0]
    assert "is not an ISO date-time" in results[1]
    assert "minute must be 0-59" in results[2]
    assert "message is required" in results[3]
    assert results[4].startswith("Added reminder 'Water plants'")
    assert "every 2 hours" in results[5] and "next run" in results[5]
    assert len(job_schedules(stack)) == 1


def test_a_scheduled_task_cannot_create_jobs(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.call_tool(
        "cron", {"action": "add", "kind": "task", "message": "Plan tomorrow", "every_seconds": 3600}
    ).reply("OK.")
    say(stack, "plan tomorrow every hour")
    model_server.call_tool("cron", {"action": "add", "message": "loop", "every_seconds": 60}).reply(
        "Planned."
    )
    stack.fire_due_schedules(datetime.now(UTC) + timedelta(minutes=61))
    stack.process_queue()
    (refused,) = tool_results(model_server.requests[3])
    assert "cannot create new jobs" in refused
    assert len(job_schedules(stack)) == 1  # no feedback loop


def test_heartbeat_session_stays_bounded_across_runs(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    stack.workspace.write("HEARTBEAT.md", b"- [ ] Check the weather for a walk\n")
    start = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
    for run in range(10):
        model_server.call_tool("heartbeat_decision", {"action": "run"}).reply("HEARTBEAT_OK")
        stack.fire_heartbeat(start + timedelta(minutes=30 * run))
        stack.process_queue()
    turn_requests = [r for r in model_server.requests if "tool_choice" not in r]
    assert len(turn_requests) == 10
    sizes = {len(json.dumps(r["messages"][1:])) for r in turn_requests}
    assert max(sizes) - min(sizes) < 50  # only the time in the runtime block changes
    assert stack.bot_api.messages == []  # nothing to report, nothing sent


def test_a_background_task_round_trip(stack: LocalStack, model_server: ScriptedModelServer) -> None:
    model_server.call_tool(
        "spawn", {"task": "Write a packing list to notes/packing.md", "label": "packing list"}
    ).reply("I've started on it.")
    # The background task (subagent) with its own, smaller toolset:
    model_server.call_tool(
        "write_file", {"path": "notes/packing.md", "content": "- passport\n- charger"}
    ).reply("Packing list written to notes/packing.md (2 items).")
    # The chat's agent hears the result and tells the user:
    model_server.reply("Your packing list is ready in notes/packing.md.")
    say(stack, "make me a packing list in the background")

    spawn_result = tool_results(model_server.requests[1])[0]
    assert spawn_result.startswith("Started background task")
    subagent_request = model_server.requests[2]
    tools = {tool["function"]["name"] for tool in subagent_request["tools"]}
    assert tools == {  # the workspace tools, and the code sandbox's exec
        "read_file", "write_file", "edit_file", "list_dir", "grep", "web_search", "web_fetch",
        "exec",
    }  # fmt: skip
    announcement = model_server.requests[4]["messages"][-1]["content"]
    assert 'background task "packing list" finished' in announcement
    assert "Packing list written to notes/packing.md (2 items)." in announcement
    assert [m.plain_text for m in stack.bot_api.messages] == [
        "I've started on it.",
        "Your packing list is ready in notes/packing.md.",
    ]
    assert stack.workspace.read("notes/packing.md", fresh=True) is not None
    assert jobs(stack).running_subagents(stack.user.id, now=0) == 0  # finished


def test_message_tool_answer_is_not_sent_twice(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.call_tool("message", {"content": "The answer is 42."}).reply("The answer is 42.")
    say(stack, "what is the answer?")
    assert [m.plain_text for m in stack.bot_api.messages] == ["The answer is 42."]


def test_message_tool_refuses_chats_that_are_not_allowed(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    # A message to another chat asks the owner first (tests/e2e/test_approvals.py): allowed
    # here, so that the tool's own check is what is seen.
    stack = stack_factory(Approvals="message=allow")
    model_server.call_tool("message", {"content": "hi", "chat_id": 999}).reply("Could not.")
    model_server.call_tool("message", {"content": "hi Ada", "chat_id": 111111111}).reply("Sent.")
    say(stack, "tell someone")
    say(stack, "tell Ada")
    assert "not an allowed chat" in tool_results(model_server.requests[1])[0]
    assert [(m.chat_id, m.plain_text) for m in stack.bot_api.messages] == [
        (stack.user.id, "Could not."),
        (111111111, "hi Ada"),
        (stack.user.id, "Sent."),
    ]


def test_a_failed_background_task_is_announced_too(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.call_tool("spawn", {"task": "Research flights", "label": "flights"})
    model_server.reply("Started.")
    model_server.fail(500, times=3)  # the background task's model calls all fail
    model_server.reply("Sorry, the flight research didn't work out; shall I try again?")
    say(stack, "research flights in the background")
    announcement = model_server.requests[-1]["messages"][-1]["content"]
    assert 'background task "flights" did not finish' in announcement
    assert stack.bot_api.messages[-1].plain_text.startswith("Sorry, the flight research")
    assert jobs(stack).running_subagents(stack.user.id, now=0) == 0


def test_a_long_reminder_cut_short_is_finished_by_the_retry_not_repeated(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    message = "\n\n".join(f"Part {n}: " + " ".join(["stretch"] * 400) for n in range(1, 4))
    model_server.call_tool(
        "cron", {"action": "add", "message": message, "cron_expr": "0 9 * * *"}
    ).reply("Daily at 9.")
    say(stack, "remind me of all this at 9 every day")
    job_id = added_job_id(model_server.requests[1])
    faults = BotApiFaults(stack.bot_api)
    faults.fail("sendMessage", 502, times=4, when=lambda p: p["text"].startswith("Part 3"))
    event = {
        "kind": "cron",
        "chat_id": stack.user.id,
        "job_id": job_id,
        "scheduled_time": "2030-01-01T09:00:00Z",
    }
    sent_before = len(stack.bot_api.messages)

    with pytest.raises(TelegramError):  # Scheduler retries a failed invocation
        stack.handlers["scheduler"].handler(event, stack._context("scheduler"))
    retried = stack.handlers["scheduler"].handler(event, stack._context("scheduler"))

    assert retried == {"status": "sent"}
    sent = [m.plain_text.split(":")[0] for m in stack.bot_api.messages[sent_before:]]
    assert sent == ["⏰ Part 1", "Part 2", "Part 3"]
