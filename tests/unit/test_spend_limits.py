"""Spending limits (core/spend.py): which limit is reached, what /usage says is left, and through
agent_turn's turns on in-memory fakes: no model call past a limit, a turn cut short keeps what
it did, the chat is told once per period and the owner once, background work stops too.

The owner is ALLOW_FROM's first user id (Ada, 111111111, in test_turns.Bot); "Bob" is a second
allowed person."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from nanobot_lambda.adapters.telegram.formatting import html_to_plain_text
from nanobot_lambda.core.jobs import HeartbeatJob, TelegramUpdateJob
from nanobot_lambda.core.model import ModelReply, Usage
from nanobot_lambda.core.spend import LimitReached, SpendLimits, first_reached, remaining
from nanobot_lambda.core.usage_counts import Tally, UsageSummary
from nanobot_lambda.settings import AgentSettings
from tests.conftest import telegram_update
from tests.support.fakes import OVERALL, RecordingSpeaker, ScriptedModel, tool
from tests.support.settings import AGENT_ENV
from tests.unit.test_turns import ADA, Bot, message

BOB = 222222222
NOON = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def summary(chat_id: int, today: str, month: str) -> UsageSummary:
    return UsageSummary(
        chat_id,
        "2026-11-23",
        "2026-11",
        today=Tally(cost_usd=Decimal(today)),
        this_month=Tally(cost_usd=Decimal(month)),
        total=Tally(cost_usd=Decimal(month)),
    )


# -- which limit ---------------------------------------------------------------------------


def test_no_limit_set_is_never_reached() -> None:
    assert first_reached(SpendLimits(), 1, summary(1, "99", "99"), None) is None


def test_a_chat_reaches_its_daily_limit_before_its_monthly_one() -> None:
    limits = SpendLimits(person_daily=Decimal("1"), person_monthly=Decimal("5"))
    assert first_reached(limits, 1, summary(1, "0.99", "4.00"), None) is None
    reached = first_reached(limits, 1, summary(1, "1.00", "5.00"), None)
    assert reached == LimitReached("chat", "day", "2026-11-23", Decimal(1), Decimal(1), 1)
    monthly = first_reached(limits, 1, summary(1, "0.10", "5.00"), None)
    assert monthly is not None and (monthly.period, monthly.period_key) == ("month", "2026-11")


def test_what_the_job_spent_but_did_not_record_counts() -> None:
    limits = SpendLimits(person_daily=Decimal("1"))
    assert first_reached(limits, 1, summary(1, "0.6", "0.6"), None, Decimal("0.39")) is None
    assert first_reached(limits, 1, summary(1, "0.6", "0.6"), None, Decimal("0.4")) is not None


def test_everyone_s_limit_holds_whatever_the_chat_spent() -> None:
    limits = SpendLimits(monthly=Decimal("20"), person_daily=Decimal("1"))
    reached = first_reached(limits, 7, summary(7, "0", "0"), summary(0, "3", "20.5"))
    assert reached is not None and (reached.who, reached.period, reached.chat_id) == (
        "everyone",
        "month",
        7,
    )
    assert reached.notice_key == "everyone#month#2026-11"
    assert "$20.00" in reached.notice() and "next month" in reached.notice()
    assert "$20.50 of $20.00" in reached.owner_notice()


def test_usage_tells_what_is_left_of_each_limit_set() -> None:
    limits = SpendLimits(daily=Decimal("5"), person_daily=Decimal("1"))
    lines = remaining(limits, summary(1, "0.25", "1"), summary(0, "6", "6")).splitlines()
    assert lines == [
        "Left today for this chat: $0.75 of $1.00",
        "Left today for everyone together: $0.00 of $5.00",
    ]


# -- through turns -------------------------------------------------------------------------


def priced(content: str | None, cost: str, *calls: Any) -> ModelReply:
    return ModelReply(content=content, tool_calls=calls, usage=Usage(10, 5, 0, float(cost)))


def said_in(bot: Bot, chat_id: int) -> list[str]:
    return [html_to_plain_text(text) for chat, text, _ in bot.channel.sent if chat == chat_id]


def limited_bot(*replies: ModelReply, **limits: str) -> Bot:
    settings = {f"SPEND_LIMIT_{name.upper()}_USD": value for name, value in limits.items()}
    # The periods of this test: noon.
    return Bot(
        ScriptedModel(*replies),
        settings={**settings, "ALLOW_FROM": f"{ADA},{BOB}"},
        clock=lambda: NOON,
    )


def from_bob(text: str, update_id: int) -> TelegramUpdateJob:
    job = message(text, update_id)
    update = job.update
    update["message"]["from"] = {**update["message"]["from"], "id": BOB, "username": "bob"}
    update["message"]["chat"] = {"id": BOB, "type": "private", "first_name": "Bob"}
    return TelegramUpdateJob(update=update)


def test_past_a_chat_s_limit_it_is_told_once_and_the_model_is_not_called() -> None:
    bot = limited_bot(priced("Hello Bob.", "0.30"), person_daily="0.25")
    bot.process(from_bob("hi", 900000001))
    bot.process(from_bob("are you there?", 900000002))
    bot.process(from_bob("hello??", 900000003))

    assert len(bot.model.requests) == 1  # only the first message reached the model
    notice = LimitReached(
        "chat", "day", "2026-11-23", Decimal("0.25"), Decimal("0.30"), BOB
    ).notice()
    assert said_in(bot, BOB) == ["Hello Bob.", notice]  # told once
    # The owner hears of it once, in their own chat.
    ada_heard = said_in(bot, ADA)
    assert len(ada_heard) == 1 and f"Chat {BOB} reached its spending limit today" in ada_heard[0]
    # Nothing the user wrote is lost: every message is in the session.
    saved = [m["content"] for m in bot.saved(f"telegram:{BOB}") if m["role"] == "user"]
    assert saved == ["hi", "are you there?", "hello??"]


def test_the_owner_past_their_own_limit_is_told_once_in_their_chat() -> None:
    bot = limited_bot(priced("Hi.", "0.30"), person_daily="0.25")
    bot.process(message("hi", 900000001))
    bot.process(message("again", 900000002))
    assert len(bot.said) == 2 and "spending limit for today ($0.25)" in bot.said[1]


def test_a_limit_reached_mid_turn_ends_it_with_what_it_did_kept() -> None:
    bot = limited_bot(
        priced(None, "0.20", *tool("list_dir", "{}").tool_calls),
        priced("Not reached.", "0.20"),
        person_daily="0.15",
    )
    bot.process(from_bob("what is in my workspace?", 900000001))

    assert len(bot.model.requests) == 1  # the second call was not made
    roles = [m["role"] for m in bot.saved(f"telegram:{BOB}")]
    assert roles == ["user", "assistant", "tool", "assistant"]  # the tool's work is kept
    assert "spending limit for today" in bot.saved(f"telegram:{BOB}")[-1]["content"]


def test_with_a_limit_each_call_is_recorded_at_once_for_everyone() -> None:
    """Turns running side by side see each other's spending before their next call."""
    seen: list[Tally] = []
    bot = limited_bot(
        priced(None, "0.01", *tool("list_dir", "{}").tool_calls),
        priced("Done.", "0.01"),
        daily="10",
    )
    usage = bot.usage
    real_list_dir = bot.workspace.list_dir

    def list_dir(path: str) -> Any:  # runs between the two calls, before the turn is saved
        seen.append(usage.overall_summary(NOON).today)
        return real_list_dir(path)

    bot.workspace.list_dir = list_dir  # type: ignore[method-assign]
    bot.process(message("list it", 900000001))
    assert seen and seen[0].cost_usd == Decimal("0.01") and seen[0].model_calls == 1
    assert usage.tallies[(OVERALL, "total")].cost_usd == Decimal("0.02")
    assert usage.tallies[(ADA, "total")].cost_usd == Decimal("0.02")


