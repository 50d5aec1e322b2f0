"""The cron tool's quiet tasks: the `quiet` argument, what is stored, what list shows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.tools import ToolRegistry
from nanobot_lambda.tools.chat import CronTool
from tests.support.fakes import MemoryJobStore, MemorySchedules
from tests.support.job_context import job_context

ADA = 111111111
NOW = datetime(2026, 11, 22, 8, 0, tzinfo=UTC)


class NoOutbox:
    def send(
        self, chat_id: int, text: str, thread_id: int | None = None, *, record: bool = True
    ) -> bool:
        raise AssertionError("the cron tool sends nothing")


def cron(jobs: MemoryJobStore, **arguments: Any) -> str:
    ctx = job_context(chat_id=ADA, outbox=NoOutbox())  # type: ignore[arg-type]
    tool = CronTool(jobs, MemorySchedules(), timezone="UTC", clock=lambda: NOW)
    return ToolRegistry([tool]).execute(ctx, ToolCall("call_1", "cron", json.dumps(arguments)))


def test_the_quiet_argument_is_documented_in_the_schema() -> None:
    quiet = CronTool.parameters["properties"]["quiet"]
    assert quiet["type"] == "boolean"
    assert "Tasks only" in quiet["description"]
    assert "only what is new or needs attention" in quiet["description"]


def test_a_quiet_task_is_stored_and_listed_as_quiet() -> None:
    jobs = MemoryJobStore()
    added = cron(
        jobs, action="add", kind="task", message="Check the site", every_seconds=3600, quiet=True
    )
    assert added.startswith("Added task 'Check the site' (id ")
    assert "(quiet: reports only what is new or needs attention)" in added
    (job,) = jobs.all_jobs()
    assert job.quiet
    listed = cron(jobs, action="list")
    assert f"{job.job_id}: task 'Check the site' (quiet: reports only" in listed


def test_tasks_and_reminders_are_not_quiet_unless_asked() -> None:
    jobs = MemoryJobStore()
    cron(jobs, action="add", kind="task", message="Summarise", every_seconds=3600)
    cron(jobs, action="add", kind="task", message="Plan", every_seconds=3600, quiet="false")
    cron(jobs, action="add", message="Stretch", every_seconds=3600)
    assert [job.quiet for job in jobs.all_jobs()] == [False, False, False]
    assert "quiet" not in cron(jobs, action="list")


def test_a_model_may_send_quiet_as_a_string() -> None:
    jobs = MemoryJobStore()
    cron(jobs, action="add", kind="task", message="Watch", every_seconds=3600, quiet="true")
    assert [job.quiet for job in jobs.all_jobs()] == [True]


def test_a_reminder_cannot_be_quiet() -> None:
    jobs = MemoryJobStore()
    refused = cron(jobs, action="add", message="Stretch", every_seconds=3600, quiet=True)
    assert "quiet is for tasks only" in refused
    assert jobs.all_jobs() == []
