"""`nanobot-lambda cron list|remove` against a stack's tables (moto server)."""

from __future__ import annotations

import json
from dataclasses import replace

import boto3
import pytest

from nanobot_lambda.adapters.aws.jobs import DynamoJobStore
from nanobot_lambda.adapters.aws.schedules import EventBridgeSchedules
from nanobot_lambda.core.cron import CronJob
from nanobot_lambda.operator.cli import main
from nanobot_lambda.operator.local.cfn import TemplateContext


@pytest.fixture
def configured(resources: TemplateContext, monkeypatch: pytest.MonkeyPatch) -> DynamoJobStore:
    monkeypatch.setenv("JOBS_TABLE", resources.refs["JobsTable"])
    monkeypatch.setenv("SCHEDULE_GROUP", resources.refs["ScheduleGroup"])
    store = DynamoJobStore(resources.refs["JobsTable"], boto3.client("dynamodb"))
    schedules = EventBridgeSchedules(
        boto3.client("scheduler"),
        group=resources.refs["ScheduleGroup"],
        target_arn="arn:aws:lambda:us-east-1:123456789012:function:scheduler",
        role_arn="arn:aws:iam::123456789012:role/invoke",
    )
    for chat, job_id, name in ((111, "aaaa1111", "water plants"), (222, "bbbb2222", "standup")):
        job = CronJob(
            job_id=job_id,
            chat_id=chat,
            kind="reminder",
            message=name,
            name=name,
            expression="cron(0 9 * * ? *)",
            timezone="Europe/Paris",
            description="at 09:00 every day (Europe/Paris)",
            one_time=False,
            created_at="2026-11-22T08:00:00+00:00",
        )
        store.put(job)
        schedules.create(job)
    return store


def test_list_all_and_one_chat(
    configured: DynamoJobStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cron", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["aaaa1111", "bbbb2222"]
    assert "next 20" in lines[0] and "water plants" in lines[0]
    assert main(["cron", "list", "--chat", "222"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["bbbb2222"]


def test_remove_deletes_the_job_and_its_schedule(
    configured: DynamoJobStore, resources: TemplateContext, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cron", "remove", "aaaa1111", "--chat", "111"]) == 0
    assert "Removed reminder 'water plants'" in capsys.readouterr().out
    assert configured.get(111, "aaaa1111") is None
    names = [
        item["Name"]
        for item in boto3.client("scheduler").list_schedules(
            GroupName=resources.refs["ScheduleGroup"]
        )["Schedules"]
    ]
    assert "nanobot-aaaa1111" not in names and "nanobot-bbbb2222" in names
    assert main(["cron", "remove", "aaaa1111", "--chat", "111"]) == 1  # already gone


def test_without_configuration_it_says_what_to_give(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("JOBS_TABLE", raising=False)
    monkeypatch.delenv("SCHEDULE_GROUP", raising=False)
    assert main(["cron", "list"]) == 2
    assert "give --stack NAME, or set JOBS_TABLE and SCHEDULE_GROUP" in capsys.readouterr().err


def test_a_quiet_task_is_stored_listed_and_kept_quiet_and_old_records_are_not_quiet(
    configured: DynamoJobStore, resources: TemplateContext, capsys: pytest.CaptureFixture[str]
) -> None:
    table, dynamodb = resources.refs["JobsTable"], boto3.client("dynamodb")
    quiet = CronJob(
        job_id="cccc3333",
        chat_id=111,
        kind="task",
        message="Check the status page",
        name="status page",
        expression="rate(1 hour)",
        timezone="UTC",
        description="every hour",
        one_time=False,
        created_at="2026-11-22T09:00:00+00:00",
        quiet=True,
    )
    configured.put(quiet)
    configured.record_run(quiet, at="2026-11-22T10:00:00+00:00", status="done: nothing to report")
    assert configured.get(111, "cccc3333") == replace(
        quiet, last_run="2026-11-22T10:00:00+00:00", last_status="done: nothing to report"
    )

    def stored(job_id: str) -> dict[str, object]:
        key = {"pk": {"S": "chat#111"}, "sk": {"S": f"job#{job_id}"}}
        item = dynamodb.get_item(TableName=table, Key=key)["Item"]
        loaded: dict[str, object] = json.loads(item["job"]["S"])
        return loaded

    assert stored("cccc3333")["quiet"] is True
    assert "quiet" not in stored("aaaa1111")  # any other job is stored as before
    # A record written before quiet tasks existed (no `quiet`) reads as not quiet.
    old = configured.get(111, "aaaa1111")
    assert old is not None and old.quiet is False

    assert main(["cron", "list", "--chat", "111"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:5] for line in lines] == [
        ["aaaa1111", "chat", "111", "reminder", "next"],
        ["cccc3333", "chat", "111", "task", "quiet"],
    ]


def test_a_schedule_created_again_for_the_same_job_is_not_an_error(
    configured: DynamoJobStore, resources: TemplateContext
) -> None:
    """A step's cron call run again after a crash creates the schedule it made before: the
    scheduler's ConflictException means it exists, and there is still one."""
    schedules = EventBridgeSchedules(
        boto3.client("scheduler"),
        group=resources.refs["ScheduleGroup"],
        target_arn="arn:aws:lambda:us-east-1:123456789012:function:scheduler",
        role_arn="arn:aws:iam::123456789012:role/invoke",
    )
    job = configured.get(111, "aaaa1111")
    assert job is not None
    schedules.create(job)
    listed = boto3.client("scheduler").list_schedules(GroupName=resources.refs["ScheduleGroup"])
    names = [schedule["Name"] for schedule in listed["Schedules"]]
    assert names.count(job.schedule_name) == 1
