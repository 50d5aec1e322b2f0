"""`chat --state DIR`: a stack kept in a state folder, stopped, and the next run (a process of
its own, as the next `chat` is) started from the same folder has what the first had:
the resources' names, the session, the workspace, the usage and the cron jobs with their
schedules. A start that fails does not overwrite what was kept; a state file that cannot be
read stops the start with what to do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.operator.local.stack import LocalStack, LocalUser
from nanobot_lambda.operator.local.state import LocalState, StateError
from tests.conftest import TEMPLATE
from tests.e2e.test_cli import run_cli
from tests.e2e.test_proactive import tool_results
from tests.support.scripted_model import ScriptedModelServer


def cron_schedules(stack: LocalStack) -> list[dict[str, Any]]:
    group = stack.template.refs["ScheduleGroup"]
    client = boto3.client("scheduler")
    found = [
        client.get_schedule(Name=item["Name"], GroupName=group)
        for item in client.list_schedules(GroupName=group)["Schedules"]
    ]
    return [s for s in found if json.loads(s["Target"]["Input"])["kind"] == "cron"]


def session_texts(stack: LocalStack) -> list[str]:
    store = DynamoSessionStore(stack.template.refs["SessionsTable"], boto3.client("dynamodb"))
    return [str(m["content"]) for m in store.load(f"telegram:{stack.user.id}", 50).messages]


def test_a_second_run_has_what_the_first_kept(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """The first run in-process; the second as the next `chat` is: a process of its own."""
    state = LocalState(tmp_path / "state")
    model_server.call_tool(
        "cron",
        {"action": "add", "kind": "task", "message": "Summarise my notes", "every_seconds": 3600},
    ).reply("Scheduled hourly.")
    with LocalStack(TEMPLATE, model_env=model_server.env()).keep_in(state) as first:
        first.workspace.write("notes/today.md", b"tea at five")
        first.post_update(first.text_update("every hour, summarise my notes"))
        first.process_queue()
        (kept_schedule,) = cron_schedules(first)
        kept_session = session_texts(first)
        prefix = first.prefix
    assert state.exists and state.prefix() == prefix

    model_server.call_tool("cron", {"action": "list"})
    model_server.call_tool("read_file", {"path": "notes/today.md"}).reply("One job; tea at five.")
    second = run_cli(
        "chat",
        "-m",
        "what is scheduled, and what are my notes?",
        "--state",
        str(state.folder),
        "--env-file",
        "/nonexistent",
        env=model_server.env(),
        cwd=tmp_path,
    )
    assert second.returncode == 0, second.stderr
    history = json.dumps(model_server.requests[-3]["messages"])
    assert "every hour, summarise my notes" in history  # the session
    *_, listed, note = tool_results(model_server.requests[-1])
    assert "task 'Summarise my notes', every hour" in listed  # the job, with its schedule
    assert note == "tea at five"  # the workspace
    assert kept_session[0].endswith("every hour, summarise my notes")

    # What the second run kept: the same schedule, put back and saved again, and the usage
    # of both runs' turns.
    saved = state.load()
    (schedule,) = [
        s for s in saved["schedules"]["ScheduleGroup"] if s["Name"] == kept_schedule["Name"]
    ]
    assert schedule["ScheduleExpression"] == kept_schedule["ScheduleExpression"] == "rate(1 hour)"
    assert schedule["Target"] == kept_schedule["Target"]
    sessions_items = saved["tables"]["SessionsTable"]
    totals = [
        item
        for item in sessions_items
        if item["pk"]["S"] == f"usage#{LocalUser().id}" and item["sk"]["S"] == "total"
    ]
    assert [int(item["turns"]["N"]) for item in totals] == [2]


def test_an_unreadable_state_stops_the_start_and_is_left_alone(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    state = LocalState(tmp_path / "state")
    state.folder.mkdir()
    state.path.write_text("{not json")
    stack = LocalStack(TEMPLATE, model_env=model_server.env())
    with pytest.raises(StateError, match=r"cannot be read .*: move the folder away"):
        stack.keep_in(state)
    assert state.path.read_text() == "{not json"
