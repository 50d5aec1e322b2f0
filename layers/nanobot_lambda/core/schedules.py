"""Schedule expressions for EventBridge Scheduler: build, validate, describe, next run.

The cron tool takes exactly one of `every_seconds`, `cron_expr` (+ `tz`) or `at`.
`build_schedule` turns it into a ScheduleExpression and ScheduleExpressionTimezone, or raises
ScheduleError with a message written for the model. Everything is validated here: moto stores
any expression, AWS rejects invalid ones at create time.

Accepted `cron_expr`: a standard 5-field crontab (`min hour day-of-month month day-of-week`,
Sunday 0 or 7), converted to EventBridge's 6 fields (Sunday 1, `?` in one day field, year), or a
6-field EventBridge expression with or without `cron(...)`. `L`, `W` and `#` are refused.

Time zones and daylight saving time, as EventBridge Scheduler documents them: cron and at()
are wall-clock times in their zone. A local time that does not exist (clocks go forward) is
skipped; one that happens twice (clocks go back) fires once, at its first occurrence
(zoneinfo's fold=0). An `at` in a nonexistent local time is refused. Rates are durations:
rate(1 day) fires every 24 hours whatever the clocks do, from the schedule's start.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

AT_GRACE = timedelta(seconds=30)  # an `at` must be at least this far ahead
LAST_YEAR = 2199  # EventBridge's year field: 1970-2199

_MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")  # EventBridge 1-7
_RATE = re.compile(r"rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)", re.IGNORECASE)
_AT = re.compile(r"at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)", re.IGNORECASE)
_CRON = re.compile(r"cron\((.*)\)", re.IGNORECASE | re.DOTALL)
_AT_INPUT = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
_NUMBER = re.compile(r"[0-9]+")
_UNSUPPORTED = re.compile(r"#|[0-9]*L|[0-9]+W|LW|W")


class ScheduleError(ValueError):
    """An invalid schedule; the message is written for the model (the tool's error text)."""


@dataclass(frozen=True)
class ScheduleSpec:
    expression: str  # "rate(5 minutes)", "cron(0 9 ? * MON-FRI *)", "at(2026-12-01T09:00:00)"
    timezone: str  # IANA name for ScheduleExpressionTimezone ("UTC" for rate)
    one_time: bool  # at(): delete after it fires (ActionAfterCompletion=DELETE)
    description: str  # "every 5 minutes", "at 09:00 on Mon-Fri (Europe/Paris)", ...


def build_schedule(
    *,
    every_seconds: int | None = None,
    cron_expr: str | None = None,
    tz: str | None = None,
    at: str | None = None,
    default_tz: str,
    now: datetime,
) -> ScheduleSpec:
    """The schedule for the cron tool's arguments (empty strings count as not given)."""
    cron_expr, tz, at = _given(cron_expr), _given(tz), _given(at)
    given = [
        name
        for name, value in (("every_seconds", every_seconds), ("cron_expr", cron_expr), ("at", at))
        if value is not None
    ]
    if len(given) != 1:
        got = f" (got {' and '.join(given)})" if given else ""
        raise ScheduleError(f"give exactly one of every_seconds, cron_expr or at{got}")
    if tz is not None and cron_expr is None:
        raise ScheduleError(
            "tz applies only to cron_expr; an `at` time is in the user's time zone unless it "
            "carries an offset such as +02:00"
        )
    _require_aware(now, "now")
    if every_seconds is not None:
        return _build_rate(every_seconds)
    if cron_expr is not None:
        zone_name = tz or default_tz
        zone = _zone(zone_name)
        cron = _parse_cron(cron_expr)
        if _next_cron(cron, zone, now) is None:
            raise ScheduleError(
                f"cron_expr '{cron_expr.strip()}' never fires (no such date after now, "
                "such as 30 February or a past year)"
            )
        return ScheduleSpec(cron.expression(), zone_name, False, _describe_cron(cron, zone_name))
    assert at is not None
    return _build_at(at, default_tz, now)


def next_run(
    spec_or_expression: ScheduleSpec | tuple[str, str],
    after: datetime,
    anchor: datetime | None = None,
) -> datetime | None:
    """The first firing strictly after `after` (aware), in UTC; None when there is none.

    A rate fires at `anchor` + k × interval (k ≥ 0): pass the schedule's start (StartDate, or
    its creation time). Without an anchor the rate is taken to start at `after`.
    """
    expression, zone_name = _expression_and_zone(spec_or_expression)
    _require_aware(after, "after")
    text = expression.strip()
    if rate := _RATE.fullmatch(text):
        interval = _rate_interval(rate)
        if anchor is not None:
            _require_aware(anchor, "anchor")
        start = (anchor or after).astimezone(UTC)
        if after < start:
            return start
        return start + ((after - start) // interval + 1) * interval
    zone = _zone(zone_name or "UTC")
    if at_match := _AT.fullmatch(text):
        instant = datetime.fromisoformat(at_match.group(1)).replace(tzinfo=zone).astimezone(UTC)
        return instant if instant > after else None
    if _CRON.fullmatch(text):
        return _next_cron(_parse_cron(text), zone, after)
    raise ScheduleError(f"'{expression}' is not a rate(...), cron(...) or at(...) expression")


def describe(spec_or_expression: ScheduleSpec | tuple[str, str]) -> str:
    """Short human text for a schedule expression (a ScheduleSpec carries its own)."""
    if isinstance(spec_or_expression, ScheduleSpec):
        return spec_or_expression.description
    expression, zone_name = _expression_and_zone(spec_or_expression)
    text = expression.strip()
    if rate := _RATE.fullmatch(text):
        return _describe_rate(int(_rate_interval(rate).total_seconds()))
    if at_match := _AT.fullmatch(text):
        return _describe_at(datetime.fromisoformat(at_match.group(1)), zone_name or "UTC")
    return _describe_cron(_parse_cron(text), zone_name or "UTC")


# --- rate and at ------------------------------------------------------------------------------


def _build_rate(every_seconds: object) -> ScheduleSpec:
    if isinstance(every_seconds, float) and every_seconds.is_integer():
        every_seconds = int(every_seconds)
    if isinstance(every_seconds, bool) or not isinstance(every_seconds, int):
        raise ScheduleError(
            f"every_seconds must be a whole number of seconds, not {every_seconds!r}"
        )
    if every_seconds < 60:
        raise ScheduleError(
            "every_seconds must be at least 60 (EventBridge fires at most once a minute)"
        )
    if every_seconds % 60:
        lower, upper = every_seconds // 60 * 60, (every_seconds // 60 + 1) * 60
        raise ScheduleError(
            f"every_seconds must be a multiple of 60 (EventBridge rates are whole minutes); "
            f"{every_seconds} is not: use {lower} or {upper}"
        )
    minutes = every_seconds // 60
    value, unit = (
        (minutes // 1440, "day")
        if minutes % 1440 == 0
        else (minutes // 60, "hour")
        if minutes % 60 == 0
        else (minutes, "minute")
    )
    expression = f"rate({value} {unit}{'' if value == 1 else 's'})"
    return ScheduleSpec(expression, "UTC", False, _describe_rate(every_seconds))


def _rate_interval(match: re.Match[str]) -> timedelta:
    value, unit = int(match.group(1)), match.group(2).lower().rstrip("s")
    if value < 1:
        raise ScheduleError(f"'{match.group(0)}': the rate must be at least 1")
    return timedelta(**{f"{unit}s": value})


def _describe_rate(seconds: int) -> str:
    minutes = seconds // 60
    for size, unit in ((1440, "day"), (60, "hour"), (1, "minute")):
        if minutes % size == 0:
            count = minutes // size
            return f"every {unit}" if count == 1 else f"every {count} {unit}s"
    raise AssertionError("unreachable")  # pragma: no cover


def _build_at(at: str, default_tz: str, now: datetime) -> ScheduleSpec:
    text = at.strip()
    if text[-1:] == "z":
        text = text[:-1] + "Z"
    invalid = ScheduleError(f"at '{at}' is not an ISO date-time such as 2026-12-01T09:00")
    if not _AT_INPUT.match(text):
        raise invalid
    try:
        parsed = datetime.fromisoformat(text).replace(microsecond=0)
    except ValueError:
        raise invalid from None
    if parsed.tzinfo is not None:  # an explicit offset: expressed in UTC
        zone_name, instant = "UTC", parsed.astimezone(UTC)
        local = instant.replace(tzinfo=None)
    else:
        zone_name, zone = default_tz, _zone(default_tz)
        instant = parsed.replace(tzinfo=zone).astimezone(UTC)
        local = parsed
        if instant.astimezone(zone).replace(tzinfo=None) != parsed:
            raise ScheduleError(
                f"at '{at}' does not exist in {zone_name} (the clocks go forward then); "
                "give another time"
            )
    if instant < now + AT_GRACE:
        shown = now.astimezone(_zone(zone_name)).strftime("%Y-%m-%d %H:%M")
        raise ScheduleError(
            f"at '{at}' is in the past (or less than 30 seconds away): it is now {shown} in "
            f"{zone_name}"
        )
    expression = f"at({local.strftime('%Y-%m-%dT%H:%M:%S')})"
    return ScheduleSpec(expression, zone_name, True, _describe_at(local, zone_name))


def _describe_at(local: datetime, zone_name: str) -> str:
    shown = local.strftime("%Y-%m-%d %H:%M" + (":%S" if local.second else ""))
    return f"once at {shown} ({zone_name})"


# --- cron -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Field:
    name: str
    lo: int
    hi: int
    allowed: str  # the valid values, as told to the model
    names: Mapping[str, int]


_MINUTE = _Field("minute", 0, 59, "0-59", {})
_HOUR = _Field("hour", 0, 23, "0-23", {})
_DOM = _Field("day-of-month", 1, 31, "1-31", {})
_MONTH = _Field(
    "month", 1, 12, "1-12 or JAN-DEC", {name: i + 1 for i, name in enumerate(_MONTH_NAMES)}
)
_DOW_CRONTAB = _Field(
    "day-of-week",
    0,
    7,
    "0-7 or SUN-SAT, 0 and 7 being Sunday",
    {name: i for i, name in enumerate(_DAY_NAMES)},
)
_DOW_EVENTBRIDGE = _Field(
    "day-of-week",
    1,
    7,
    "1-7 or SUN-SAT, 1 being Sunday, in EventBridge's 6-field form",
    {name: i + 1 for i, name in enumerate(_DAY_NAMES)},
)
_YEAR = _Field("year", 1970, LAST_YEAR, f"1970-{LAST_YEAR}", {})
_ALL_DAYS = frozenset(range(1, 32))
_ALL_WEEKDAYS = frozenset(range(1, 8))


@dataclass(frozen=True)
class _Cron:
    """EventBridge fields as sets; None is `?` (dom, dow) or `*` (year). dow: 1 = Sunday."""

    minutes: frozenset[int]
    hours: frozenset[int]
    dom: frozenset[int] | None
    months: frozenset[int]
    dow: frozenset[int] | None
    years: frozenset[int] | None

    def expression(self) -> str:
        fields = (
            _render(self.minutes, _MINUTE),
            _render(self.hours, _HOUR),
            "?" if self.dom is None else _render(self.dom, _DOM),
            _render(self.months, _MONTH),
            "?" if self.dow is None else _render(self.dow, _DOW_EVENTBRIDGE, _DAY_NAMES),
            "*" if self.years is None else _render(self.years, _YEAR),
        )
        return f"cron({' '.join(fields)})"

    def matches_day(self, day: date) -> bool:
        if self.dom is None:
            assert self.dow is not None
            return (day.weekday() + 1) % 7 + 1 in self.dow  # Monday 0 → 2 ... Sunday 6 → 1
        return day.day in self.dom


def _parse_cron(raw: str) -> _Cron:
    shown = raw.strip()
    wrapped = _CRON.fullmatch(shown)
    fields = (wrapped.group(1) if wrapped else shown).split()
    if wrapped and len(fields) != 6:
        raise _cron_error(
            shown,
            f"cron(...) takes EventBridge's 6 fields (minute hour day-of-month month "
            f"day-of-week year), got {len(fields)}; for a 5-field crontab drop the cron(...)",
        )
    if len(fields) == 6:
        return _parse_eventbridge(fields, shown)
    if len(fields) != 5:
        raise _cron_error(
            shown,
            f"expected 5 fields (minute hour day-of-month month day-of-week), got {len(fields)}",
        )
    return _parse_crontab(fields, shown)


def _parse_crontab(fields: list[str], shown: str) -> _Cron:
    minute, hour, dom_text, month, dow_text = (field.upper() for field in fields)
    for text, spec in ((minute, _MINUTE), (hour, _HOUR), (month, _MONTH)):
        _refuse_question_mark(text, spec, shown)
    # A crontab has no `?`; read one in a day field as `*` (it means "no restriction").
    dom = _parse_field("*" if dom_text == "?" else dom_text, _DOM, shown)
    dow_crontab = _parse_field("*" if dow_text == "?" else dow_text, _DOW_CRONTAB, shown)
    dow = frozenset(value % 7 + 1 for value in dow_crontab)  # 0 and 7 → 1 (SUN), 1 → 2 ...
    if dow == _ALL_WEEKDAYS:
        dom_selected, dow_selected = dom, None
    elif dom == _ALL_DAYS:
        dom_selected, dow_selected = None, dow
    else:
        raise _cron_error(
            shown,
            "a crontab with both day-of-month and day-of-week runs when EITHER matches, which "
            "EventBridge cannot express; use '*' in one of them, or create two jobs: "
            f"'{minute} {hour} {dom_text} {month} *' and '{minute} {hour} * {month} {dow_text}'",
        )
    return _Cron(
        minutes=_parse_field(minute, _MINUTE, shown),
        hours=_parse_field(hour, _HOUR, shown),
        dom=dom_selected,
        months=_parse_field(month, _MONTH, shown),
        dow=dow_selected,
        years=None,
    )


def _parse_eventbridge(fields: list[str], shown: str) -> _Cron:
    minute, hour, dom_text, month, dow_text, year = (field.upper() for field in fields)
    for text, spec in ((minute, _MINUTE), (hour, _HOUR), (month, _MONTH), (year, _YEAR)):
        _refuse_question_mark(text, spec, shown)
    if (dom_text == "?") == (dow_text == "?"):
        raise _cron_error(
            shown,
            "EventBridge needs '?' in exactly one of day-of-month and day-of-week "
            "(minute hour day-of-month month day-of-week year), e.g. cron(0 9 ? * MON-FRI *)",
        )
    return _Cron(
        minutes=_parse_field(minute, _MINUTE, shown),
        hours=_parse_field(hour, _HOUR, shown),
        dom=None if dom_text == "?" else _parse_field(dom_text, _DOM, shown),
        months=_parse_field(month, _MONTH, shown),
        dow=None if dow_text == "?" else _parse_field(dow_text, _DOW_EVENTBRIDGE, shown),
        years=None if year == "*" else _parse_field(year, _YEAR, shown),
    )


def _refuse_question_mark(text: str, spec: _Field, shown: str) -> None:
    if "?" in text:
        raise _cron_error(
            shown, f"'?' is only allowed in day-of-month or day-of-week, not in {spec.name}"
        )


def _parse_field(text: str, spec: _Field, shown: str) -> frozenset[int]:
    """`*`, `n`, `a-b`, lists, `*/n`, `a-b/n`, `a/n` (a to the end); names in month and dow."""
    if "?" in text:
        raise _cron_error(shown, f"{spec.name} '{text}': '?' must stand alone")
    values: set[int] = set()
    for item in text.split(","):
        base, slash, step_text = item.partition("/")
        step = 1
        if slash:
            if not _NUMBER.fullmatch(step_text) or int(step_text) == 0:
                raise _cron_error(
                    shown, f"{spec.name} '{item}': the step after '/' must be a positive number"
                )
            step = int(step_text)
        if base == "*":
            lo, hi = spec.lo, spec.hi
        elif "-" in base:
            first, _, last = base.partition("-")
            lo, hi = _value(first, spec, shown), _value(last, spec, shown)
            if spec is _DOW_CRONTAB and hi == 0 < lo:
                hi = 7  # FRI-SUN, 5-0: up to Sunday
            if lo > hi:
                raise _cron_error(
                    shown,
                    f"{spec.name} range '{base}' goes backwards; write it low-high, or as a list",
                )
        else:
            lo = _value(base, spec, shown)
            hi = spec.hi if slash else lo
        values.update(range(lo, hi + 1, step))
    return frozenset(values)


def _value(token: str, spec: _Field, shown: str) -> int:
    if _NUMBER.fullmatch(token):
        value = int(token)
    elif token in spec.names:
        value = spec.names[token]
    elif (_UNSUPPORTED.search(token) and not token.isalpha()) or token in ("L", "W", "LW"):
        raise _cron_error(
            shown,
            f"{spec.name} '{token}': L, W and # are not supported here; use a plain list or range",
        )
    elif token == "":
        raise _cron_error(shown, f"{spec.name} has an empty value (check the commas and dashes)")
    elif token.isalpha() and spec.names:
        raise _cron_error(shown, f"{spec.name} has unknown name '{token}' (use {spec.allowed})")
    else:
        raise _cron_error(shown, f"{spec.name} must be {spec.allowed} (got '{token}')")
    if not spec.lo <= value <= spec.hi:
        raise _cron_error(shown, f"{spec.name} must be {spec.allowed} (got {token})")
    return value


def _cron_error(shown: str, message: str) -> ScheduleError:
    return ScheduleError(f"cron_expr '{shown}': {message}")


def _render(values: frozenset[int], spec: _Field, names: tuple[str, ...] = ()) -> str:
    """EventBridge text for a set: `*`, `start/step` to the field's end, or a list of ranges."""
    ordered = sorted(values)
    if len(ordered) == spec.hi - spec.lo + 1:
        return "*"
    step = _uniform_step(ordered)
    if not names and step is not None and ordered[-1] + step > spec.hi:
        return f"{ordered[0]}/{step}"

    def label(value: int) -> str:
        return names[value - spec.lo] if names else str(value)

    return ",".join(
        f"{label(run[0])}-{label(run[-1])}" if len(run) >= 3 else ",".join(map(label, run))
        for run in _runs(ordered)
    )


def _uniform_step(ordered: list[int]) -> int | None:
    """n when the values are evenly spaced by n > 1 (at least three of them)."""
    if len(ordered) < 3:
        return None
    steps = {b - a for a, b in pairwise(ordered)}
    step = steps.pop()
    return step if not steps and step > 1 else None


def _runs(ordered: Iterable[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for value in ordered:
        if runs and runs[-1][-1] + 1 == value:
            runs[-1].append(value)
        else:
            runs.append([value])
    return runs


def _next_cron(cron: _Cron, zone: ZoneInfo, after: datetime) -> datetime | None:
    """Walk the matching days, then their times, in wall-clock order from `after`'s day.

    Existing local times map to increasing instants (fold=0), so the first candidate after
    `after` is the answer; a nonexistent local time does not survive the round trip and is
    skipped; a repeated one is only ever tried once, as its first occurrence (fold=0).
    """
    start = after.astimezone(zone)
    start_day = start.date()
    start_wall = start.replace(tzinfo=None, second=0, microsecond=0)
    hours, minutes = sorted(cron.hours), sorted(cron.minutes)
    for year in range(start.year, LAST_YEAR + 1):
        if cron.years is not None and year not in cron.years:
            continue
        for month in sorted(cron.months):
            if (year, month) < (start.year, start.month):
                continue
            for day_number in range(1, calendar.monthrange(year, month)[1] + 1):
                day = date(year, month, day_number)
                if day < start_day or not cron.matches_day(day):
                    continue
                for hour in hours:
                    for minute in minutes:
                        wall = datetime(year, month, day_number, hour, minute)
                        if wall < start_wall:
                            continue
                        instant = wall.replace(tzinfo=zone).astimezone(UTC)
                        if instant.astimezone(zone).replace(tzinfo=None) != wall:
                            continue  # does not exist: the clocks went forward
                        if instant > after:
                            return instant
    return None


def _describe_cron(cron: _Cron, zone_name: str) -> str:
    parts = [_describe_times(sorted(cron.minutes), sorted(cron.hours))]
    if cron.dom is None and cron.dow is not None and cron.dow != _ALL_WEEKDAYS:
        monday_first = sorted((value - 2) % 7 for value in cron.dow)  # Monday 0 ... Sunday 6
        parts.append("on " + _runs_text(monday_first, lambda i: _DAY_NAMES[(i + 1) % 7].title()))
    elif cron.dom is not None and cron.dom != _ALL_DAYS:
        noun = "day" if len(cron.dom) == 1 else "days"
        parts.append(f"on {noun} {_runs_text(sorted(cron.dom), str)} of the month")
    elif parts[0].startswith("at "):
        parts.append("every day")
    if len(cron.months) < 12:
        parts.append("in " + _runs_text(sorted(cron.months), lambda m: _MONTH_NAMES[m - 1].title()))
    if cron.years is not None:
        parts.append("in " + _runs_text(sorted(cron.years), str))
    return f"{' '.join(parts)} ({zone_name})"


def _describe_times(minutes: list[int], hours: list[int]) -> str:
    minute_step = _step_from_zero(minutes, 60)
    if len(minutes) == 60:
        every = "every minute"
    elif minute_step:
        every = f"every {minute_step} minutes"
    elif len(minutes) == 1:
        every = f"at :{minutes[0]:02d}"
    else:
        every = "at minutes " + ", ".join(f":{m:02d}" for m in minutes)
    if len(hours) == 24:
        return every if len(minutes) == 60 or minute_step else f"every hour {every}"
    if len(minutes) * len(hours) <= 4:
        times = [f"{h:02d}:{m:02d}" for h in hours for m in minutes]
        return "at " + (", ".join(times[:-1]) + " and " + times[-1] if len(times) > 1 else times[0])
    hour_step = _step_from_zero(hours, 24)
    if hour_step and len(minutes) == 1:
        return f"every {hour_step} hours {every}"
    return f"{every} during hours {_runs_text(hours, str)}"


def _step_from_zero(values: list[int], size: int) -> int | None:
    """n when the values are exactly 0, n, 2n ... (n > 1 dividing size)."""
    if len(values) < 2 or values[0] != 0:
        return None
    step = values[1]
    return step if size % step == 0 and values == list(range(0, size, step)) else None


def _runs_text(ordered: list[int], label: Callable[[int], str]) -> str:
    return ", ".join(
        f"{label(run[0])}-{label(run[-1])}" if len(run) >= 3 else ", ".join(map(label, run))
        for run in _runs(ordered)
    )


# --- helpers ----------------------------------------------------------------------------------


def _given(value: str | None) -> str | None:
    return value if value is not None and value.strip() else None


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise ScheduleError(
            f"unknown timezone '{name}' (use an IANA name such as Europe/Paris)"
        ) from None


def _require_aware(moment: datetime, name: str) -> None:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime")


def _expression_and_zone(value: ScheduleSpec | tuple[str, str]) -> tuple[str, str]:
    if isinstance(value, ScheduleSpec):
        return value.expression, value.timezone
    expression, zone_name = value
    return expression, zone_name
