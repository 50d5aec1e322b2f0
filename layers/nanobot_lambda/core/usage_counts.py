"""Usage counts and where they are kept: the `Tally` of a period, a chat's `UsageSummary`, and
the `UsageStore` port (`adapters/aws/usage.py`: DynamoDB).

Apart from core/usage.py (the meter that counts, and the /usage texts) so that core/spend.py,
which core/usage.py imports, can read a summary without importing the meter back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from decimal import Decimal, localcontext
from typing import Protocol

from nanobot_lambda.core.model import Usage
from nanobot_lambda.core.stored_writes import StoredWrite

DYNAMODB_DIGITS = 38  # a DynamoDB number's precision


@dataclass(frozen=True)
class Tally:
    """Counts that add up. Each field is an attribute of the usage items."""

    turns: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    prompt_tokens: int = 0  # cached tokens included
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: Decimal = Decimal(0)  # of the calls with a known price
    unpriced_calls: int = 0  # model calls litellm had no price for

    def __add__(self, other: Tally) -> Tally:
        with localcontext(prec=DYNAMODB_DIGITS):  # exact as DynamoDB adds (Python's 28 round)
            return Tally(
                **{
                    item.name: getattr(self, item.name) + getattr(other, item.name)
                    for item in FIELDS
                }
            )

    @property
    def empty(self) -> bool:
        return self == Tally()

    @property
    def cost_known(self) -> bool:
        return self.model_calls > self.unpriced_calls

    @classmethod
    def of_call(cls, usage: Usage) -> Tally:
        priced = usage.cost_usd is not None
        return cls(
            model_calls=1,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cached_tokens=usage.cached_tokens,
            cost_usd=Decimal(repr(usage.cost_usd)) if usage.cost_usd is not None else Decimal(0),
            unpriced_calls=0 if priced else 1,
        )


FIELDS = fields(Tally)  # the attributes a store keeps per period
# A month's figures of one model (the chat models' calls: speech, transcription, images and
# embeddings count in the chat's figures only), by key `by-model#YYYY-MM#<model>` in `periods`.
# It sorts before `day#`: a store reading from today's day on never reads them.
MODEL_PREFIX = "by-model#"
MODEL_NAME_MAX = 200  # a longer name is cut: a model's name is the operator's, models are few
ByModel = Mapping[str, Tally]


def add_by_model(counts: dict[str, Tally], more: ByModel) -> None:
    for model, tally in more.items():
        counts[model] = counts.get(model, Tally()) + tally


@dataclass(frozen=True)
class UsageSummary:
    chat_id: int
    day: str
    month: str
    today: Tally
    this_month: Tally
    total: Tally


class UsageStore(Protocol):
    """Usage counts per chat: per day, per month and in total (see `core/usage.py`), and per
    model and month (`by_model`: what of `tally` each model's calls used); with `overall`, also
    those of all chats together (kept only while a limit needs them, see `core/spend.py`)."""

    def updates(
        self,
        chat_id: int,
        tally: Tally,
        at: datetime,
        *,
        overall: bool = False,
        by_model: ByModel | None = None,
    ) -> list[StoredWrite]:
        """The writes that add `tally`, to be made with the transaction saving a turn."""
        ...

    def add(
        self,
        chat_id: int,
        tally: Tally,
        at: datetime,
        *,
        overall: bool = False,
        by_model: ByModel | None = None,
    ) -> None: ...

    def summary(self, chat_id: int, at: datetime) -> UsageSummary: ...

    def overall_summary(self, at: datetime) -> UsageSummary:
        """All chats together (counted while `overall` was passed), as chat 0."""
        ...

    def models(self, chat_id: int, at: datetime) -> dict[str, Tally]:
        """The chat's figures of each model this month (the month of `at`), by model."""
        ...

    def first_notice(self, chat_id: int, key: str, turn_id: str, at: datetime) -> bool:
        """Record that the chat was told `key` (a spending limit reached in a period); True
        the first time, and again for the same turn (a retry of the turn that tells it)."""
        ...

    def periods(self, chat_id: int | None) -> dict[str, Tally]:
        """Every period the chat's counters hold (None: all chats together, as counted while
        `overall` was passed), by key: `day#YYYY-MM-DD` (the last 400 days), `month#YYYY-MM`,
        `total`; and the chat's months per model, `by-model#YYYY-MM#<model>`. The console's
        spending charts."""
        ...

    def chats(self) -> list[int]:
        """Every chat with recorded usage (for the operator)."""
        ...
