"""Scheduled jobs: their records in DynamoDB and their schedules in EventBridge Scheduler.

A job belongs to the chat that created it (`pk` = `chat#<id>`), so a chat can only list or
remove its own. Each job has one schedule in the stack's schedule group, named after the job,
whose input names the job; the scheduler function looks the job up when it fires, so a job
removed in the meantime fires into nothing. Scheduler delivers at least once: `claim_firing`
lets exactly one delivery per scheduled time through. A reminder too long for one Telegram
message records each part Telegram accepted (`record_firing_part`), so that Scheduler's retry of
a firing that failed half-way sends only the parts not yet accepted.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_scheduler import EventBridgeSchedulerClient

logger = logging.getLogger(__name__)

JobKind = Literal["reminder", "task"]
OWNER_KEY = {"pk": {"S": "owner"}, "sk": {"S": "latest-private-chat"}}
SUBAGENT_RECORD_SECONDS = 86_400


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
    last_run: str | None = None
    last_status: str | None = None

    @property
    def schedule_name(self) -> str:
        return f"nanobot-{self.job_id}"


def _key(chat_id: int, job_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"chat#{chat_id}"}, "sk": {"S": f"job#{job_id}"}}


class JobStore:
    def __init__(self, table: str, dynamodb: DynamoDBClient) -> None:
        self._table = table
        self._dynamodb = dynamodb

    def put(self, job: CronJob) -> None:
        self._dynamodb.put_item(
            TableName=self._table,
            Item={**_key(job.chat_id, job.job_id), "job": {"S": json.dumps(asdict(job))}},
            ConditionExpression="attribute_not_exists(sk)",
        )

    def get(self, chat_id: int, job_id: str) -> CronJob | None:
        item = self._dynamodb.get_item(
            TableName=self._table, Key=_key(chat_id, job_id), ConsistentRead=True
        ).get("Item")
        return _job(item) if item else None

    def for_chat(self, chat_id: int) -> list[CronJob]:
        jobs: list[CronJob] = []
        arguments: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :job)",
            "ExpressionAttributeValues": {":pk": {"S": f"chat#{chat_id}"}, ":job": {"S": "job#"}},
        }
        while True:
            response = self._dynamodb.query(**arguments)
            jobs += [_job(item) for item in response["Items"]]
            if "LastEvaluatedKey" not in response:
                return sorted(jobs, key=lambda job: job.created_at)
            arguments["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def all_jobs(self) -> list[CronJob]:
        """Every chat's jobs (for the operator's CLI; the bot itself only lists per chat)."""
        jobs: list[CronJob] = []
        arguments: dict[str, Any] = {
            "TableName": self._table,
            "FilterExpression": "begins_with(sk, :job)",
            "ExpressionAttributeValues": {":job": {"S": "job#"}},
        }
        while True:
            response = self._dynamodb.scan(**arguments)
            jobs += [_job(item) for item in response["Items"]]
            if "LastEvaluatedKey" not in response:
                return sorted(jobs, key=lambda job: (job.chat_id, job.created_at))
            arguments["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def delete(self, chat_id: int, job_id: str) -> bool:
        response = self._dynamodb.delete_item(
            TableName=self._table, Key=_key(chat_id, job_id), ReturnValues="ALL_OLD"
        )
        return "Attributes" in response

    def claim_firing(self, chat_id: int, job_id: str, scheduled_time: str) -> int | None:
        """Record that the firing for `scheduled_time` is being handled. None if it already was
        (a duplicate delivery) or if the job no longer exists; otherwise how many parts of its
        message an earlier, failed attempt of this firing delivered (usually 0)."""
        try:
            old = self._dynamodb.update_item(
                TableName=self._table,
                Key=_key(chat_id, job_id),
                UpdateExpression="SET last_fired = :time",
                ConditionExpression="attribute_exists(sk) AND "
                "(attribute_not_exists(last_fired) OR last_fired <> :time)",
                ExpressionAttributeValues={":time": {"S": scheduled_time}},
                ReturnValues="ALL_OLD",
            ).get("Attributes", {})
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return None
            raise
        time, _, parts = old.get("firing_parts", {}).get("S", "").rpartition("#")
        return int(parts) if time == scheduled_time else 0

    def record_firing_part(self, chat_id: int, job_id: str, scheduled_time: str, part: int) -> None:
        """Record that Telegram accepted `part` (from 1) of the message of this firing."""
        self._dynamodb.update_item(
            TableName=self._table,
            Key=_key(chat_id, job_id),
            UpdateExpression="SET firing_parts = :parts",
            ConditionExpression="last_fired = :time",
            ExpressionAttributeValues={
                ":parts": {"S": f"{scheduled_time}#{part}"},
                ":time": {"S": scheduled_time},
            },
        )

    def release_firing(self, chat_id: int, job_id: str, scheduled_time: str) -> None:
        """Undo a claim whose work failed, so Scheduler's retry of this firing can run it."""
        try:
            self._dynamodb.update_item(
                TableName=self._table,
                Key=_key(chat_id, job_id),
                UpdateExpression="REMOVE last_fired",
                ConditionExpression="last_fired = :time",
                ExpressionAttributeValues={":time": {"S": scheduled_time}},
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise

    def record_run(self, job: CronJob, *, at: str, status: str) -> None:
        updated = CronJob(**{**asdict(job), "last_run": at, "last_status": status})
        try:
            self._dynamodb.update_item(
                TableName=self._table,
                Key=_key(job.chat_id, job.job_id),
                UpdateExpression="SET job = :job",
                ConditionExpression="attribute_exists(sk)",
                ExpressionAttributeValues={":job": {"S": json.dumps(asdict(updated))}},
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise  # else: removed while running; nothing to record

    # -- background tasks (subagents): counted per chat, so a chat cannot start too many ----

    def start_subagent(self, chat_id: int, subagent_id: str, *, now: int) -> None:
        self._dynamodb.put_item(
            TableName=self._table,
            Item={
                "pk": {"S": f"chat#{chat_id}"},
                "sk": {"S": f"subagent#{subagent_id}"},
                # A task that died without reporting stops counting after a day.
                "expires_at": {"N": str(now + SUBAGENT_RECORD_SECONDS)},
            },
        )

    def finish_subagent(self, chat_id: int, subagent_id: str) -> None:
        self._dynamodb.delete_item(
            TableName=self._table,
            Key={"pk": {"S": f"chat#{chat_id}"}, "sk": {"S": f"subagent#{subagent_id}"}},
        )

    def running_subagents(self, chat_id: int, *, now: int) -> int:
        response = self._dynamodb.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            FilterExpression="expires_at > :now",  # TTL deletion can lag by hours
            ExpressionAttributeValues={
                ":pk": {"S": f"chat#{chat_id}"},
                ":prefix": {"S": "subagent#"},
                ":now": {"N": str(now)},
            },
            Select="COUNT",
        )
        return int(response["Count"])

    def remember_private_chat(self, chat_id: int) -> None:
        """The owner's most recent private chat: where the heartbeat reports by default."""
        self._dynamodb.put_item(
            TableName=self._table, Item={**OWNER_KEY, "chat_id": {"N": str(chat_id)}}
        )

    def latest_private_chat(self) -> int | None:
        item = self._dynamodb.get_item(TableName=self._table, Key=OWNER_KEY).get("Item")
        return int(item["chat_id"]["N"]) if item else None


def _job(item: dict[str, Any]) -> CronJob:
    return CronJob(**json.loads(item["job"]["S"]))


class ScheduleClient:
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
        self._scheduler.create_schedule(**arguments)

    def delete(self, job: CronJob) -> None:
        try:
            self._scheduler.delete_schedule(Name=job.schedule_name, GroupName=self._group)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise  # else: a one-time schedule already deleted itself
