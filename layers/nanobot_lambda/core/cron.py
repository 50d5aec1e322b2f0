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

from dataclasses import dataclass
from typing import Literal

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

    @property
    def schedule_name(self) -> str:
        return f"nanobot-{self.job_id}"
