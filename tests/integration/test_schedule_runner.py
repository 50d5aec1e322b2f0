"""The local schedule runner against moto server, which stores schedules but never fires them."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import boto3
import pytest
from botocore.exceptions import ClientError

from nanobot_lambda.operator.local.schedule_runner import ScheduleRunner

if TYPE_CHECKING:
    from mypy_boto3_scheduler import EventBridgeSchedulerClient

TARGET = {
    "Arn": "arn:aws:lambda:us-east-1:123456789012:function:scheduler",
    "RoleArn": "arn:aws:iam::123456789012:role/scheduler-invoke",
}
SCHEDULE_ARNS = "arn:aws:scheduler:us-east-1:123456789012:schedule"


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Harness:
    def __init__(self, client: EventBridgeSchedulerClient, group: str) -> None:
        self.client, self.group = client, group
        self.clock = Clock(datetime.now(UTC))
        self.fired: list[dict[str, Any]] = []
        self.runner = ScheduleRunner(client, group, self.fire, self.clock)

    def fire(self, payload: dict[str, Any]) -> None:
        if payload.get("boom"):
            raise RuntimeError("the target failed")
        self.fired.append(payload)

    def create(self, name: str, expression: str, tz: str = "UTC", **extra: Any) -> datetime:
        """Create a schedule whose Input names it; returns moto's CreationDate."""
        extra.setdefault(
            "Input", json.dumps({"name": name, "at": "<aws.scheduler.scheduled-time>"})
        )
        target = {**TARGET, "Input": extra.pop("Input")}
        self.client.create_schedule(
            GroupName=self.group,
            Name=name,
            ScheduleExpression=expression,
            ScheduleExpressionTimezone=tz,
            FlexibleTimeWindow={"Mode": "OFF"},
            Target=target,  # type: ignore[arg-type]
            **extra,
        )
        created = self.client.get_schedule(GroupName=self.group, Name=name)["CreationDate"]
        return created.astimezone(UTC)

    def run_at(self, moment: datetime) -> list[tuple[str, datetime]]:
        self.clock.now = moment
        return self.runner.run_due()

    def exists(self, name: str) -> bool:
        try:
            self.client.get_schedule(GroupName=self.group, Name=name)
        except ClientError as error:
            assert error.response["Error"]["Code"] == "ResourceNotFoundException"
            return False
        return True


@pytest.fixture
def harness(aws: str) -> Harness:
    client: EventBridgeSchedulerClient = boto3.client("scheduler")
    group = f"it-{uuid.uuid4().hex[:8]}"
    client.create_schedule_group(Name=group)
    return Harness(client, group)


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_rate_fires_once_per_interval(harness: Harness) -> None:
    created = harness.create("every5", "rate(5 minutes)")
    # No StartDate: like Scheduler, the rate starts at once, then every 5 minutes.
    assert harness.run_at(created) == [("every5", created)]
    assert harness.run_at(created) == []  # the same time never fires twice
    assert harness.run_at(created + timedelta(minutes=4, seconds=59)) == []
    assert harness.run_at(created + timedelta(minutes=5)) == [
        ("every5", created + timedelta(minutes=5))
    ]
    assert harness.run_at(created + timedelta(minutes=9)) == []
    assert harness.run_at(created + timedelta(minutes=10, seconds=30)) == [
        ("every5", created + timedelta(minutes=10))
    ]
    # A pause that missed many firings catches up once, for the latest of them.
    assert harness.run_at(created + timedelta(hours=1, minutes=2)) == [
        ("every5", created + timedelta(hours=1))
    ]
    assert harness.run_at(created + timedelta(hours=1, minutes=4)) == []
    assert [payload["at"] for payload in harness.fired] == [
        stamp(created + offset)
        for offset in (
            timedelta(0),
            timedelta(minutes=5),
            timedelta(minutes=10),
            timedelta(hours=1),
        )
    ]


def test_a_rate_with_a_start_date_fires_from_it(harness: Harness) -> None:
    start = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    harness.create("hourly", "rate(1 hour)", StartDate=start)
    assert harness.run_at(start - timedelta(seconds=1)) == []
    assert harness.run_at(start) == [("hourly", start)]
    assert harness.run_at(start + timedelta(minutes=59)) == []
    assert harness.run_at(start + timedelta(hours=1)) == [("hourly", start + timedelta(hours=1))]


def test_a_cron_schedule_fires_at_the_right_utc_instant(harness: Harness) -> None:
    created = harness.create("nine", "cron(0 9 ? * * *)", tz="America/New_York")
    local = created.astimezone(ZoneInfo("America/New_York"))
    nine = local.replace(hour=9, minute=0, second=0, microsecond=0)
    if nine <= local:
        nine = (local + timedelta(days=1)).replace(hour=9, minute=0, second=0, microsecond=0)
    expected = nine.astimezone(UTC)
    assert expected.astimezone(ZoneInfo("America/New_York")).hour == 9
    assert harness.run_at(expected - timedelta(seconds=1)) == []
    assert harness.run_at(expected) == [("nine", expected)]
    assert harness.fired == [{"name": "nine", "at": stamp(expected)}]
    assert harness.run_at(expected + timedelta(hours=23)) == []
    assert harness.exists("nine")


