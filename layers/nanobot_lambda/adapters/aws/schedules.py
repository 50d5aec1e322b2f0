"""The jobs' schedules in the stack's EventBridge Scheduler group: one per job, named after
it, whose input names the job for the scheduler function."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from nanobot_lambda.adapters.aws.errors import aws_errors, error_code
from nanobot_lambda.core.cron import CronJob

if TYPE_CHECKING:
    from mypy_boto3_scheduler import EventBridgeSchedulerClient


class EventBridgeSchedules:
    """The jobs' schedules in the stack's EventBridge Scheduler group."""

    def __init__(
        self,
        scheduler: EventBridgeSchedulerClient,
        *,
        group: str,
        target_arn: str,
        role_arn: str,
    ) -> None:
        self._scheduler = scheduler
        self._group = group
        self._target_arn = target_arn
        self._role_arn = role_arn

    @aws_errors
    def create(self, job: CronJob) -> None:
        schedule_input = {
            "kind": "cron",
            "chat_id": job.chat_id,
            "job_id": job.job_id,
            "scheduled_time": "<aws.scheduler.scheduled-time>",
        }
        arguments: dict[str, Any] = {
            "Name": job.schedule_name,
            "GroupName": self._group,
            "ScheduleExpression": job.expression,
            "ScheduleExpressionTimezone": job.timezone,
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "Target": {
                "Arn": self._target_arn,
                "RoleArn": self._role_arn,
                "Input": json.dumps(schedule_input),
                "RetryPolicy": {"MaximumRetryAttempts": 3, "MaximumEventAgeInSeconds": 3600},
            },
            "Description": f"{job.kind}: {job.name}"[:512],
        }
        if job.one_time:
            arguments["ActionAfterCompletion"] = "DELETE"
        if job.starts_at:
            arguments["StartDate"] = datetime.fromisoformat(job.starts_at)
        try:
            self._scheduler.create_schedule(**arguments)
        except ClientError as error:
            if error_code(error) != "ConflictException":
                raise  # else: it exists, made for this job by an earlier run of the same call

    @aws_errors
    def delete(self, job: CronJob) -> None:
        try:
            self._scheduler.delete_schedule(Name=job.schedule_name, GroupName=self._group)
        except ClientError as error:
            if error_code(error) != "ResourceNotFoundException":
                raise  # else: a one-time schedule already deleted itself


class ApprovalDeadlineSchedules:
    """One one-time schedule per approval asked for (`approval-<id>`), at its deadline, whose
    input names the approval for the scheduler function (which queues its "timed out" resume
    unless it was decided); it deletes itself after firing."""

    def __init__(
        self,
        scheduler: EventBridgeSchedulerClient,
        *,
        group: str,
        target_arn: str,
        role_arn: str,
    ) -> None:
        self._scheduler = scheduler
        self._group = group
        self._target_arn = target_arn
        self._role_arn = role_arn

    @aws_errors
    def set(self, approval_id: str, at: datetime) -> None:
        moment = at.astimezone(UTC).replace(microsecond=0, tzinfo=None).isoformat()
        try:
            self._scheduler.create_schedule(
                Name=f"approval-{approval_id}"[:64],
                GroupName=self._group,
                ScheduleExpression=f"at({moment})",
                ScheduleExpressionTimezone="UTC",
                FlexibleTimeWindow={"Mode": "OFF"},
                Target={
                    "Arn": self._target_arn,
                    "RoleArn": self._role_arn,
                    "Input": json.dumps({"kind": "approval_timeout", "approval_id": approval_id}),
                    "RetryPolicy": {"MaximumRetryAttempts": 3, "MaximumEventAgeInSeconds": 3600},
                },
                ActionAfterCompletion="DELETE",
                Description="an approval's deadline",
            )
        except ClientError as error:
            if error_code(error) != "ConflictException":
                raise  # else: made by an earlier run of the same turn
