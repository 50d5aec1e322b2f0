"""The JobStore port: DynamoJobStore on moto server and MemoryJobStore alike."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nanobot_lambda.core.cron import CronJob
from nanobot_lambda.core.errors import StorageError
from nanobot_lambda.core.ports import JobStore
from nanobot_lambda.core.skill_requirements import RequirementsSeen

ADA, BOB = 111111111, -1001234567890  # a person's private chat and a group
NOW = 1_800_000_000
DAY = 86_400


def job(job_id: str, chat_id: int = ADA, created_at: str = "2026-11-26T09:00:00+00:00") -> CronJob:
    return CronJob(
        job_id=job_id,
        chat_id=chat_id,
        kind="reminder",
        message="Water the plants 🌱",
        name="plants",
        expression="cron(0 9 * * ? *)",
        timezone="Europe/Lisbon",
        description="every day at 9:00",
        one_time=False,
        created_at=created_at,
    )


def test_a_job_reads_back_as_it_was_put(jobs: JobStore) -> None:
    quiet_task = replace(job("j1"), kind="task", quiet=True, thread_id=7, starts_at="2026-11-27")
    jobs.put(quiet_task)
    jobs.put(job("j2"))
    assert jobs.get(ADA, "j1") == quiet_task
    assert jobs.get(ADA, "j2") == job("j2")
    assert jobs.get(BOB, "j1") is None  # a chat sees only its own jobs
    assert jobs.get(ADA, "nope") is None


def test_a_job_id_is_put_once(jobs: JobStore) -> None:
    jobs.put(job("j1"))
    with pytest.raises(StorageError):
        jobs.put(replace(job("j1"), message="another"))
    assert jobs.get(ADA, "j1") == job("j1")


def test_a_job_is_paused_and_resumed_and_a_run_recorded_meanwhile_keeps_it_paused(
    jobs: JobStore,
) -> None:
    jobs.put(job("j1"))
    read = jobs.get(ADA, "j1")
    assert read is not None and not read.paused
    assert jobs.set_paused(ADA, "j1", True)
    jobs.record_run(read, at="2026-11-27T09:00:00+00:00", status="sent")  # a firing in flight
    paused = jobs.get(ADA, "j1")
    assert paused is not None and paused.paused and paused.last_status == "sent"
    assert jobs.for_chat(ADA) == [paused]
    assert jobs.set_paused(ADA, "j1", False)
    assert jobs.get(ADA, "j1") == replace(paused, paused=False)
    assert not jobs.set_paused(ADA, "nope", True)  # no such job: nothing made
    assert jobs.get(ADA, "nope") is None


def test_a_chat_s_jobs_by_creation_and_every_chat_s_for_the_operator(jobs: JobStore) -> None:
    later, earlier = (
        job("a", created_at="2026-11-26T10:00"),
        job("b", created_at="2026-11-26T08:00"),
    )
    group = job("c", chat_id=BOB)
    for each in (later, earlier, group):
        jobs.put(each)
    assert jobs.for_chat(ADA) == [earlier, later]
    assert jobs.for_chat(BOB) == [group]
    assert jobs.for_chat(222) == []
    assert jobs.all_jobs() == [group, earlier, later]  # by chat id, then creation


def test_delete_says_whether_there_was_a_job(jobs: JobStore) -> None:
    jobs.put(job("j1"))
    assert jobs.delete(ADA, "j1")
    assert not jobs.delete(ADA, "j1")
    assert jobs.get(ADA, "j1") is None and jobs.for_chat(ADA) == []


def test_a_firing_is_claimed_once_and_a_new_one_again(jobs: JobStore) -> None:
    jobs.put(job("j1"))
    assert jobs.claim_firing(ADA, "j1", "2026-11-26T09:00:00Z") == 0
    assert jobs.claim_firing(ADA, "j1", "2026-11-26T09:00:00Z") is None  # a duplicate delivery
    assert jobs.claim_firing(ADA, "j1", "2026-11-27T09:00:00Z") == 0  # the next day's
    assert jobs.claim_firing(ADA, "gone", "2026-11-26T09:00:00Z") is None  # no such job


def test_a_released_firing_is_claimed_again_with_the_parts_already_sent(jobs: JobStore) -> None:
    jobs.put(job("j1"))
    at = "2026-11-26T09:00:00Z"
    assert jobs.claim_firing(ADA, "j1", at) == 0
    jobs.record_firing_part(ADA, "j1", at, 1)
    jobs.record_firing_part(ADA, "j1", at, 2)
    jobs.release_firing(ADA, "j1", at)  # the rest failed: Scheduler retries the firing
    assert jobs.claim_firing(ADA, "j1", at) == 2
    jobs.release_firing(ADA, "j1", "2026-11-25T09:00:00Z")  # not the claimed one: no change
    assert jobs.claim_firing(ADA, "j1", at) is None
    assert jobs.claim_firing(ADA, "j1", "2026-11-27T09:00:00Z") == 0  # parts are per firing


def test_a_part_of_a_firing_not_claimed_is_refused(jobs: JobStore) -> None:
    jobs.put(job("j1"))
    with pytest.raises(StorageError):
        jobs.record_firing_part(ADA, "j1", "2026-11-26T09:00:00Z", 1)


def test_a_run_is_recorded_on_the_job_unless_it_was_removed(jobs: JobStore) -> None:
    jobs.put(job("j1"))
    jobs.record_run(job("j1"), at="2026-11-26T09:00:05Z", status="ok")
    assert jobs.get(ADA, "j1") == replace(
        job("j1"), last_run="2026-11-26T09:00:05Z", last_status="ok"
    )
    jobs.record_run(job("gone"), at="2026-11-26T09:00:05Z", status="ok")
    assert jobs.get(ADA, "gone") is None


def test_background_tasks_count_per_chat_until_finished(jobs: JobStore) -> None:
    jobs.start_subagent(ADA, "s1", now=NOW)
    jobs.start_subagent(ADA, "s2", now=NOW)
    jobs.start_subagent(BOB, "s3", now=NOW)
    assert jobs.running_subagents(ADA, now=NOW + 60) == 2
    jobs.finish_subagent(ADA, "s1")
    jobs.finish_subagent(ADA, "never-started")
    assert jobs.running_subagents(ADA, now=NOW + 60) == 1
    assert jobs.running_subagents(BOB, now=NOW + 60) == 1


def test_a_background_task_that_never_reported_stops_counting_after_a_day(jobs: JobStore) -> None:
    jobs.start_subagent(ADA, "died", now=NOW)
    jobs.start_subagent(ADA, "fresh", now=NOW + DAY)
    assert jobs.running_subagents(ADA, now=NOW + DAY - 1) == 2
    assert jobs.running_subagents(ADA, now=NOW + DAY + 1) == 1


def test_the_latest_private_chat_is_the_last_remembered(jobs: JobStore) -> None:
    assert jobs.latest_private_chat() is None
    jobs.remember_private_chat(ADA)
    jobs.remember_private_chat(222)
    assert jobs.latest_private_chat() == 222


def test_the_heartbeat_runs_until_paused_and_again_once_resumed(jobs: JobStore) -> None:
    assert not jobs.heartbeat_paused()  # nothing recorded: it runs
    jobs.set_heartbeat_paused(True)
    jobs.set_heartbeat_paused(True)  # pausing twice is pausing
    assert jobs.heartbeat_paused()
    jobs.put(job("j1"))
    stored = jobs.get(ADA, "j1")
    assert stored is not None and not stored.paused  # the heartbeat's pause is no job's
    jobs.remember_private_chat(ADA)
    assert jobs.latest_private_chat() == ADA and jobs.heartbeat_paused()
    jobs.set_heartbeat_paused(False)
    assert not jobs.heartbeat_paused()


def test_what_skills_are_checked_against_is_the_last_recorded(jobs: JobStore) -> None:
    assert jobs.requirements_seen() is None  # no container recorded it yet
    first = RequirementsSeen(
        frozenset({"python3", "sh", "ffmpeg"}), frozenset({"BRAVE_API_KEY", "PATH"}), "2026-11-27"
    )
    jobs.record_requirements_seen(first)
    assert jobs.requirements_seen() == first
    without_sandbox = RequirementsSeen(None, frozenset(), "2026-11-28T09:00:00+00:00")
    jobs.record_requirements_seen(without_sandbox)
    assert jobs.requirements_seen() == without_sandbox
    none_found = RequirementsSeen(frozenset(), frozenset({"PATH"}), "2026-11-29T09:00:00+00:00")
    jobs.record_requirements_seen(none_found)
    assert jobs.requirements_seen() == none_found
    assert jobs.latest_private_chat() is None and not jobs.heartbeat_paused()  # items apart
