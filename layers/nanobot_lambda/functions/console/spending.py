"""Spending: a chat's usage per day (the last 31) and per month (the last 12), against the
spending limits; in the owner's own scope also each chat's this month and all chats together.

The figures are the usage counters `/usage` reads (core/usage_counts.py, one Query a chat):
litellm's prices, days and months of TIMEZONE. A chat's months are also split by the model that
answered (`models`: this month's, the chat models' calls only: speech, transcription, images and
embeddings are in the chat's figures, under no model); the owner's view adds up every chat's.
"""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from nanobot_lambda.core.allowlist import AllowList
from nanobot_lambda.core.spend import SpendLimits
from nanobot_lambda.core.usage_counts import MODEL_PREFIX, Tally, add_by_model
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
        month = f"{today:%Y-%m}"
        periods = self._ports.usage.periods(target.chat_id)
        answer: dict[str, Any] = {
            "chat": _series(periods, today),
            "models": _models([periods], month),
            "limits": {
                "daily": _dollars(self._limits.daily),
                "monthly": _dollars(self._limits.monthly),
                "person_daily": _dollars(self._limits.person_daily),
                "person_monthly": _dollars(self._limits.person_monthly),
            },
        }
        if target.scope.is_owner and self._owner is not None:
            chats, every = [], []
            for chat in known_chats(self._ports, self._allow_list, self._owner):
                found = self._ports.usage.periods(chat.chat_id)
                every.append(found)
                this_month = _tally(found.get(f"month#{month}", Tally()))
                chats.append({**chat.shown(), "this_month": this_month})
            answer["chats"] = chats
            answer["everyone_models"] = _models(every, month)
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


def _models(chats: list[dict[str, Tally]], month: str) -> list[dict[str, Any]]:
    """The month's figures per model, added up over `chats`, the costliest first."""
    prefix = f"{MODEL_PREFIX}{month}#"
    models: dict[str, Tally] = {}
    for periods in chats:
        found = {
            key[len(prefix) :]: tally for key, tally in periods.items() if key.startswith(prefix)
        }
        add_by_model(models, found)
    ranked = sorted(models.items(), key=lambda pair: (-pair[1].cost_usd, pair[0]))
    return [{"model": model, **_tally(tally)} for model, tally in ranked]


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
