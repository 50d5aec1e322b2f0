"""Spending: a chat's usage per day (the last 31) and per month (the last 12), against the
spending limits; in the owner's own scope also each chat's this month and all chats together.

The figures are the usage counters `/usage` reads (core/usage_counts.py, one Query a chat):
litellm's prices, days and months of TIMEZONE. They are kept per chat, not per model, so the
console cannot split them by model.
"""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from nanobot_lambda.core.allowlist import AllowList
from nanobot_lambda.core.spend import SpendLimits
from nanobot_lambda.core.usage_counts import Tally
from nanobot_lambda.functions.console.auth import ChatScope
from nanobot_lambda.functions.console.chats import known_chats
from nanobot_lambda.functions.console.ports import ConsolePorts

DAYS_SHOWN = 31
MONTHS_SHOWN = 12


class SpendingViews:
    def __init__(
        self,
        ports: ConsolePorts,
        limits: SpendLimits,
        *,
        timezone: str,
        allow_list: AllowList,
        owner: int | None,
    ) -> None:
        self._ports = ports
        self._limits = limits
        self._zone = ZoneInfo(timezone)
        self._allow_list = allow_list
        self._owner = owner

    def spending(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        today = self._ports.clock().astimezone(self._zone).date()
        answer: dict[str, Any] = {
            "chat": _series(self._ports.usage.periods(target.chat_id), today),
            "limits": {
                "daily": _dollars(self._limits.daily),
                "monthly": _dollars(self._limits.monthly),
                "person_daily": _dollars(self._limits.person_daily),
                "person_monthly": _dollars(self._limits.person_monthly),
            },
        }
        if target.scope.is_owner and self._owner is not None:
            month = f"month#{today:%Y-%m}"
            chats = []
            for chat in known_chats(self._ports, self._allow_list, self._owner):
                periods = self._ports.usage.periods(chat.chat_id)
                chats.append({**chat.shown(), "this_month": _tally(periods.get(month, Tally()))})
            answer["chats"] = chats
            if self._limits.overall:  # all chats together are counted only then
                answer["everyone"] = _series(self._ports.usage.periods(None), today)
        return answer


def _series(periods: dict[str, Tally], today: date) -> dict[str, Any]:
    days = [today - timedelta(days=back) for back in range(DAYS_SHOWN - 1, -1, -1)]
    months = _months(today)
    return {
        "days": [
            {"day": f"{day:%Y-%m-%d}", **_tally(periods.get(f"day#{day:%Y-%m-%d}", Tally()))}
            for day in days
        ],
        "months": [
            {"month": month, **_tally(periods.get(f"month#{month}", Tally()))} for month in months
        ],
        "total": _tally(periods.get("total", Tally())),
    }


def _months(today: date) -> list[str]:
    year, month = today.year, today.month
    found = []
    for _ in range(MONTHS_SHOWN):
        found.append(f"{year:04d}-{month:02d}")
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    return found[::-1]


def _tally(tally: Tally) -> dict[str, Any]:
    return {
        "cost_usd": float(tally.cost_usd),
        "turns": tally.turns,
        "model_calls": tally.model_calls,
        "prompt_tokens": tally.prompt_tokens,
        "completion_tokens": tally.completion_tokens,
        "unpriced_calls": tally.unpriced_calls,
    }


def _dollars(amount: Decimal | None) -> float | None:
    return None if amount is None else float(amount)
