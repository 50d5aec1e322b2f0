"""Spending limits: no model work past a daily or monthly limit in dollars, for each chat and for
all chats together (`SPEND_LIMIT_*`).

The usage meter checks them before every model call of agent_turn (`UsageMeter.check_spend`,
through `MeteredModel`: the turns, the heartbeat's decision, scheduled and background tasks,
consolidation) against the usage counters: the chat's own and, with an overall limit, those of
all chats together. With a limit set, each call's usage is written as soon as the call returns
instead of when the turn is saved, so turns running side by side see each other's spending:
together they pass a limit by at most the calls they had in flight.

Past a limit the model is not called (`SpendLimitReached`, a `ModelError`): a turn ends with a
note, keeping and saving what it did; the chat is told once per period and the owner once per
limit and period; nothing else asks the model until the period turns (days and months in
TIMEZONE). Calls of a model litellm has no price for cost nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Literal

from nanobot_lambda.core import texts
from nanobot_lambda.core.errors import ModelError

if TYPE_CHECKING:
    from nanobot_lambda.core.usage_counts import UsageSummary

Who = Literal["chat", "everyone"]
Period = Literal["day", "month"]


@dataclass(frozen=True)
class SpendLimits:
    daily: Decimal | None = None  # all chats together
    monthly: Decimal | None = None
    person_daily: Decimal | None = None  # each chat
    person_monthly: Decimal | None = None

    @property
    def overall(self) -> bool:
        return self.daily is not None or self.monthly is not None

    @property
    def per_chat(self) -> bool:
        return self.person_daily is not None or self.person_monthly is not None

    @property
    def any(self) -> bool:
        return self.overall or self.per_chat


@dataclass(frozen=True)
class LimitReached:
    """Which limit stopped the model: whose (the chat's own, or everyone's), which period."""

    who: Who
    period: Period
    period_key: str  # the day (YYYY-MM-DD) or month (YYYY-MM) it holds for
    limit: Decimal
    spent: Decimal
    chat_id: int

    @property
    def notice_key(self) -> str:
        """One notice per limit and period (for a chat's own limit, the chat is in the key of
        the item it is recorded under)."""
        return f"{self.who}#{self.period}#{self.period_key}"

    def notice(self) -> str:
        """What the chat is told."""
        return texts.render(f"spend_limit_{self.who}_{self.period}", limit=dollars(self.limit))

    def owner_notice(self) -> str:
        """What the owner is told."""
        return texts.render(
            f"spend_limit_owner_{self.who}",
            chat=self.chat_id,
            period=texts.load(f"spend_period_{self.period}"),
            spent=dollars(self.spent),
            limit=dollars(self.limit),
        )


class SpendLimitReached(ModelError):
    """The model was not called: a spending limit is reached."""

    def __init__(self, reached: LimitReached) -> None:
        super().__init__(f"spending limit reached ({reached.who}, {reached.period})")
        self.reached = reached


def first_reached(
    limits: SpendLimits,
    chat_id: int,
    chat: UsageSummary | None,
    overall: UsageSummary | None,
    pending: Decimal = Decimal(0),
) -> LimitReached | None:
    """The first limit that the chat's spending (`chat`) or everyone's (`overall`) has reached,
    counting `pending` (spent by this job, not yet recorded); None if none."""
    for limit, who, period, summary in _limits(limits, chat, overall):
        tally = summary.today if period == "day" else summary.this_month
        spent = tally.cost_usd + pending
        if spent >= limit:
            key = summary.day if period == "day" else summary.month
            return LimitReached(who, period, key, limit, spent, chat_id)
    return None


def _limits(
    limits: SpendLimits, chat: UsageSummary | None, overall: UsageSummary | None
) -> list[tuple[Decimal, Who, Period, UsageSummary]]:
    """Each limit that is set, with the figures it holds for (when they were read)."""
    candidates: list[tuple[Decimal | None, Who, Period, UsageSummary | None]] = [
        (limits.person_daily, "chat", "day", chat),
        (limits.person_monthly, "chat", "month", chat),
        (limits.daily, "everyone", "day", overall),
        (limits.monthly, "everyone", "month", overall),
    ]
    return [
        (limit, who, period, summary)
        for limit, who, period, summary in candidates
        if limit is not None and summary is not None
    ]


def remaining(limits: SpendLimits, chat: UsageSummary | None, overall: UsageSummary | None) -> str:
    """The /usage lines on what is left of each limit that is set."""
    lines = []
    for limit, who, period, summary in _limits(limits, chat, overall):
        spent = (summary.today if period == "day" else summary.this_month).cost_usd
        left = dollars(max(limit - spent, Decimal(0)))
        lines.append(texts.render(f"spend_left_{who}_{period}", left=left, limit=dollars(limit)))
    return "\n".join(lines)


def dollars(amount: Decimal) -> str:
    """Cents, or tenths of a cent for what is smaller."""
    return f"${amount:.2f}" if amount >= Decimal("0.01") or not amount else f"${amount:.4f}"