def test_an_at_schedule_fires_once_and_is_deleted(harness: Harness) -> None:
    zone = ZoneInfo("Europe/Paris")
    when = (datetime.now(zone) + timedelta(days=2)).replace(second=0, microsecond=0, fold=0)
    expression = f"at({when.strftime('%Y-%m-%dT%H:%M:%S')})"
    harness.create("once", expression, tz="Europe/Paris", ActionAfterCompletion="DELETE")
    harness.create("kept", expression, tz="Europe/Paris", ActionAfterCompletion="NONE")
    assert harness.run_at(when.astimezone(UTC) - timedelta(minutes=1)) == []
    fired = harness.run_at(when.astimezone(UTC) + timedelta(seconds=20))
    assert sorted(fired) == [("kept", when.astimezone(UTC)), ("once", when.astimezone(UTC))]
    assert not harness.exists("once")
    assert harness.exists("kept")  # ActionAfterCompletion=NONE keeps it ...
    assert harness.run_at(when.astimezone(UTC) + timedelta(days=1)) == []  # ... but it is done
    assert sorted(payload["name"] for payload in harness.fired) == ["kept", "once"]


def test_the_scheduled_time_placeholder_is_replaced(harness: Harness) -> None:
    created = harness.create(
        "heartbeat",
        "rate(30 minutes)",
        Input=json.dumps(
            {
                "kind": "heartbeat",
                "scheduled_time": "<aws.scheduler.scheduled-time>",
                "schedule": "<aws.scheduler.schedule-arn>",
                "attempt": "<aws.scheduler.attempt-number>",
            }
        ),
    )
    harness.run_at(created + timedelta(minutes=31))
    assert harness.fired == [
        {
            "kind": "heartbeat",
            "scheduled_time": stamp(created + timedelta(minutes=30)),
            "schedule": f"{SCHEDULE_ARNS}/{harness.group}/heartbeat",
            "attempt": "1",
        }
    ]
    assert stamp(created).endswith("Z") and len(stamp(created)) == 20


def test_a_failing_fire_does_not_stop_the_others(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    created = harness.create("first", "rate(1 minute)")
    harness.create("failing", "rate(1 minute)", Input=json.dumps({"boom": True}))
    harness.create("not-json", "rate(1 minute)", Input="not json")
    harness.create("bogus", "every now and then")  # moto accepts any expression
    harness.create("last", "rate(1 minute)")
    later = created + timedelta(minutes=1, seconds=30)
    fired = harness.run_at(later)
    assert sorted(name for name, _ in fired) == ["failing", "first", "last", "not-json"]
    assert sorted(payload["name"] for payload in harness.fired) == ["first", "last"]
    assert "schedule failing: firing for" in caplog.text
    assert "schedule not-json: firing for" in caplog.text
    assert "schedule bogus is never fired" in caplog.text
    # A failed firing is not retried for the same time (Scheduler's retries are its own).
    assert [name for name, _ in harness.run_at(later)] == []


def test_disabled_schedules_and_times_after_the_end_date_never_fire(harness: Harness) -> None:
    created = harness.create("off", "rate(1 minute)", State="DISABLED")
    # Between the third and fourth run of "ending", however long its creation takes after "off"'s
    # (the end date once sat 1 s after the third run, and a slow create missed it).
    end = (created + timedelta(minutes=3)).replace(microsecond=0) + timedelta(seconds=30)
    harness.create("ending", "rate(1 minute)", EndDate=end)
    fired = harness.run_at(created + timedelta(minutes=2, seconds=1))
    assert [name for name, _ in fired] == ["ending"]
    assert [name for name, _ in harness.run_at(created + timedelta(minutes=10))] == ["ending"]
    assert harness.run_at(created + timedelta(minutes=20)) == []


def test_start_and_stop_run_it_in_the_background(harness: Harness) -> None:
    fired = threading.Event()
    seen: list[dict[str, Any]] = []

    def fire(payload: dict[str, Any]) -> None:
        seen.append(payload)
        fired.set()

    created = harness.create("background", "rate(1 minute)")
    clock: Callable[[], datetime] = lambda: created + timedelta(seconds=5)  # noqa: E731
    runner = ScheduleRunner(harness.client, harness.group, fire, clock).start(0.05)
    try:
        assert fired.wait(10)
    finally:
        runner.stop()
    assert seen == [{"name": "background", "at": stamp(created)}]
