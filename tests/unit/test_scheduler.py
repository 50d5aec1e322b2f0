"""Heartbeat: no task, no model call; tasks are queued once per scheduled time."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from nanobot_lambda.core.cron import CronJob, pause_job, resume_job
from nanobot_lambda.core.heartbeat import heartbeat_tasks
from nanobot_lambda.core.jobs import ContinuationJob, CronTaskJob, parse_job
from nanobot_lambda.core.workspace import default_workspace_files
from nanobot_lambda.functions.scheduler import SchedulerPorts, SchedulerService
from tests.support.fakes import (
    MemoryJobStore,
    MemoryQueue,
    MemorySchedules,
    MemoryWorkspace,
    RecordingChannel,
    RecordingMetrics,
)


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


def service(
    files: dict[str, str | bytes],
    chat_id: int | None = 111,
    jobs: MemoryJobStore | None = None,
    bot: RecordingChannel | None = None,
) -> tuple[SchedulerService, MemoryQueue]:
    queue = MemoryQueue()
    scheduler = SchedulerService(
        SchedulerPorts(
            workspace=MemoryWorkspace(files),
            queue=queue,
            jobs=jobs or MemoryJobStore(),
            channel=bot or RecordingChannel(),
            metrics=RecordingMetrics(),
        ),
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


def test_heartbeat_reports_to_the_latest_private_chat_by_default() -> None:
    jobs = MemoryJobStore()
    jobs.remember_private_chat(555)
    scheduler, queue = service({"HEARTBEAT.md": "- [ ] water the plants"}, chat_id=None, jobs=jobs)
    assert scheduler.handle({"kind": "heartbeat"}) == {"status": "queued"}
    assert queue.sent[0][0].chat_id == 555


def test_a_paused_heartbeat_queues_nothing_and_resumed_it_queues_its_tasks() -> None:
    jobs = MemoryJobStore()
    scheduler, queue = service({"HEARTBEAT.md": "- [ ] water the plants"}, jobs=jobs)
    jobs.set_heartbeat_paused(True)  # the console's pause
    event = {"kind": "heartbeat", "scheduled_time": "2026-11-22T09:30:00Z"}
    assert scheduler.handle(event) == {"status": "paused"}
    assert queue.sent == []
    jobs.set_heartbeat_paused(False)
    assert scheduler.handle(event) == {"status": "queued"}
    assert [job.tasks for job, _, _ in queue.sent] == ["- [ ] water the plants"]


def test_tasks_without_a_target_chat_are_skipped() -> None:
    scheduler, queue = service({"HEARTBEAT.md": "- [ ] water the plants"}, chat_id=None)
    assert scheduler.handle({"kind": "heartbeat"}) == {"status": "no_target"}
    assert queue.sent == []


def test_unknown_event_is_ignored() -> None:
    scheduler, queue = service({"HEARTBEAT.md": "- [ ] task"})
    assert scheduler.handle({"kind": "surprise"}) == {"status": "ignored"}
    assert queue.sent == []


def job(kind: str = "reminder", one_time: bool = False) -> CronJob:
    return CronJob(
        job_id="ab12cd34",
        chat_id=111,
        thread_id=7,
        kind=kind,  # type: ignore[arg-type]
        message="Stretch your legs",
        name="stretch",
        expression="rate(1 hour)",
        timezone="UTC",
        description="every hour",
        one_time=one_time,
        created_at="2026-11-22T08:00:00+00:00",
    )


def fire(scheduler: SchedulerService, at: str = "2026-11-22T09:00:00Z") -> dict[str, str]:
    return scheduler.handle(
        {"kind": "cron", "chat_id": 111, "job_id": "ab12cd34", "scheduled_time": at}
    )


def test_a_reminder_goes_straight_to_the_chat() -> None:
    jobs, bot = MemoryJobStore(), RecordingChannel()
    jobs.put(job())
    scheduler, queue = service({}, jobs=jobs, bot=bot)
    assert fire(scheduler) == {"status": "sent"}
    assert bot.sent == [(111, "⏰ Stretch your legs", 7)]
    assert queue.sent == []  # no agent turn, no model call
    recorded = jobs.get(111, "ab12cd34")
    assert recorded is not None and recorded.last_status == "sent"


def test_a_task_is_queued_as_a_turn_in_its_own_group() -> None:
    jobs, bot = MemoryJobStore(), RecordingChannel()
    jobs.put(job("task"))
    scheduler, queue = service({}, jobs=jobs, bot=bot)
    assert fire(scheduler) == {"status": "queued"}
    ((task, group, dedup_id),) = queue.sent
    assert isinstance(task, CronTaskJob)
    assert (task.chat_id, task.thread_id, task.message) == (111, 7, "Stretch your legs")
    assert group == "cron:ab12cd34"
    assert dedup_id == "cron-ab12cd34-2026-11-22T09-00-00Z"
    assert bot.sent == []
    assert task.quiet is False


def test_a_quiet_task_is_queued_quiet() -> None:
    jobs = MemoryJobStore()
    jobs.put(replace(job("task"), quiet=True))
    scheduler, queue = service({}, jobs=jobs)
    assert fire(scheduler) == {"status": "queued"}
    ((task, _, _),) = queue.sent
    assert isinstance(task, CronTaskJob) and task.quiet is True
    assert parse_job(task.model_dump_json()) == task


# Envelopes as queued before quiet tasks existed (the job envelope is a public contract).
OLD_TASK = (
    '{"version":1,"kind":"cron_task","job_id":"ab12cd34","chat_id":111,"thread_id":7,'
    '"name":"stretch","message":"Stretch your legs","fired_at":"2026-11-22T09:00:00Z"}'
)


@pytest.mark.parametrize(
    "body", [OLD_TASK, f'{{"version":1,"kind":"continuation","job":{OLD_TASK},"part":2}}']
)
def test_a_task_queued_before_quiet_tasks_existed_still_parses_as_not_quiet(body: str) -> None:
    parsed = parse_job(body)
    task = parsed.job if isinstance(parsed, ContinuationJob) else parsed
    assert isinstance(task, CronTaskJob)
    assert (task.job_id, task.message, task.quiet) == ("ab12cd34", "Stretch your legs", False)


def test_a_removed_job_fires_into_nothing() -> None:
    bot = RecordingChannel()
    scheduler, queue = service({}, bot=bot)
    assert fire(scheduler) == {"status": "removed"}
    assert bot.sent == [] and queue.sent == []


def test_a_job_paused_after_its_firing_was_on_its_way_sends_nothing() -> None:
    jobs, bot = MemoryJobStore(), RecordingChannel()
    jobs.put(job())
    jobs.set_paused(111, "ab12cd34", True)
    scheduler, queue = service({}, jobs=jobs, bot=bot)
    assert fire(scheduler) == {"status": "paused"}
    assert bot.sent == [] and queue.sent == []
    jobs.set_paused(111, "ab12cd34", False)
    assert fire(scheduler) == {"status": "sent"}  # resumed: its firing is claimed as usual


def test_pausing_deletes_the_schedule_and_resuming_makes_it_again_on_its_grid() -> None:
    jobs, schedules = MemoryJobStore(), MemorySchedules()
    rate = replace(job(), starts_at="2026-11-22T09:00:00+00:00")  # every hour from 09:00
    jobs.put(rate)
    schedules.create(rate)
    pause_job(jobs, schedules, rate)
    paused = jobs.get(111, "ab12cd34")
    assert paused is not None and paused.paused and schedules.schedules == {}
    assert resume_job(jobs, schedules, paused, datetime(2026, 11, 22, 12, 20, tzinfo=UTC))
    # The schedule starts at the next firing on the job's own grid (Scheduler fires a rate
    # schedule whose start has passed at once); the stored job keeps its first start.
    assert schedules.schedules["ab12cd34"].starts_at == "2026-11-22T13:00:00+00:00"
    resumed = jobs.get(111, "ab12cd34")
    assert resumed is not None and not resumed.paused
    assert resumed.starts_at == "2026-11-22T09:00:00+00:00"


def test_a_one_time_job_whose_time_passed_while_paused_is_not_resumed() -> None:
    jobs, schedules = MemoryJobStore(), MemorySchedules()
    once = replace(job(one_time=True), expression="at(2026-11-22T10:00:00)")
    jobs.put(once)
    pause_job(jobs, schedules, once)
    paused = jobs.get(111, "ab12cd34")
    assert paused is not None
    assert not resume_job(jobs, schedules, paused, datetime(2026, 11, 22, 11, 0, tzinfo=UTC))
    assert schedules.schedules == {}
    still = jobs.get(111, "ab12cd34")
    assert still is not None and still.paused


def test_a_duplicate_delivery_does_nothing_the_second_time() -> None:
    jobs, bot = MemoryJobStore(), RecordingChannel()
    jobs.put(job())
    scheduler, _ = service({}, jobs=jobs, bot=bot)
    assert fire(scheduler) == {"status": "sent"}
    assert fire(scheduler) == {"status": "duplicate"}
    assert fire(scheduler, at="2026-11-22T10:00:00Z") == {"status": "sent"}  # the next hour
    assert len(bot.sent) == 2


def test_a_failed_send_is_released_so_the_retry_delivers() -> None:
    jobs = MemoryJobStore()
    jobs.put(job())

    class FlakyBot(RecordingChannel):
        calls = 0

        def send_part(self, chat_id: int, part: str, *, thread_id: int | None = None) -> int:
            self.calls += 1
            if self.calls == 1:
                raise ConnectionError("telegram unreachable")
            return super().send_part(chat_id, part, thread_id=thread_id)

    bot = FlakyBot()
    scheduler, _ = service({}, jobs=jobs, bot=bot)
    with pytest.raises(ConnectionError):
        fire(scheduler)
    assert fire(scheduler) == {"status": "sent"}  # Scheduler's retry of the same firing
    assert len(bot.sent) == 1


def test_a_long_reminder_cut_short_resumes_at_its_first_part_not_yet_accepted() -> None:
    """Telegram accepts parts 1 and 2 of a three-part reminder, then the attempt dies: the
    retry of the same firing sends part 3 only."""
    jobs = MemoryJobStore()
    long = "\n\n".join(f"Part {n}: " + " ".join(["stretch"] * 400) for n in range(1, 4))
    jobs.put(replace(job(), message=long))

    class DiesAtPartThree(RecordingChannel):
        def send_part(self, chat_id: int, part: str, *, thread_id: int | None = None) -> int:
            if part.startswith("Part 3") and not getattr(self, "failed", False):
                self.failed = True
                raise ConnectionError("the invocation timed out")
            return super().send_part(chat_id, part, thread_id=thread_id)

    bot = DiesAtPartThree()
    scheduler, _ = service({}, jobs=jobs, bot=bot)
    with pytest.raises(ConnectionError):
        fire(scheduler)
    assert fire(scheduler) == {"status": "sent"}  # Scheduler's retry of the same firing
    assert [html.split(":")[0] for _, html, _ in bot.sent] == ["⏰ Part 1", "Part 2", "Part 3"]
    assert fire(scheduler, at="2026-11-22T10:00:00Z") == {"status": "sent"}  # the next hour
    assert len(bot.sent) == 6  # in full again


def test_a_one_time_job_is_removed_after_it_fired() -> None:
    jobs = MemoryJobStore()
    jobs.put(job(one_time=True))
    scheduler, _ = service({}, jobs=jobs)
    assert fire(scheduler) == {"status": "sent"}
    assert jobs.get(111, "ab12cd34") is None
