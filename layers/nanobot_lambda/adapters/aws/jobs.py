"""Scheduled jobs, background-task records and the owner's chat, in the jobs table.

Items: `chat#<id>` / `job#<id>` (the job as JSON, plus `last_fired` and `firing_parts` for the
firing being delivered; the JSON holds `quiet` only for a quiet task, and a record without it is
not quiet), `chat#<id>` / `subagent#<id>` (a running background task, expiring
after a day), `owner` / `latest-private-chat`, `owner` / `heartbeat` (`paused`: the console
paused the heartbeat), and `owner` / `skill-requirements` (what the latest agent_turn container
checks skills' requirements against: `programs` and `env_names`, each a newline-separated list,
`programs` absent without a sandbox; `recorded_at`).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from nanobot_lambda.adapters.aws.errors import CONDITION_FAILED, aws_errors, error_code
from nanobot_lambda.adapters.aws.numbers import number_value
from nanobot_lambda.core.cron import CronJob
from nanobot_lambda.core.skill_requirements import RequirementsSeen

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

OWNER_KEY = {"pk": {"S": "owner"}, "sk": {"S": "latest-private-chat"}}
HEARTBEAT_KEY = {"pk": {"S": "owner"}, "sk": {"S": "heartbeat"}}
REQUIREMENTS_KEY = {"pk": {"S": "owner"}, "sk": {"S": "skill-requirements"}}
SUBAGENT_RECORD_SECONDS = 86_400


def _key(chat_id: int, job_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"chat#{chat_id}"}, "sk": {"S": f"job#{job_id}"}}


class DynamoJobStore:
    def __init__(self, table: str, dynamodb: DynamoDBClient) -> None:
        self._table = table
        self._dynamodb = dynamodb

    @aws_errors
    def put(self, job: CronJob) -> None:
        self._dynamodb.put_item(
            TableName=self._table,
            Item={**_key(job.chat_id, job.job_id), "job": {"S": _stored(job)}},
            ConditionExpression="attribute_not_exists(sk)",
        )

    @aws_errors
    def get(self, chat_id: int, job_id: str) -> CronJob | None:
        item = self._dynamodb.get_item(
            TableName=self._table, Key=_key(chat_id, job_id), ConsistentRead=True
        ).get("Item")
        return _job(item) if item else None

    @aws_errors
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

    @aws_errors
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

    @aws_errors
    def delete(self, chat_id: int, job_id: str) -> bool:
        response = self._dynamodb.delete_item(
            TableName=self._table, Key=_key(chat_id, job_id), ReturnValues="ALL_OLD"
        )
        return "Attributes" in response

    @aws_errors
    def set_paused(self, chat_id: int, job_id: str, paused: bool) -> bool:
        """`paused` beside the job's JSON, which the firings' `record_run` rewrites."""
        try:
            self._dynamodb.update_item(
                TableName=self._table,
                Key=_key(chat_id, job_id),
                UpdateExpression="SET paused = :paused" if paused else "REMOVE paused",
                ConditionExpression="attribute_exists(sk)",
                **({"ExpressionAttributeValues": {":paused": {"BOOL": True}}} if paused else {}),  # type: ignore[arg-type]
            )
        except ClientError as error:
            if error_code(error) == CONDITION_FAILED:
                return False
            raise
        return True

    @aws_errors
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
            if error_code(error) == CONDITION_FAILED:
                return None
            raise
        time, _, parts = old.get("firing_parts", {}).get("S", "").rpartition("#")
        return int(parts) if time == scheduled_time else 0

    @aws_errors
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

    @aws_errors
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
            if error_code(error) != CONDITION_FAILED:
                raise

    @aws_errors
    def record_run(self, job: CronJob, *, at: str, status: str) -> None:
        updated = CronJob(**{**asdict(job), "last_run": at, "last_status": status})
        try:
            self._dynamodb.update_item(
                TableName=self._table,
                Key=_key(job.chat_id, job.job_id),
                UpdateExpression="SET job = :job",
                ConditionExpression="attribute_exists(sk)",
                ExpressionAttributeValues={":job": {"S": _stored(updated)}},
            )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise  # else: removed while running; nothing to record

    # -- background tasks (subagents): counted per chat, so a chat cannot start too many ----

    @aws_errors
    def start_subagent(self, chat_id: int, subagent_id: str, *, now: int) -> None:
        self._dynamodb.put_item(
            TableName=self._table,
            Item={
                "pk": {"S": f"chat#{chat_id}"},
                "sk": {"S": f"subagent#{subagent_id}"},
                # A task that died without reporting stops counting after a day.
                "expires_at": number_value(now + SUBAGENT_RECORD_SECONDS),
            },
        )

    @aws_errors
    def finish_subagent(self, chat_id: int, subagent_id: str) -> None:
        self._dynamodb.delete_item(
            TableName=self._table,
            Key={"pk": {"S": f"chat#{chat_id}"}, "sk": {"S": f"subagent#{subagent_id}"}},
        )

    @aws_errors
    def running_subagents(self, chat_id: int, *, now: int) -> int:
        response = self._dynamodb.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            FilterExpression="expires_at > :now",  # TTL deletion can lag by hours
            ExpressionAttributeValues={
                ":pk": {"S": f"chat#{chat_id}"},
                ":prefix": {"S": "subagent#"},
                ":now": number_value(now),
            },
            Select="COUNT",
        )
        return int(response["Count"])

    @aws_errors
    def remember_private_chat(self, chat_id: int) -> None:
        """The owner's most recent private chat: where the heartbeat reports by default."""
        self._dynamodb.put_item(
            TableName=self._table, Item={**OWNER_KEY, "chat_id": number_value(chat_id)}
        )

    @aws_errors
    def latest_private_chat(self) -> int | None:
        item = self._dynamodb.get_item(TableName=self._table, Key=OWNER_KEY).get("Item")
        return int(item["chat_id"]["N"]) if item else None

    @aws_errors
    def heartbeat_paused(self) -> bool:
        item = self._dynamodb.get_item(
            TableName=self._table, Key=HEARTBEAT_KEY, ConsistentRead=True
        ).get("Item")
        return bool(item and item.get("paused", {}).get("BOOL", False))

    @aws_errors
    def set_heartbeat_paused(self, paused: bool) -> None:
        self._dynamodb.update_item(
            TableName=self._table,
            Key=HEARTBEAT_KEY,
            UpdateExpression="SET paused = :paused",
            ExpressionAttributeValues={":paused": {"BOOL": paused}},
        )

    @aws_errors
    def record_requirements_seen(self, seen: RequirementsSeen) -> None:
        item: dict[str, Any] = {
            **REQUIREMENTS_KEY,
            "env_names": {"S": "\n".join(sorted(seen.env_names))},
            "recorded_at": {"S": seen.recorded_at},
        }
        if seen.programs is not None:
            item["programs"] = {"S": "\n".join(sorted(seen.programs))}
        self._dynamodb.put_item(TableName=self._table, Item=item)

    @aws_errors
    def requirements_seen(self) -> RequirementsSeen | None:
        item = self._dynamodb.get_item(TableName=self._table, Key=REQUIREMENTS_KEY).get("Item")
        if item is None:
            return None
        programs = item["programs"]["S"] if "programs" in item else None
        return RequirementsSeen(
            programs=None if programs is None else _names(programs),
            env_names=_names(item["env_names"]["S"]),
            recorded_at=item["recorded_at"]["S"],
        )


def _names(joined: str) -> frozenset[str]:
    return frozenset(name for name in joined.split("\n") if name)


def _stored(job: CronJob) -> str:
    """The job's JSON. `quiet` is written only when set: any other job is stored as it was
    before quiet tasks existed."""
    fields = asdict(job)
    del fields["paused"]  # an attribute of its own (set_paused)
    if not job.quiet:
        del fields["quiet"]
    return json.dumps(fields)


def _job(item: dict[str, Any]) -> CronJob:
    paused = item.get("paused", {}).get("BOOL", False)
    return CronJob(**json.loads(item["job"]["S"]), paused=paused)
