"""Heartbeat: no task, no model call; tasks are queued once per scheduled time."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nanobot_lambda.jobs import HeartbeatJob
from nanobot_lambda.scheduler import SchedulerService, heartbeat_tasks
from nanobot_lambda.workspace import default_workspace_files
from tests.support.fakes import MemoryWorkspace


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "# Heartbeat\n\n## Daily\n",
        "# Heartbeat\n<!-- - [ ] a commented-out task\n spanning lines -->\n",
        "- [ ]\n* [ ]\n- \n1. [ ]\n",
        "- [x] done already\n",
    ],
)
def test_nothing_to_do(text: str | None) -> None:
    assert heartbeat_tasks(text) is None


def test_default_heartbeat_file_has_no_task() -> None:
    assert heartbeat_tasks(default_workspace_files()["HEARTBEAT.md"].decode()) is None


def test_tasks_are_kept() -> None:
    text = "# Heartbeat\n- [ ] Check the weather in Paris\n<!-- note -->\nRemind me to stretch\n"
    assert heartbeat_tasks(text) == "- [ ] Check the weather in Paris\nRemind me to stretch"


class MemoryQueue:
    def __init__(self) -> None:
        self.sent: list[tuple[HeartbeatJob, str, str]] = []

    def enqueue(self, job: HeartbeatJob, group: str, dedup_id: str) -> str:
        self.sent.append((job, group, dedup_id))
        return "id"


def service(
    files: dict[str, str | bytes], chat_id: int | None = 111
) -> tuple[SchedulerService, MemoryQueue]:
    queue = MemoryQueue()
    scheduler = SchedulerService(
        workspace=MemoryWorkspace(files),
        queue=queue,  # type: ignore[arg-type]
        heartbeat_chat_id=chat_id,
        clock=lambda: datetime(2026, 11, 22, 9, 30, tzinfo=UTC),
    )
    return scheduler, queue


def test_idle_heartbeat_queues_nothing() -> None:
    scheduler, queue = service({"HEARTBEAT.md": "# Heartbeat\n"})
    assert scheduler.handle({"kind": "heartbeat"}) == {"status": "idle"}
    assert queue.sent == []


def test_missing_or_binary_heartbeat_file_is_idle() -> None:
    assert service({})[0].handle({"kind": "heartbeat"}) == {"status": "idle"}
    assert service({"HEARTBEAT.md": b"\xff\xfe\x00"})[0].handle({"kind": "heartbeat"}) == {
        "status": "idle"
    }


def test_tasks_are_queued_with_a_dedup_id_from_the_scheduled_time() -> None:
    scheduler, queue = service({"HEARTBEAT.md": "- [ ] water the plants"})
    event = {"kind": "heartbeat", "scheduled_time": "2026-11-22T09:30:00Z"}
    assert scheduler.handle(event) == {"status": "queued"}
    ((job, group, dedup_id),) = queue.sent
    assert job.tasks == "- [ ] water the plants"
    assert job.chat_id == 111
    assert group == "heartbeat"
    assert dedup_id == "heartbeat-2026-11-22T09-30-00Z"


def test_tasks_without_a_target_chat_are_skipped() -> None:
    scheduler, queue = service({"HEARTBEAT.md": "- [ ] water the plants"}, chat_id=None)
    assert scheduler.handle({"kind": "heartbeat"}) == {"status": "no_target"}
    assert queue.sent == []


def test_unknown_event_is_ignored() -> None:
    scheduler, queue = service({"HEARTBEAT.md": "- [ ] task"})
    assert scheduler.handle({"kind": "surprise"}) == {"status": "ignored"}
    assert queue.sent == []
