"""Fires the schedules of an EventBridge Scheduler group kept in moto, which never fires them.

Each run_due() reads the group's schedules and calls `fire` with the target's Input, as
Scheduler delivers it (`<aws.scheduler.scheduled-time>` and the other context placeholders
filled in), for every schedule due by the injected clock. Like Scheduler: a schedule fires from
its StartDate, or from its creation (a rate without StartDate fires at once, then every
interval); each scheduled time fires at most once; after a pause a schedule fires once, for
the latest time it missed; DISABLED schedules and times after EndDate never fire; a one-time
schedule with ActionAfterCompletion=DELETE is deleted after it fired. A fire() that raises is
logged and the others go on.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from nanobot_lambda.core.schedules import ScheduleError, next_run

if TYPE_CHECKING:
    from mypy_boto3_scheduler import EventBridgeSchedulerClient
    from mypy_boto3_scheduler.type_defs import GetScheduleOutputTypeDef

logger = logging.getLogger(__name__)
_JUST_BEFORE = timedelta(microseconds=1)  # a firing exactly at the start counts


class ScheduleRunner:
    def __init__(
        self,
        client: EventBridgeSchedulerClient,
        group: str,
        fire: Callable[[dict[str, Any]], None],
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._client, self._group, self._fire, self._now = client, group, fire, now
        self._fired_up_to: dict[tuple[str, datetime], datetime] = {}  # (arn, created) → time
        self._invalid: set[tuple[str, datetime]] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def run_due(self) -> list[tuple[str, datetime]]:
        """Fire what is due now; returns (schedule name, scheduled time) for each firing."""
        with self._lock:
            now = self._now()
            fired = []
            pages = self._client.get_paginator("list_schedules").paginate(GroupName=self._group)
            for name in [item["Name"] for page in pages for item in page["Schedules"]]:
                try:
                    schedule = self._client.get_schedule(GroupName=self._group, Name=name)
                except ClientError:
                    continue  # deleted since it was listed
                due = self._due(schedule, now)
                if due is not None:
                    self._deliver(schedule, due)
                    fired.append((name, due))
            return fired

    def _due(self, schedule: GetScheduleOutputTypeDef, now: datetime) -> datetime | None:
        if schedule.get("State", "ENABLED") != "ENABLED":
            return None
        created, start = schedule["CreationDate"], schedule.get("StartDate")
        key = (schedule["Arn"], created)
        since = self._fired_up_to.get(key, max(created, start or created) - _JUST_BEFORE)
        end = schedule.get("EndDate")
        limit = min(now, end) if end else now
        expression = (
            schedule["ScheduleExpression"],
            schedule.get("ScheduleExpressionTimezone") or "UTC",
        )
        try:
            due = next_run(expression, since, anchor=start or created)
            while due is not None and due <= limit:  # catch up once: the latest missed time
                later = next_run(expression, due, anchor=start or created)
                if later is None or later > limit:
                    break
                due = later
        except ScheduleError as error:
            if key not in self._invalid:
                self._invalid.add(key)
                logger.warning("schedule %s is never fired: %s", schedule["Name"], error)
            return None
        if due is None or due > limit:
            return None
        self._fired_up_to[key] = due
        return due

    def _deliver(self, schedule: GetScheduleOutputTypeDef, due: datetime) -> None:
        name, stamp = schedule["Name"], due.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        raw = schedule["Target"].get("Input") or "{}"
        for placeholder, value in (
            ("scheduled-time", stamp),
            ("schedule-arn", schedule["Arn"]),
            ("execution-id", str(uuid.uuid4())),
            ("attempt-number", "1"),
        ):
            raw = raw.replace(f"<aws.scheduler.{placeholder}>", value)
        try:
            payload = json.loads(raw)
            if not isinstance(payload, dict):
                raise TypeError("the target's Input is not a JSON object")
            self._fire(payload)
        except Exception:
            logger.exception("schedule %s: firing for %s failed", name, stamp)
        one_time = schedule["ScheduleExpression"].strip().lower().startswith("at(")
        if one_time and schedule.get("ActionAfterCompletion") == "DELETE":
            try:
                self._client.delete_schedule(GroupName=self._group, Name=name)
            except ClientError as error:
                logger.warning("schedule %s could not be deleted: %s", name, error)

    def start(self, interval_seconds: float = 1.0) -> ScheduleRunner:
        """Run run_due() every interval in a daemon thread (for `nanobot-lambda chat`)."""
        if self._thread is None:
            self._stopping.clear()
            self._thread = threading.Thread(
                target=self._loop, args=(interval_seconds,), name="schedule-runner", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def _loop(self, interval_seconds: float) -> None:
        while not self._stopping.is_set():
            try:
                self.run_due()
            except Exception:
                logger.exception("schedule runner: run_due failed")
            self._stopping.wait(interval_seconds)
