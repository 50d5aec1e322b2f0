"""The scheduler function's logic: events from EventBridge Scheduler.

- `cron`: a job of the cron tool came due. A reminder's text goes straight to its chat (no
  model call); a task is queued as an agent turn in its own session. A job removed meanwhile
  fires into nothing, and a second delivery of the same scheduled time (Scheduler delivers at
  least once) is recognised and ignored.
- `heartbeat`: reads `HEARTBEAT.md`; when it holds no task (only headings, comments and empty
  checkboxes) nothing else happens, so an idle heartbeat costs no model call. Otherwise the
  tasks are queued for agent_turn, which decides whether any is due; the report goes to
  `HEARTBEAT_CHAT_ID`, or by default to the owner's most recent private chat. While the owner
  has it paused (the console: a flag in the job store, read first) a firing does nothing: its
  schedule is the template's, which CloudFormation owns, so it is not touched.
- `approval_timeout`: an approval's deadline passed (functions/agent_turn/approvals.py): its
  turn's resume is queued with the decision "timeout", which denies the waiting call and tells
  the model; a turn no longer waiting on it (decided, finished) does nothing with it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nanobot_lambda.core import telemetry, texts
from nanobot_lambda.core.approvals import ApprovalBook
from nanobot_lambda.core.cron import CronJob
from nanobot_lambda.core.heartbeat import HEARTBEAT_FILE, HEARTBEAT_GROUP, heartbeat_tasks
from nanobot_lambda.core.jobs import ApprovalJob, CronTaskJob, HeartbeatJob, parse_start_job
from nanobot_lambda.core.ports import Channel, JobStore, MetricsPort, TurnQueue, Workspace
from nanobot_lambda.core.workspace import NotText

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class SchedulerPorts:
    """What the scheduler function works with."""

    workspace: Workspace
    queue: TurnQueue
    jobs: JobStore
    channel: Channel
    metrics: MetricsPort
    approvals: ApprovalBook | None = None  # approvals asked for, read at their deadline


class SchedulerService:
    def __init__(
        self,
        ports: SchedulerPorts,
        *,
        heartbeat_chat_id: int | None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._workspace = ports.workspace
        self._queue = ports.queue
        self._jobs = ports.jobs
        self._channel = ports.channel
        self._metrics = ports.metrics
        self._approvals = ports.approvals
        self._heartbeat_chat_id = heartbeat_chat_id
        self._clock = clock

    def handle(self, event: Mapping[str, Any]) -> dict[str, str]:
        kind = event.get("kind")
        if kind not in ("heartbeat", "cron", "approval_timeout"):
            logger.warning("scheduler event of unknown kind %r ignored", kind)
            return {"status": "ignored"}
        with telemetry.span("scheduled", kind=str(kind)):  # X-Ray, when traced
            if kind == "heartbeat":
                return self.heartbeat(event.get("scheduled_time"))
            if kind == "approval_timeout":
                return self.approval_timeout(str(event.get("approval_id") or ""))
            return self.cron(event)

    def approval_timeout(self, approval_id: str) -> dict[str, str]:
        """Queue the "timed out" resume of the turn waiting on the approval, in its queue
        group (a second delivery of the schedule is dropped by the deduplication id, and the
        turn's journal keeps any later one from doing anything)."""
        approval = self._approvals.get(approval_id) if self._approvals else None
        if approval is None:
            logger.warning("approval deadline of an unknown approval ignored")
            return {"status": "ignored"}
        job = ApprovalJob(
            job=parse_start_job(approval.job),
            approval_id=approval_id,
            decision="timeout",
            decided_at=self._clock().astimezone(UTC).isoformat(timespec="seconds"),
        )
        dedup = _dedup_id(f"approval-{approval_id}-timeout")
        self._queue.enqueue(job, group=approval.session_key, dedup_id=dedup)
        logger.info("approval deadline: its turn's resume queued")
        return {"status": "queued"}

    def cron(self, event: Mapping[str, Any]) -> dict[str, str]:
        chat_id, job_id = int(event["chat_id"]), str(event["job_id"])
        scheduled = str(event.get("scheduled_time") or self._clock().isoformat(timespec="seconds"))
        log = {"job_id": job_id, "chat_id": chat_id}
        job = self._jobs.get(chat_id, job_id)
        if job is None:
            logger.info("job fired after it was removed: nothing to do", extra=log)
            return {"status": "removed"}
        if job.paused:  # paused in the console after this firing was on its way
            logger.info("job fired while paused: nothing to do", extra=log)
            return {"status": "paused"}
        parts_sent = self._jobs.claim_firing(chat_id, job_id, scheduled)
        if parts_sent is None:
            logger.info("duplicate delivery of a job firing ignored", extra=log)
            telemetry.duplicate_suppressed(self._metrics)
            return {"status": "duplicate"}
        try:
            if job.kind == "reminder":
                self._remind(job, scheduled, parts_sent)
                status = "sent"
            else:
                task = CronTaskJob(
                    job_id=job.job_id,
                    chat_id=chat_id,
                    thread_id=job.thread_id,
                    name=job.name,
                    message=job.message,
                    fired_at=scheduled,
                    quiet=job.quiet,
                )
                # Its own message group: a long task does not hold up the chat.
                self._queue.enqueue(
                    task, group=f"cron:{job_id}", dedup_id=_dedup_id(f"cron-{job_id}-{scheduled}")
                )
                status = "queued"
        except Exception:
            self._jobs.release_firing(chat_id, job_id, scheduled)  # Scheduler retries it
            raise
        if job.one_time:
            self._jobs.delete(chat_id, job_id)  # its schedule deletes itself (DELETE action)
        else:
            self._jobs.record_run(job, at=scheduled, status=status)
        logger.info("job fired", extra={**log, "kind": job.kind, "status": status})
        return {"status": status}

    def _remind(self, job: CronJob, scheduled: str, parts_sent: int) -> None:
        """Send the reminder's text, from the first part an earlier attempt did not deliver.
        A part is recorded before the next one is sent; the last is covered by the claim."""
        parts = self._channel.message_parts(texts.render("reminder", message=job.message))
        for part, html in enumerate(parts, start=1):
            if part <= parts_sent:
                continue
            self._channel.send_part(job.chat_id, html, thread_id=job.thread_id)
            if part < len(parts):
                self._jobs.record_firing_part(job.chat_id, job.job_id, scheduled, part)

    def heartbeat(self, scheduled_time: object = None) -> dict[str, str]:
        if self._jobs.heartbeat_paused():
            logger.info("heartbeat paused (in the console): nothing to do")
            return {"status": "paused"}
        file = self._workspace.read(HEARTBEAT_FILE)
        try:
            tasks = heartbeat_tasks(file.text if file else None)
        except NotText:
            logger.warning("%s is not text; heartbeat skipped", HEARTBEAT_FILE)
            return {"status": "idle"}
        if tasks is None:
            logger.info("heartbeat: no tasks, no model call")
            return {"status": "idle"}
        chat_id = self._heartbeat_chat_id or self._jobs.latest_private_chat()
        if chat_id is None:
            logger.warning("heartbeat has tasks but no chat to report to yet; skipped")
            return {"status": "no_target"}
        # Scheduler delivers at least once: the scheduled time makes a re-delivery a duplicate.
        fired_at = str(scheduled_time or self._clock().isoformat(timespec="minutes"))
        job = HeartbeatJob(chat_id=chat_id, tasks=tasks, fired_at=fired_at)
        self._queue.enqueue(job, group=HEARTBEAT_GROUP, dedup_id=_dedup_id(f"heartbeat-{fired_at}"))
        logger.info("heartbeat: tasks queued")
        return {"status": "queued"}


def _dedup_id(text: str) -> str:
    """An SQS deduplication id (at most 128 of these characters)."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", text)[:128]