def test_the_heartbeat_does_no_model_work_past_a_limit() -> None:
    bot = limited_bot(priced("due", "0"), daily="0.01")
    bot.usage.add(BOB, Tally(model_calls=1, cost_usd=Decimal("0.02")), NOON, overall=True)
    bot.process(HeartbeatJob(chat_id=ADA, tasks="- check the mail", fired_at="2026-11-23T12:00"))
    assert bot.model.requests == [] and bot.said == []


def test_usage_shows_what_is_left() -> None:
    bot = limited_bot(priced("Hi.", "0.10"), person_monthly="1")
    bot.process(message("hi", 900000001))
    bot.process(message("/usage", 900000002))
    assert bot.said[-1].endswith("Left this month for this chat: $0.90 of $1.00")


def test_limits_are_read_from_the_environment() -> None:
    settings = AgentSettings.from_env(
        {**AGENT_ENV, "ALLOW_FROM": f"@someone,{BOB},{ADA}", "SPEND_LIMIT_DAILY_USD": "2.5"}
    )
    assert settings.spend_limits == SpendLimits(daily=Decimal("2.5"))
    assert settings.owner == BOB  # the first user id listed
    explicit = dataclasses.replace(settings.spend_limits)
    assert explicit.overall and not explicit.per_chat
    owner = AgentSettings.from_env({**AGENT_ENV, "ALLOW_FROM": f"{BOB}", "OWNER_ID": str(ADA)})
    assert owner.owner == ADA


def test_only_the_owner_s_usage_tells_what_everyone_has_left() -> None:
    bot = limited_bot(priced("Hi.", "0.10"), priced("Hi Bob.", "0.10"), daily="5", person_daily="1")
    bot.process(message("hi", 900000001))
    bot.process(from_bob("hi", 900000002))
    bot.process(message("/usage", 900000003))
    bot.process(from_bob("/usage", 900000004))
    owner_usage, bob_usage = said_in(bot, ADA)[-1], said_in(bot, BOB)[-1]
    assert "Left today for everyone together: $4.80 of $5.00" in owner_usage
    assert "Left today for this chat: $0.90 of $1.00" in bob_usage
    assert "everyone" not in bob_usage


def test_speech_costs_count_and_stop_at_a_limit() -> None:
    """A voice reply's speech is priced (tts-1 by the character): it counts toward the limits,
    and past one the answer goes as text only."""
    voiced = Bot(
        ScriptedModel(priced("Milk is on the list.", "0.01"), priced("Noted.", "0.01")),
        speaker=RecordingSpeaker(cost_usd=0.05),
        settings={"SPEND_LIMIT_PERSON_DAILY_USD": "0.065"},
        clock=lambda: NOON,
    )
    voiced.channel.files["AwACAgQAAxkBAAIBVoice"] = b"OggS voice of the user"
    voice = TelegramUpdateJob(update=telegram_update("voice"))
    voiced.process(voice)
    assert len(voiced.channel.files_sent) == 1  # the voice reply
    assert voiced.usage.tallies[(ADA, "total")].cost_usd == Decimal("0.06")
    second = telegram_update("voice")
    second["update_id"] += 1
    second["message"]["message_id"] += 1
    voiced.process(TelegramUpdateJob(update=second))
    assert voiced.said[-1] == "Noted."
    assert len(voiced.channel.files_sent) == 1  # past the limit: no speech
    assert voiced.speaker is not None and len(voiced.speaker.spoken) == 1
