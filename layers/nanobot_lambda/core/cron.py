"""Scheduled jobs (the cron tool's reminders and tasks), as the core sees them.

A job belongs to the chat that created it, so a chat can only list or remove its own. Each job
has one schedule whose input names the job; the scheduler function looks the job up when it
fires, so a job removed in the meantime fires into nothing. Schedules fire at least once: the
job store's `claim_firing` lets exactly one delivery per scheduled time through, and a reminder
too long for one message records each part the channel accepted (`record_firing_part`), so that
the retry of a firing that failed half-way sends only the parts not yet accepted.
(`adapters/aws/jobs.py` keeps jobs in DynamoDB, `adapters/aws/schedules.py` their schedules in
EventBridge Scheduler.)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal, Protocol

from nanobot_lambda.core.schedules import next_run
from nanobot_lambda.core.skill_requirements import RequirementsSeen

JobKind = Literal["reminder", "task"]


@dataclass(frozen=True)
class CronJob:
    job_id: str
    chat_id: int
    kind: JobKind
    message: str
    name: str
    expression: str
    timezone: str
    description: str
    one_time: bool
    created_at: str  # ISO 8601, UTC
    thread_id: int | None = None
    # rate() jobs: the first firing (creation + one interval). Without a StartDate, Scheduler
    # fires a rate schedule the moment it is created.
    starts_at: str | None = None
    # A task that reports only when there is something new or needing attention (the
    # heartbeat's "nothing to report" answer is not sent). Records from before it: not quiet.
    quiet: bool = False
    last_run: str | None = None
    last_status: str | None = None
    # Paused in the console: its schedule is deleted until it is resumed, and a firing that
    # was on its way when it was paused is skipped.
    paused: bool = False

    @property
    def schedule_name(self) -> str:
        return f"nanobot-{self.job_id}"


class JobStore(Protocol):
    """Scheduled jobs, background-task records, the owner's latest private chat, whether the
    heartbeat is paused, and what agent_turn checks skills' requirements against."""

    def put(self, job: CronJob) -> None:
        """Store a new job; StorageError if the chat has a job of that id already."""
        ...

    def get(self, chat_id: int, job_id: str) -> CronJob | None: ...

    def for_chat(self, chat_id: int) -> list[CronJob]: ...

    def all_jobs(self) -> list[CronJob]:
        """Every chat's jobs (for the operator; the bot itself only lists per chat)."""
        ...

    def delete(self, chat_id: int, job_id: str) -> bool: ...

    def set_paused(self, chat_id: int, job_id: str, paused: bool) -> bool:
        """Mark the job paused or not; False when there is no such job."""
        ...

    def claim_firing(self, chat_id: int, job_id: str, scheduled_time: str) -> int | None:
        """None if this firing was handled already or the job is gone; otherwise how many
        parts of its message an earlier, failed attempt of this firing delivered."""
        ...

    def record_firing_part(self, chat_id: int, job_id: str, scheduled_time: str, part: int) -> None:
        """Record that the channel accepted `part` of this firing's message. Raises
        StorageError when this firing is not the one claimed."""
        ...

    def release_firing(self, chat_id: int, job_id: str, scheduled_time: str) -> None:
        """Undo a claim whose work failed, so that the retry of this firing runs it."""
        ...

    def record_run(self, job: CronJob, *, at: str, status: str) -> None: ...

    def start_subagent(self, chat_id: int, subagent_id: str, *, now: int) -> None:
        """Count a background task of the chat as running; one that never finishes stops
        counting a day after `now` (a task that died without reporting)."""
        ...

    def finish_subagent(self, chat_id: int, subagent_id: str) -> None: ...

    def running_subagents(self, chat_id: int, *, now: int) -> int: ...

    def remember_private_chat(self, chat_id: int) -> None: ...

    def latest_private_chat(self) -> int | None: ...

    def heartbeat_paused(self) -> bool:
        """Whether the owner paused the heartbeat (in the console): its firings then do
        nothing. Its schedule is the template's and stays as it is."""
        ...

    def set_heartbeat_paused(self, paused: bool) -> None: ...

    def record_requirements_seen(self, seen: RequirementsSeen) -> None:
        """Keep what an agent_turn container checks skills' requirements against (the last
        recorded stands), for the console (core/skill_requirements.py)."""
        ...

    def requirements_seen(self) -> RequirementsSeen | None: ...


class Schedules(Protocol):
    """The jobs' schedules (EventBridge Scheduler), which fire the scheduler function."""

    def create(self, job: CronJob) -> None:
        """Create the job's schedule; one that exists already (made for this job) is not an
        error."""
        ...

    def delete(self, job: CronJob) -> None:
        """Delete the job's schedule; one already gone is not an error."""
        ...


# -- what the cron tool and the console do to a job ------------------------------------------


def remove_job(store: JobStore, schedules: Schedules, job: CronJob) -> None:
    """Delete the job's schedule, then the job (a firing in between finds no job)."""
    schedules.delete(job)
    store.delete(job.chat_id, job.job_id)


def pause_job(store: JobStore, schedules: Schedules, job: CronJob) -> None:
    """Mark the job paused first (a firing already on its way is then skipped), then delete
    its schedule."""
    store.set_paused(job.chat_id, job.job_id, True)
    schedules.delete(job)


def next_firing(job: CronJob, now: datetime) -> datetime | None:
    """The job's next firing after `now` (None: a one-time job whose time has passed)."""
    anchor = datetime.fromisoformat(job.starts_at or job.created_at)
    return next_run((job.expression, job.timezone), now, anchor=anchor)


def resume_job(store: JobStore, schedules: Schedules, job: CronJob, now: datetime) -> bool:
    """Make the job's schedule again, then mark it not paused; False (nothing done) for a
    one-time job whose time passed while it was paused. A rate job starts at its next firing
    on its own grid: Scheduler would fire a rate schedule the moment it is made otherwise."""
    upcoming = next_firing(job, now)
    if upcoming is None:
        return False
    if job.starts_at is not None:
        job = replace(job, starts_at=upcoming.isoformat(timespec="seconds"))
    schedules.create(job)
    store.set_paused(job.chat_id, job.job_id, False)
    return True
