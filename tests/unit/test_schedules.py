"""Schedule expressions: conversions, the errors the model sees, next run times (incl. DST)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nanobot_lambda.core.schedules import (
    ScheduleError,
    ScheduleSpec,
    build_schedule,
    describe,
    next_run,
)

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)  # a Monday; 14:00 in Paris


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def build(**arguments: Any) -> ScheduleSpec:
    return build_schedule(default_tz="Europe/Paris", now=NOW, **arguments)


@pytest.mark.parametrize(
    ("arguments", "expression", "timezone", "description"),
    [
        ({"every_seconds": 60}, "rate(1 minute)", "UTC", "every minute"),
        ({"every_seconds": 300}, "rate(5 minutes)", "UTC", "every 5 minutes"),
        ({"every_seconds": 5400}, "rate(90 minutes)", "UTC", "every 90 minutes"),
        ({"every_seconds": 3600}, "rate(1 hour)", "UTC", "every hour"),
        ({"every_seconds": 7200}, "rate(2 hours)", "UTC", "every 2 hours"),
        ({"every_seconds": 86400}, "rate(1 day)", "UTC", "every day"),
        ({"every_seconds": 3 * 86400}, "rate(3 days)", "UTC", "every 3 days"),
        ({"every_seconds": 3600.0}, "rate(1 hour)", "UTC", "every hour"),
        (
            {"cron_expr": "0 9 * * 1-5", "tz": "Europe/Paris"},
            "cron(0 9 ? * MON-FRI *)",
            "Europe/Paris",
            "at 09:00 on Mon-Fri (Europe/Paris)",
        ),
        (
            {"cron_expr": "0 7 * * *"},
            "cron(0 7 * * ? *)",
            "Europe/Paris",
            "at 07:00 every day (Europe/Paris)",
        ),
        (
            {"cron_expr": "0 7 * * *", "tz": "America/New_York"},
            "cron(0 7 * * ? *)",
            "America/New_York",
            "at 07:00 every day (America/New_York)",
        ),
        (
            {"cron_expr": "*/15 * * * *"},
            "cron(0/15 * * * ? *)",
            "Europe/Paris",
            "every 15 minutes (Europe/Paris)",
        ),
        (
            {"cron_expr": "5 * * * *"},
            "cron(5 * * * ? *)",
            "Europe/Paris",
            "every hour at :05 (Europe/Paris)",
        ),
        (
            {"cron_expr": "0 */6 * * *"},
            "cron(0 0/6 * * ? *)",
            "Europe/Paris",
            "at 00:00, 06:00, 12:00 and 18:00 every day (Europe/Paris)",
        ),
        (
            {"cron_expr": "30 */2 * * *"},
            "cron(30 0/2 * * ? *)",
            "Europe/Paris",
            "every 2 hours at :30 (Europe/Paris)",
        ),
        (
            {"cron_expr": "0-30/10 9-17 * * mon-fri"},
            "cron(0,10,20,30 9-17 ? * MON-FRI *)",
            "Europe/Paris",
            "at minutes :00, :10, :20, :30 during hours 9-17 on Mon-Fri (Europe/Paris)",
        ),
        (
            {"cron_expr": "0 9 1 * *"},
            "cron(0 9 1 * ? *)",
            "Europe/Paris",
            "at 09:00 on day 1 of the month (Europe/Paris)",
        ),
        (
            {"cron_expr": "0 9 1,15 jan,Jul *"},
            "cron(0 9 1,15 1,7 ? *)",
            "Europe/Paris",
            "at 09:00 on days 1, 15 of the month in Jan, Jul (Europe/Paris)",
        ),
        (
            {"cron_expr": "0 0 1 */3 *"},
            "cron(0 0 1 1/3 ? *)",
            "Europe/Paris",
            "at 00:00 on day 1 of the month in Jan, Apr, Jul, Oct (Europe/Paris)",
        ),
        # Day of week: Sunday is 0 or 7 in crontab, 1 in EventBridge.
        ({"cron_expr": "0 8 * * 0"}, "cron(0 8 ? * SUN *)", "Europe/Paris", None),
        ({"cron_expr": "0 8 * * 7"}, "cron(0 8 ? * SUN *)", "Europe/Paris", None),
        ({"cron_expr": "0 8 * * SUN"}, "cron(0 8 ? * SUN *)", "Europe/Paris", None),
        ({"cron_expr": "0 8 * * 6"}, "cron(0 8 ? * SAT *)", "Europe/Paris", None),
        (
            {"cron_expr": "0 8 * * 5-7"},
            "cron(0 8 ? * SUN,FRI,SAT *)",
            "Europe/Paris",
            "at 08:00 on Fri-Sun (Europe/Paris)",
        ),
        ({"cron_expr": "0 8 * * FRI-SUN"}, "cron(0 8 ? * SUN,FRI,SAT *)", "Europe/Paris", None),
        (
            {"cron_expr": "0 8 * * sat,sun"},
            "cron(0 8 ? * SUN,SAT *)",
            "Europe/Paris",
            "at 08:00 on Sat, Sun (Europe/Paris)",
        ),
        ({"cron_expr": "0 8 * * 0-6"}, "cron(0 8 * * ? *)", "Europe/Paris", None),
        ({"cron_expr": "0 8 * * */2"}, "cron(0 8 ? * SUN,TUE,THU,SAT *)", "Europe/Paris", None),
        ({"cron_expr": "0 8 ? * 1"}, "cron(0 8 ? * MON *)", "Europe/Paris", None),
        # EventBridge's own 6 fields, with or without cron(...).
        (
            {"cron_expr": "cron(0 9 ? * MON-FRI *)"},
            "cron(0 9 ? * MON-FRI *)",
            "Europe/Paris",
            "at 09:00 on Mon-Fri (Europe/Paris)",
        ),
        ({"cron_expr": "0/30 8 ? * 2-6 *"}, "cron(0,30 8 ? * MON-FRI *)", "Europe/Paris", None),
        (
            {"cron_expr": "0 12 * * ? 2027"},
            "cron(0 12 * * ? 2027)",
            "Europe/Paris",
            "at 12:00 every day in 2027 (Europe/Paris)",
        ),
        # at: naive times in the user's zone; explicit offsets in UTC.
        (
            {"at": "2026-12-01T09:00"},
            "at(2026-12-01T09:00:00)",
            "Europe/Paris",
            "once at 2026-12-01 09:00 (Europe/Paris)",
        ),
        (
            {"at": " 2026-12-01 09:00:30 "},
            "at(2026-12-01T09:00:30)",
            "Europe/Paris",
            "once at 2026-12-01 09:00:30 (Europe/Paris)",
        ),
        (
            {"at": "2026-12-01T09:00:00+02:00"},
            "at(2026-12-01T07:00:00)",
            "UTC",
            "once at 2026-12-01 07:00 (UTC)",
        ),
        ({"at": "2026-12-01T09:00Z"}, "at(2026-12-01T09:00:00)", "UTC", None),
        ({"at": "2026-06-01T14:01:00"}, "at(2026-06-01T14:01:00)", "Europe/Paris", None),
        # Empty strings from the model count as not given.
        ({"every_seconds": 600, "cron_expr": "", "at": " "}, "rate(10 minutes)", "UTC", None),
    ],
)
def test_conversions(
    arguments: dict[str, Any], expression: str, timezone: str, description: str | None
) -> None:
    spec = build(**arguments)
    assert spec.expression == expression
    assert spec.timezone == timezone
    assert spec.one_time == ("at" in arguments and bool(arguments["at"].strip()))
    if description is not None:
        assert spec.description == description
    assert describe((spec.expression, spec.timezone)) == spec.description


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "give exactly one of every_seconds, cron_expr or at"),
        ({"every_seconds": 60, "at": "2026-12-01T09:00"}, "give exactly one of every_seconds"),
        ({"cron_expr": "0 9 * * *", "at": "2026-12-01T09:00"}, "give exactly one of"),
        ({"at": "2026-12-01T09:00", "tz": "UTC"}, "tz applies only to cron_expr"),
        ({"every_seconds": 600, "tz": "UTC"}, "tz applies only to cron_expr"),
        (
            {"cron_expr": "0 9 * * *", "tz": "Mars/Base"},
            "unknown timezone 'Mars/Base' (use an IANA name such as Europe/Paris)",
        ),
        ({"every_seconds": 30}, "every_seconds must be at least 60 (EventBridge fires at most"),
        ({"every_seconds": 0}, "every_seconds must be at least 60"),
        ({"every_seconds": -120}, "every_seconds must be at least 60"),
        ({"every_seconds": 90}, "every_seconds must be a multiple of 60"),
        ({"every_seconds": 3601}, "use 3600 or 3660"),
        ({"every_seconds": 90.5}, "every_seconds must be a whole number of seconds"),
        ({"every_seconds": True}, "every_seconds must be a whole number of seconds"),
        ({"cron_expr": "61 * * * *"}, "cron_expr '61 * * * *': minute must be 0-59 (got 61)"),
        ({"cron_expr": "0 24 * * *"}, "hour must be 0-23 (got 24)"),
        ({"cron_expr": "0 9 0 * *"}, "day-of-month must be 1-31 (got 0)"),
        ({"cron_expr": "0 9 32 * *"}, "day-of-month must be 1-31 (got 32)"),
        ({"cron_expr": "0 9 * 13 *"}, "month must be 1-12 or JAN-DEC (got 13)"),
        ({"cron_expr": "0 9 * * 8"}, "day-of-week must be 0-7 or SUN-SAT"),
        ({"cron_expr": "0 9 ? * 0 *"}, "day-of-week must be 1-7 or SUN-SAT, 1 being Sunday"),
        ({"cron_expr": "0 9 * * ? 1969"}, "year must be 1970-2199 (got 1969)"),
        ({"cron_expr": "0 9 * * ? 2200"}, "year must be 1970-2199 (got 2200)"),
        ({"cron_expr": "0 9 * * FOO"}, "day-of-week has unknown name 'FOO'"),
        ({"cron_expr": "0 9 * FOO *"}, "month has unknown name 'FOO'"),
        ({"cron_expr": "x 9 * * *"}, "minute must be 0-59 (got 'X')"),
        ({"cron_expr": "0 MON * * *"}, "hour must be 0-23 (got 'MON')"),
        ({"cron_expr": "0 9 1, * *"}, "day-of-month has an empty value"),
        ({"cron_expr": "5-3 * * * *"}, "minute range '5-3' goes backwards"),
        ({"cron_expr": "*/0 * * * *"}, "the step after '/' must be a positive number"),
        ({"cron_expr": "*/x * * * *"}, "the step after '/' must be a positive number"),
        ({"cron_expr": "0 9 * *"}, "expected 5 fields (minute hour day-of-month month"),
        ({"cron_expr": "0 9 * * * * *"}, "expected 5 fields"),
        ({"cron_expr": "cron(0 9 * * 1)"}, "cron(...) takes EventBridge's 6 fields"),
        ({"cron_expr": "0 9 1 * 1"}, "create two jobs: '0 9 1 * *' and '0 9 * * 1'"),
        ({"cron_expr": "0 9 1-7 * MON"}, "runs when EITHER matches"),
        ({"cron_expr": "0 9 * * * *"}, "EventBridge needs '?' in exactly one of day-of-month"),
        ({"cron_expr": "cron(0 9 ? * ? *)"}, "EventBridge needs '?' in exactly one"),
        ({"cron_expr": "0 ? * * *"}, "'?' is only allowed in day-of-month or day-of-week"),
        ({"cron_expr": "0 9 * * ? ?"}, "'?' is only allowed in day-of-month or day-of-week"),
        ({"cron_expr": "0 9 ?,1 * ? *"}, "'?' must stand alone"),
        ({"cron_expr": "0 9 L * ? *"}, "'L': L, W and # are not supported here; use a plain list"),
        ({"cron_expr": "0 9 ? * 6L *"}, "not supported here; use a plain list or range"),
        ({"cron_expr": "0 9 15W * ? *"}, "not supported here"),
        ({"cron_expr": "0 9 LW * ? *"}, "not supported here"),
        ({"cron_expr": "0 9 ? * 6#3 *"}, "not supported here"),
        ({"cron_expr": "0 9 * * 5#2"}, "not supported here"),
        ({"cron_expr": "0 9 30 2 ? *"}, "never fires"),
        ({"cron_expr": "0 9 * * ? 2020"}, "never fires"),
        ({"at": "tomorrow at nine"}, "at 'tomorrow at nine' is not an ISO date-time such as"),
        ({"at": "2026-12-01"}, "is not an ISO date-time such as 2026-12-01T09:00"),
        ({"at": "2026-13-01T09:00"}, "is not an ISO date-time"),
        ({"at": "2020-01-01T09:00"}, "at '2020-01-01T09:00' is in the past"),
        ({"at": "2026-06-01T14:00:20"}, "is in the past (or less than 30 seconds away)"),
        ({"at": "2026-06-01T12:00:10Z"}, "it is now 2026-06-01 12:00 in UTC"),
        ({"at": "2027-03-28T02:30"}, "does not exist in Europe/Paris"),
    ],
)
def test_errors(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ScheduleError) as raised:
        build(**arguments)
    assert message in str(raised.value)


def test_default_timezone_is_checked_too() -> None:
    with pytest.raises(ScheduleError, match="unknown timezone 'Nowhere'"):
        build_schedule(cron_expr="0 9 * * *", default_tz="Nowhere", now=NOW)
    with pytest.raises(ScheduleError, match="unknown timezone"):
        build_schedule(at="2026-12-01T09:00", default_tz="", now=NOW)


def test_naive_now_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        build_schedule(every_seconds=60, default_tz="UTC", now=datetime(2026, 1, 1))


def test_at_in_new_york_and_an_ambiguous_time() -> None:
    spec = build_schedule(at="2026-12-01T09:00", default_tz="America/New_York", now=NOW)
    assert (spec.expression, spec.timezone) == ("at(2026-12-01T09:00:00)", "America/New_York")
    assert next_run(spec, NOW) == utc(2026, 12, 1, 14, 0)
    # 02:30 happens twice on 25 October 2026 in Paris: the first one (summer time) is meant.
    spec = build(at="2026-10-25T02:30")
    assert next_run(spec, NOW) == utc(2026, 10, 25, 0, 30)


# --- next_run ---------------------------------------------------------------------------------


def test_rate_fires_from_its_anchor() -> None:
    spec = build(every_seconds=3600)
    anchor = utc(2026, 6, 1, 10, 20)
    assert next_run(spec, utc(2026, 6, 1, 10, 0), anchor=anchor) == anchor  # k = 0
    assert next_run(spec, anchor, anchor=anchor) == utc(2026, 6, 1, 11, 20)  # strictly after
    assert next_run(spec, utc(2026, 6, 1, 13, 5), anchor=anchor) == utc(2026, 6, 1, 13, 20)
    assert next_run(spec, utc(2026, 6, 1, 13, 20), anchor=anchor) == utc(2026, 6, 1, 14, 20)
    # Without an anchor the rate starts at `after`.
    assert next_run(spec, utc(2026, 6, 1, 13, 5)) == utc(2026, 6, 1, 14, 5)


def test_rate_in_days_is_24_hours_across_dst() -> None:
    anchor = datetime(2026, 3, 28, 9, 0, tzinfo=UTC)
    assert next_run(("rate(1 day)", "Europe/Paris"), anchor, anchor=anchor) == utc(
        2026, 3, 29, 9, 0
    )


def test_rate_results_are_in_utc() -> None:
    from zoneinfo import ZoneInfo

    anchor = datetime(2026, 6, 1, 9, 0, tzinfo=ZoneInfo("Europe/Paris"))
    result = next_run(("rate(5 minutes)", "UTC"), anchor, anchor=anchor)
    assert result == utc(2026, 6, 1, 7, 5)
    assert result is not None and result.tzinfo is UTC


@pytest.mark.parametrize(
    ("cron_expr", "tz", "after", "expected"),
    [
        ("0 9 * * 1-5", "Europe/Paris", utc(2026, 6, 1, 12), utc(2026, 6, 2, 7)),  # Mon → Tue
        ("0 9 * * 1-5", "Europe/Paris", utc(2026, 6, 5, 7), utc(2026, 6, 8, 7)),  # Fri → Mon
        ("0 9 * * 1-5", "Europe/Paris", utc(2026, 6, 1, 6, 59), utc(2026, 6, 1, 7)),
        ("0 9 * * 1-5", "UTC", utc(2026, 12, 31, 10), utc(2027, 1, 1, 9)),  # Fri 1 Jan 2027
        ("*/15 * * * *", "UTC", utc(2026, 6, 1, 12, 7, 30), utc(2026, 6, 1, 12, 15)),
        ("*/15 * * * *", "UTC", utc(2026, 6, 1, 12, 15), utc(2026, 6, 1, 12, 30)),
        ("*/15 * * * *", "UTC", utc(2026, 12, 31, 23, 59), utc(2027, 1, 1, 0, 0)),
        ("10-20/5 * * * *", "UTC", utc(2026, 6, 1, 12, 20), utc(2026, 6, 1, 13, 10)),
        ("0 0 1 jan,jul *", "UTC", utc(2026, 6, 1), utc(2026, 7, 1)),
        ("0 12 29 feb *", "UTC", utc(2026, 6, 1), utc(2028, 2, 29, 12)),
        ("0 8 * * 0", "UTC", utc(2026, 6, 1), utc(2026, 6, 7, 8)),  # Sunday as 0
        ("0 8 * * 7", "UTC", utc(2026, 6, 1), utc(2026, 6, 7, 8)),  # Sunday as 7
        ("0 8 * * sun", "UTC", utc(2026, 6, 1), utc(2026, 6, 7, 8)),
        ("0 8 * * 5-7", "UTC", utc(2026, 6, 1), utc(2026, 6, 5, 8)),  # Fri
        ("0 8 * * 5-7", "UTC", utc(2026, 6, 5, 8), utc(2026, 6, 6, 8)),  # Sat
        ("0 8 * * 5-7", "UTC", utc(2026, 6, 6, 8), utc(2026, 6, 7, 8)),  # Sun
        ("0 8 * * 5-7", "UTC", utc(2026, 6, 7, 8), utc(2026, 6, 12, 8)),  # next Fri
        ("0 8 * * 6,0", "UTC", utc(2026, 6, 1), utc(2026, 6, 6, 8)),
        ("0 9 * * ? 2027", "UTC", utc(2026, 6, 1), utc(2027, 1, 1, 9)),
        ("cron(30 6 ? * TUE,THU *)", "America/New_York", utc(2026, 6, 1), utc(2026, 6, 2, 10, 30)),
    ],
)
def test_cron_next_run(cron_expr: str, tz: str, after: datetime, expected: datetime) -> None:
    spec = build_schedule(cron_expr=cron_expr, tz=tz, default_tz="UTC", now=utc(2026, 1, 1))
    assert next_run(spec, after) == expected
    assert next_run((spec.expression, spec.timezone), after) == expected


def test_cron_walks_a_whole_year_quickly() -> None:
    spec = build(cron_expr="0 0 29 2 *")  # every four years
    assert next_run(spec, utc(2028, 3, 1)) == utc(2032, 2, 28, 23)


# DST. Paris: 2026-03-29 02:00 CET → 03:00 CEST; 2026-10-25 03:00 CEST → 02:00 CET.
# New York: 2026-03-08 02:00 EST → 03:00 EDT; 2026-11-01 02:00 EDT → 01:00 EST.
@pytest.mark.parametrize(
    ("cron_expr", "tz", "after", "expected"),
    [
        # A daily time that does not exist on the spring-forward day is skipped that day.
        ("30 2 * * *", "Europe/Paris", utc(2026, 3, 28, 1, 30), utc(2026, 3, 30, 0, 30)),
        ("30 2 * * *", "America/New_York", utc(2026, 3, 7, 7, 30), utc(2026, 3, 9, 6, 30)),
        # Times around the gap move with the offset.
        ("30 1 * * *", "Europe/Paris", utc(2026, 3, 28, 1, 0), utc(2026, 3, 29, 0, 30)),
        ("30 3 * * *", "Europe/Paris", utc(2026, 3, 28, 3, 0), utc(2026, 3, 29, 1, 30)),
        ("0 9 * * *", "Europe/Paris", utc(2026, 3, 28, 8, 0), utc(2026, 3, 29, 7, 0)),
        ("0 9 * * *", "America/New_York", utc(2026, 3, 7, 14, 0), utc(2026, 3, 8, 13, 0)),
        # A time that happens twice on the fall-back day fires once, at its first occurrence.
        ("30 2 * * *", "Europe/Paris", utc(2026, 10, 24, 1, 0), utc(2026, 10, 25, 0, 30)),
        ("30 2 * * *", "Europe/Paris", utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)),
        ("30 1 * * *", "America/New_York", utc(2026, 10, 31, 6, 0), utc(2026, 11, 1, 5, 30)),
        ("30 1 * * *", "America/New_York", utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)),
        ("0 9 * * *", "America/New_York", utc(2026, 10, 31, 14, 0), utc(2026, 11, 1, 14, 0)),
        # After the second pass of the repeated hour has begun, nothing fires in it again.
        ("45 2 * * *", "Europe/Paris", utc(2026, 10, 25, 1, 15), utc(2026, 10, 26, 1, 45)),
    ],
)
def test_cron_next_run_across_dst(
    cron_expr: str, tz: str, after: datetime, expected: datetime
) -> None:
    spec = build_schedule(cron_expr=cron_expr, tz=tz, default_tz="UTC", now=utc(2026, 1, 1))
    assert next_run(spec, after) == expected


def test_hourly_cron_across_both_paris_transitions() -> None:
    spec = build_schedule(cron_expr="0 * * * *", tz="Europe/Paris", default_tz="UTC", now=NOW)

    def runs(after: datetime, count: int) -> list[datetime]:
        found = []
        for _ in range(count):
            next_time = next_run(spec, after)
            assert next_time is not None
            found.append(next_time)
            after = next_time
        return found

    # Spring: local 01:00 CET, (02:00 does not exist), 03:00 CEST, 04:00 CEST: one hour apart.
    assert runs(utc(2026, 3, 28, 23, 30), 3) == [
        utc(2026, 3, 29, 0, 0),
        utc(2026, 3, 29, 1, 0),
        utc(2026, 3, 29, 2, 0),
    ]
    # Fall: 02:00 CEST fires, the repeated 02:00 CET does not, then 03:00 CET.
    assert runs(utc(2026, 10, 24, 23, 30), 3) == [
        utc(2026, 10, 25, 0, 0),
        utc(2026, 10, 25, 2, 0),
        utc(2026, 10, 25, 3, 0),
    ]


def test_at_next_run() -> None:
    spec = build(at="2026-12-01T09:00")
    assert next_run(spec, NOW) == utc(2026, 12, 1, 8, 0)
    assert next_run(spec, utc(2026, 12, 1, 7, 59, 59)) == utc(2026, 12, 1, 8, 0)
    assert next_run(spec, utc(2026, 12, 1, 8, 0)) is None  # strictly after
    assert next_run(spec, utc(2027, 1, 1)) is None


def test_next_run_reads_expressions_made_elsewhere() -> None:
    assert next_run(("rate(1 minutes)", "UTC"), NOW, anchor=NOW) == NOW + timedelta(minutes=1)
    assert next_run(("at(2026-07-01T00:00:00)", "Asia/Tokyo"), NOW) == utc(2026, 6, 30, 15)
    assert next_run(("cron(0 0 ? * MON *)", ""), NOW) == utc(2026, 6, 8)
    with pytest.raises(ScheduleError, match="is not a rate"):
        next_run(("every day", "UTC"), NOW)
    with pytest.raises(ScheduleError, match="unknown timezone"):
        next_run(("cron(0 0 ? * MON *)", "Mars/Base"), NOW)
    with pytest.raises(ValueError, match="timezone-aware"):
        next_run(("rate(5 minutes)", "UTC"), datetime(2026, 1, 1))


def test_describe_expressions() -> None:
    assert describe(("rate(2 hours)", "UTC")) == "every 2 hours"
    assert describe(("cron(0 9 ? * MON-FRI *)", "Europe/Paris")) == (
        "at 09:00 on Mon-Fri (Europe/Paris)"
    )
    assert describe(("at(2026-12-01T09:00:00)", "Europe/Paris")) == (
        "once at 2026-12-01 09:00 (Europe/Paris)"
    )
    assert describe(("cron(* * * * ? *)", "UTC")) == "every minute (UTC)"
