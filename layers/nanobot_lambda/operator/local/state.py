"""What a local stack keeps between runs (`chat --state DIR`), and how other commands find a
running one (`--local`).

moto keeps everything in memory, so by default each run starts from nothing. With a state
folder, `save` writes the stack's data there when the chat ends, and `restore` puts it back
into the next run's new resources, before any function runs: the workspace bucket's objects
(memory, files, skills), the items of every DynamoDB table (sessions, journal, usage and spend,
jobs, pairings) and the schedules of the schedule group (cron jobs, reminders), each by its
logical id. The stack's name prefix is kept too, so every resource has the same name in every
run and what the data names (a queue URL in a job) stays right. Not kept: messages still queued
when the chat ended (a turn not run yet), the dead-letter queue, and SSM (the stack makes its
secrets anew each run). A schedule whose time passed while no chat ran does not fire late.

The data is one JSON file (bodies and binary attributes in base64), written to a temporary
file and renamed: a chat killed while saving leaves the previous state whole.

A running stack is announced in `local-stack.json` under the user's cache folder
($XDG_CACHE_HOME, else ~/.cache, then nanobot-lambda/): its moto endpoint, its process, the
names of its resources and its event hooks' URL (its HTTP API on 127.0.0.1). The operator
commands' `--local` reads it (`LocalStackInfo.find`); a file left by a chat that is no longer
running is refused, not used.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import boto3

from nanobot_lambda.adapters.aws.clients import CLIENT_CONFIG
from nanobot_lambda.operator.local.cfn import TemplateContext
from nanobot_lambda.operator.ops.deployment import RESOURCES, Deployment, OperatorError
from nanobot_lambda.settings import OperatorSettings

STATE_FILE = "state.json"
STATE_VERSION = 1
# Fields of get_schedule that create_schedule does not take.
_SCHEDULE_OUTPUT_ONLY = ("Arn", "CreationDate", "LastModificationDate", "ResponseMetadata")
_SCHEDULE_DATES = ("StartDate", "EndDate")


class StateError(OperatorError):
    pass


class LocalState:
    """A state folder: the data of one local stack, kept between its runs."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / STATE_FILE

    @property
    def exists(self) -> bool:
        return self.path.is_file()

    def load(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise StateError(
                f"the local state {self.path} cannot be read ({error}): move the folder away "
                "to start fresh"
            ) from None
        if data.get("version") != STATE_VERSION:
            raise StateError(
                f"the local state {self.path} is of another version ({data.get('version')}): "
                "move the folder away to start fresh"
            )
        return data

    def prefix(self) -> str | None:
        """The name prefix of the stack kept here, None for a new folder."""
        return str(self.load()["prefix"]) if self.exists else None

    def save(self, template: TemplateContext, prefix: str) -> None:
        data = {
            "version": STATE_VERSION,
            "prefix": prefix,
            "buckets": {
                logical_id: _bucket_objects(template.refs[logical_id])
                for logical_id in template.resources("AWS::S3::Bucket")
            },
            "tables": {
                logical_id: _table_items(template.refs[logical_id])
                for logical_id in template.resources("AWS::DynamoDB::Table")
            },
            "schedules": {
                logical_id: _schedules(template.refs[logical_id])
                for logical_id in template.resources("AWS::Scheduler::ScheduleGroup")
            },
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        _write_atomically(self.path, json.dumps(data))

    def restore(self, template: TemplateContext) -> None:
        """Put the kept data into the stack's resources (made, empty, with the same names)."""
        if not self.exists:
            return
        data = self.load()
        s3 = boto3.client("s3")
        for logical_id, objects in data["buckets"].items():
            for item in objects:
                s3.put_object(
                    Bucket=template.refs[logical_id],
                    Key=item["key"],
                    Body=base64.b64decode(item["body"]),
                    ContentType=item.get("content_type") or "binary/octet-stream",
                )
        dynamodb = boto3.client("dynamodb")
        for logical_id, items in data["tables"].items():
            for item in items:
                dynamodb.put_item(TableName=template.refs[logical_id], Item=_decoded(item))
        scheduler = boto3.client("scheduler")
        existing = {
            (group, schedule["Name"])
            for logical_id in data["schedules"]
            for group in [template.refs[logical_id]]
            for page in scheduler.get_paginator("list_schedules").paginate(GroupName=group)
            for schedule in page["Schedules"]
        }
        for logical_id, schedules in data["schedules"].items():
            group = template.refs[logical_id]
            for schedule in schedules:
                if (group, schedule["Name"]) in existing:  # the template's own (heartbeat)
                    continue
                for field in _SCHEDULE_DATES:
                    if field in schedule:
                        schedule[field] = datetime.fromisoformat(schedule[field])
                scheduler.create_schedule(**{**schedule, "GroupName": group})


def _bucket_objects(bucket: str) -> list[dict[str, str]]:
    s3 = boto3.client("s3")
    objects = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for listed in page.get("Contents", []):
            got = s3.get_object(Bucket=bucket, Key=listed["Key"])
            objects.append(
                {
                    "key": listed["Key"],
                    "body": base64.b64encode(got["Body"].read()).decode(),
                    "content_type": got.get("ContentType", ""),
                }
            )
    return objects


def _table_items(table: str) -> list[dict[str, Any]]:
    dynamodb = boto3.client("dynamodb")
    return [
        _encoded(item)
        for page in dynamodb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True)
        for item in page["Items"]
    ]


def _schedules(group: str) -> list[dict[str, Any]]:
    scheduler = boto3.client("scheduler")
    kept = []
    for page in scheduler.get_paginator("list_schedules").paginate(GroupName=group):
        for listed in page["Schedules"]:
            schedule: dict[str, Any] = dict(
                scheduler.get_schedule(GroupName=group, Name=listed["Name"])
            )
            for field in _SCHEDULE_OUTPUT_ONLY:
                schedule.pop(field, None)
            for field in _SCHEDULE_DATES:
                if isinstance(schedule.get(field), datetime):
                    schedule[field] = schedule[field].isoformat()
            kept.append(schedule)
    return kept


# DynamoDB's typed items hold bytes (B, BS): kept as {"__base64__": ...} in JSON.


def _encoded(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return {"__base64__": base64.b64encode(value).decode()}
    if isinstance(value, Mapping):
        return {key: _encoded(item) for key, item in value.items()}
    if isinstance(value, list | set | tuple):
        return [_encoded(item) for item in value]
    return value


def _decoded(value: Any) -> Any:
    if isinstance(value, Mapping):
        if set(value) == {"__base64__"}:
            return base64.b64decode(value["__base64__"])
        return {key: _decoded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_decoded(item) for item in value]
    return value


def _write_atomically(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# -- finding a running local stack -------------------------------------------------------------


def stack_file() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "nanobot-lambda" / "local-stack.json"


@dataclass(frozen=True)
class LocalStackInfo:
    """What the operator commands need to reach a running local stack."""

    endpoint_url: str
    region: str
    pid: int
    resources: dict[str, str]  # RESOURCES' names (workspace_bucket...) → name or URL
    hooks_url: str | None = None  # the event hooks' base URL, on this machine
    console_url: str | None = None  # the console's page, on this machine (None: no console)

    @classmethod
    def of(
        cls,
        template: TemplateContext,
        endpoint_url: str,
        region: str,
        hooks_url: str | None = None,
        console_url: str | None = None,
    ) -> LocalStackInfo:
        outputs = template.template.get("Outputs", {})
        resources = {}
        for name, (output, _) in RESOURCES.items():
            value = outputs.get(output, {}).get("Value")
            if value is not None:
                resources[name] = str(template.evaluate(value))
        return cls(endpoint_url, region, os.getpid(), resources, hooks_url, console_url)

    def announce(self) -> Path:
        path = stack_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(path, json.dumps(self.__dict__))
        return path

    def withdraw(self) -> None:
        """Remove the announcement, if it is still this process's."""
        path = stack_file()
        try:
            if json.loads(path.read_text(encoding="utf-8")).get("pid") == self.pid:
                path.unlink()
        except (OSError, ValueError):
            pass

    @classmethod
    def find(cls) -> LocalStackInfo:
        path = stack_file()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            info = cls(
                str(data["endpoint_url"]),
                str(data["region"]),
                int(data["pid"]),
                {str(k): str(v) for k, v in data["resources"].items()},
                str(data["hooks_url"]) if data.get("hooks_url") else None,
                str(data["console_url"]) if data.get("console_url") else None,
            )
        except FileNotFoundError:
            raise OperatorError(
                "no local stack is running: start one with `make chat` (or `nanobot-lambda "
                "chat`) in another terminal, then run this command again with --local"
            ) from None
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise OperatorError(
                f"{path} cannot be read ({error}): start `make chat` again"
            ) from None
        if not _running(info.pid):
            raise OperatorError(
                f"the local stack of {path} has ended (process {info.pid}): start `make chat` again"
            )
        return info

    def deployment(self) -> Deployment:
        """This stack as the operator commands act on one: its moto endpoint and resources,
        and nothing of the environment's (a deployed stack's variables in .env)."""
        session = boto3.Session(
            aws_access_key_id="local",
            aws_secret_access_key="local",  # noqa: S106 - moto takes any credentials
            region_name=self.region,
        )

        def client(service: str) -> Any:
            return session.client(  # type: ignore[call-overload]
                service, endpoint_url=self.endpoint_url, config=CLIENT_CONFIG
            )

        resources = {
            variable: value
            for variable, value in self.environment().items()
            if not variable.startswith("AWS_")
        }
        return Deployment(OperatorSettings.from_env(resources), client=client)

    def environment(self) -> dict[str, str]:
        """The variables that point the operator commands (and the AWS CLI) at this stack."""
        variables = {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_REGION": self.region,
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
        }
        for name, value in self.resources.items():
            variables[RESOURCES[name][1]] = value
        if self.hooks_url:
            variables["HOOKS_URL"] = self.hooks_url
        return variables


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
