"""Schedules: a chat's cron jobs and reminders with their next run, to pause, resume and delete;
and, in the owner's scope, the heartbeat, to pause and resume (the owner's alone).

Each change is the cron tool's own (core/cron.py: `remove_job`, `pause_job`, `resume_job`), on
the same job store and EventBridge Scheduler group: a paused job has no schedule and is marked
paused (a firing already on its way is skipped by the scheduler function); resuming makes its
schedule again, from its next firing. A job is looked up in the chat the request's scope is
(a person can neither see nor touch another chat's jobs).

The heartbeat's schedule is the template's (CloudFormation's: a change made here would drift
from it), so pausing it is a flag in the job store (`JobStore.set_heartbeat_paused`) that the
scheduler function reads as the heartbeat fires: a paused heartbeat's firing does nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from nanobot_lambda.core.cron import CronJob, next_firing, pause_job, remove_job, resume_job
from nanobot_lambda.core.heartbeat import HEARTBEAT_FILE, heartbeat_tasks
from nanobot_lambda.core.schedules import ScheduleError, next_run
from nanobot_lambda.core.scopes import OWNER
from nanobot_lambda.core.workspace import NotText
from nanobot_lambda.functions.console.auth import ChatScope
from nanobot_lambda.functions.console.ports import ConsoleError, ConsolePorts
from nanobot_lambda.functions.console.requests import text_field


class ScheduleViews:
    def __init__(self, ports: ConsolePorts, *, heartbeat: str | None, timezone: str) -> None:
        self._ports = ports
        self._heartbeat = heartbeat  # its schedule expression (None: not known here)
        self._timezone = timezone

    def schedules(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        now = self._ports.clock()
        answer: dict[str, Any] = {
            "jobs": [_job(job, now) for job in self._ports.jobs.for_chat(target.chat_id)]
        }
        if target.scope.is_owner:
            answer["heartbeat"] = self._heartbeat_state(now)
        return answer

    def _heartbeat_state(self, now: datetime) -> dict[str, Any]:
        file = self._ports.workspace(OWNER).read(HEARTBEAT_FILE, fresh=True)
        try:
            tasks = heartbeat_tasks(file.text if file else None)
        except NotText:
            tasks = None
        upcoming = None
        if self._heartbeat:
            try:
                upcoming = next_run((self._heartbeat, self._timezone), now)
            except ScheduleError:
                upcoming = None
        paused = self._ports.jobs.heartbeat_paused()
        return {
            "expression": self._heartbeat,
            "paused": paused,
            "next_run": upcoming.isoformat(timespec="minutes") if upcoming and not paused else None,
            "tasks": tasks or "",
        }

    def pause_heartbeat(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        self._ports.jobs.set_heartbeat_paused(True)
        return {"paused": True}

    def resume_heartbeat(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        self._ports.jobs.set_heartbeat_paused(False)
        return {"paused": False}

    def _chosen(self, target: ChatScope, body: dict[str, Any]) -> CronJob:
        job_id = text_field(body, "job_id", 100)
        job = self._ports.jobs.get(target.chat_id, job_id)
        if job is None:
            raise ConsoleError(404, f"no job {job_id} in this chat")
        return job

    def pause(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        job = self._chosen(target, body)
        if not job.paused:
            pause_job(self._ports.jobs, self._ports.schedules, job)
        return {"job_id": job.job_id, "paused": True}

    def resume(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        job = self._chosen(target, body)
        if job.paused and not resume_job(
            self._ports.jobs, self._ports.schedules, job, self._ports.clock()
        ):
            raise ConsoleError(409, "its time passed while it was paused: delete it")
        return {"job_id": job.job_id, "paused": False}

    def delete(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        job = self._chosen(target, body)
        remove_job(self._ports.jobs, self._ports.schedules, job)
        return {"job_id": job.job_id, "deleted": True}


def _job(job: CronJob, now: datetime) -> dict[str, Any]:
    upcoming = None if job.paused else next_firing(job, now)
    return {
        "job_id": job.job_id,
        "kind": job.kind,
        "name": job.name,
        "message": job.message,
        "description": job.description,
        "expression": job.expression,
        "quiet": job.quiet,
        "paused": job.paused,
        "one_time": job.one_time,
        "next_run": upcoming.isoformat(timespec="minutes") if upcoming else None,
        "last_run": job.last_run,
        "last_status": job.last_status,
        "thread_id": job.thread_id,
    }
