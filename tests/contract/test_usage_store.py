"""The UsageStore port: DynamoUsageStore on moto server and MemoryUsageStore alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

from nanobot_lambda.core.ports import SessionStore, UsageStore
from nanobot_lambda.core.usage_counts import Tally, UsageSummary
from tests.contract.conftest import UsageFactory

ADA, BOB = 111111111, -1001234567890
AT = datetime(2026, 11, 26, 9, 30, tzinfo=UTC)
CALL = Tally(model_calls=1, prompt_tokens=1200, completion_tokens=80, cost_usd=Decimal("0.0042"))
TURN = Tally(turns=1, tool_calls=2, cached_tokens=1000, unpriced_calls=1, model_calls=1)


def test_nothing_counted_is_an_empty_summary(usage: UsageStore) -> None:
    assert usage.summary(ADA, AT) == UsageSummary(
        ADA, "2026-11-26", "2026-11", today=Tally(), this_month=Tally(), total=Tally()
    )
    assert usage.overall_summary(AT) == UsageSummary(
        0, "2026-11-26", "2026-11", today=Tally(), this_month=Tally(), total=Tally()
    )
    assert usage.chats() == []


def test_counts_add_up_per_day_month_and_total(usage: UsageStore) -> None:
    usage.add(ADA, CALL, AT)
    usage.add(ADA, TURN, AT)
    usage.add(ADA, CALL, AT + timedelta(days=1))  # tomorrow, the same month
    usage.add(ADA, CALL, AT + timedelta(days=10))  # next month
    usage.add(BOB, TURN, AT)
    summary = usage.summary(ADA, AT + timedelta(days=1))
    assert summary == UsageSummary(
        ADA,
        "2026-11-27",
        "2026-11",
        today=CALL,
        this_month=CALL + TURN + CALL,
        total=CALL + TURN + CALL + CALL,
    )
    assert summary.total.cost_usd == Decimal("0.0126")  # exact: no float rounding
    assert usage.summary(BOB, AT).total == TURN
    assert usage.chats() == [BOB, ADA]


def test_all_chats_together_only_when_asked(usage: UsageStore) -> None:
    usage.add(ADA, CALL, AT)  # no limit needs everyone's figures: not counted for them
    usage.add(ADA, CALL, AT, overall=True)
    usage.add(BOB, TURN, AT, overall=True)
    overall = usage.overall_summary(AT)
    assert overall.chat_id == 0 and overall.today == CALL + TURN == overall.total
    assert usage.summary(ADA, AT).today == CALL + CALL
    assert usage.chats() == [BOB, ADA]  # everyone's figures are no chat


def test_days_and_months_are_those_of_the_configured_time_zone(usage_store: UsageFactory) -> None:
    tokyo = usage_store("Asia/Tokyo")  # UTC+9
    tokyo.add(ADA, CALL, datetime(2026, 11, 30, 23, 30, tzinfo=UTC))  # 1 December, 08:30 there
    summary = tokyo.summary(ADA, datetime(2026, 12, 1, 0, 30, tzinfo=UTC))
    assert (summary.day, summary.month) == ("2026-12-01", "2026-12")
    assert summary.today == CALL == summary.this_month


def test_a_time_given_in_another_zone_counts_in_the_store_s(usage_store: UsageFactory) -> None:
    utc = usage_store("UTC")
    # 1 December 01:00 at UTC+2 is still 30 November in UTC.
    utc.add(ADA, CALL, datetime(2026, 12, 1, 1, 0, tzinfo=timezone(timedelta(hours=2))))
    summary = utc.summary(ADA, datetime(2026, 11, 30, 23, 30, tzinfo=UTC))
    assert (summary.day, summary.today, summary.this_month) == ("2026-11-30", CALL, CALL)


def test_a_notice_is_first_once_per_key_but_again_for_the_same_turn(usage: UsageStore) -> None:
    assert usage.first_notice(ADA, "chat-day-2026-11-26", "t1", AT)
    assert usage.first_notice(ADA, "chat-day-2026-11-26", "t1", AT)  # that turn, retried
    assert not usage.first_notice(ADA, "chat-day-2026-11-26", "t2", AT)
    assert usage.first_notice(ADA, "chat-day-2026-11-27", "t2", AT)
    assert usage.first_notice(BOB, "chat-day-2026-11-26", "t3", AT)  # another chat


def test_updates_are_counted_by_the_append_that_saves_the_turn(
    usage_and_sessions: tuple[UsageStore, SessionStore],
) -> None:
    usage, sessions = usage_and_sessions
    writes = usage.updates(ADA, TURN, AT, overall=True)
    assert usage.summary(ADA, AT).total == Tally()  # nothing counted before the save
    history = sessions.load(f"telegram:{ADA}", 10)
    sessions.append(history, [{"role": "user", "content": "hi"}], turn_id="t1", also=writes)
    assert usage.summary(ADA, AT).total == TURN
    assert usage.overall_summary(AT).total == TURN


def test_every_period_of_a_chat_for_the_console_s_charts(usage: UsageStore) -> None:
    usage.add(ADA, CALL, AT)
    usage.add(ADA, CALL, AT + timedelta(days=10), overall=True)  # next month
    usage.add(BOB, TURN, AT)
    usage.first_notice(ADA, "day-limit", "update-1", AT)  # a notice is no period
    assert usage.periods(ADA) == {
        "day#2026-11-26": CALL,
        "day#2026-12-06": CALL,
        "month#2026-11": CALL,
        "month#2026-12": CALL,
        "total": CALL + CALL,
    }
    assert usage.periods(BOB) == {"day#2026-11-26": TURN, "month#2026-11": TURN, "total": TURN}
    assert usage.periods(None) == {"day#2026-12-06": CALL, "month#2026-12": CALL, "total": CALL}
    assert usage.periods(222) == {}


def test_each_model_s_month_is_its_own_and_not_in_the_chat_s_summary(usage: UsageStore) -> None:
    usage.add(ADA, CALL + CALL, AT, by_model={"openai/gpt-4o-mini": CALL, "claude/haiku": CALL})
    usage.add(ADA, CALL, AT + timedelta(days=10), by_model={"openai/gpt-4o-mini": CALL})
    usage.add(BOB, CALL, AT, by_model={"openai/gpt-4o-mini": CALL})
    assert usage.models(ADA, AT) == {"openai/gpt-4o-mini": CALL, "claude/haiku": CALL}
    assert usage.models(ADA, AT + timedelta(days=10)) == {"openai/gpt-4o-mini": CALL}
    assert usage.models(222, AT) == {}
    assert usage.summary(ADA, AT).this_month == CALL + CALL  # counted once, in the chat's
    assert usage.periods(ADA)["by-model#2026-11#claude/haiku"] == CALL
    assert "by-model#2026-11#claude/haiku" not in (usage.periods(None) or {})
