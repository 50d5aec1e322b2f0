"""What the assistant uses, per chat: turns, model and tool calls, tokens, and money.

Every model call of agent_turn goes through `MeteredModel`, so the chat's turns, the heartbeat's
decision, consolidation and background tasks are all counted, each attributed to the chat of
the job that made it (`UsageMeter.job`). A job counts as one turn when the agent loop got at
least one answer from the model (a turn continued in another invocation counts once); a command
such as /new, or a heartbeat that decided to skip, is not a turn, though its model calls are
counted. Cost is litellm's `completion_cost`, known
only for models in its price list: calls without a price are counted as `unpriced_calls`.

Storage, in the sessions table: partition `usage#<chat_id>`, items `day#YYYY-MM-DD` (in the
user's time zone, expiring after `DAY_ITEM_DAYS`), `month#YYYY-MM` and `total`, each changed
with atomic `ADD`s, so jobs of one chat running side by side (forum topics, background tasks)
never lose each other's counts. A turn that saves its messages folds the three updates into
the transaction that saves them (`UsageMeter.folded`: no extra DynamoDB request); what other
jobs use (heartbeat, background tasks, /new, consolidation after the save, a failed turn) is
written in one transaction of its own when the job ends. Usage is never worth failing a job:
a write that fails is logged and dropped.

Each job's figures also go to CloudWatch as metrics (see `metrics.py`).
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from botocore.exceptions import BotoCoreError, ClientError

from nanobot_lambda import metrics, texts, tracing
from nanobot_lambda.jobs import AnyJob, ContinuationJob, chat_of
from nanobot_lambda.model import ChatModel, ModelError, ModelReply, ToolChoice, Usage
from nanobot_lambda.telegram.client import TelegramError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

logger = logging.getLogger(__name__)

PREFIX = "usage#"
TOTAL = "total"
DAY_ITEM_DAYS = 400  # a day's figures are kept a little over a year; months and totals stay
UNKNOWN_TOOL = "unknown"  # a call to a tool the model was not offered (bounds the dimension)
WRITE_ATTEMPTS = 3


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
        return Tally(
            **{item.name: getattr(self, item.name) + getattr(other, item.name) for item in _FIELDS}
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

    @classmethod
    def from_item(cls, item: dict[str, Any] | None) -> Tally:
        if not item:
            return cls()
        values: dict[str, Any] = {}
        for entry in _FIELDS:
            number = item.get(entry.name, {}).get("N", "0")
            values[entry.name] = Decimal(number) if entry.name == "cost_usd" else int(number)
        return cls(**values)


_FIELDS = fields(Tally)


@dataclass(frozen=True)
class UsageSummary:
    chat_id: int
    day: str
    month: str
    today: Tally
    this_month: Tally
    total: Tally


class UsageStore:
    def __init__(self, table: str, dynamodb: DynamoDBClient, *, timezone: str) -> None:
        self._table = table
        self._dynamodb = dynamodb
        self._zone = ZoneInfo(timezone)

    def _periods(self, at: datetime) -> tuple[str, str]:
        local = at.astimezone(self._zone)
        return local.strftime("%Y-%m-%d"), local.strftime("%Y-%m")

    def _key(self, chat_id: int, sort_key: str) -> dict[str, Any]:
        return {"pk": {"S": f"{PREFIX}{chat_id}"}, "sk": {"S": sort_key}}

    def updates(self, chat_id: int, tally: Tally, at: datetime) -> list[TransactWriteItemTypeDef]:
        """The three `ADD` updates (day, month, total) recording `tally`, as transaction items."""
        day, month = self._periods(at)
        values = {f":{entry.name}": {"N": _number(getattr(tally, entry.name))} for entry in _FIELDS}
        adds = ", ".join(f"{entry.name} :{entry.name}" for entry in _FIELDS)
        expires = int((at + timedelta(days=DAY_ITEM_DAYS)).timestamp())
        items: list[TransactWriteItemTypeDef] = []
        for sort_key in (f"day#{day}", f"month#{month}", TOTAL):
            expression = f"ADD {adds}"
            item_values = dict(values)
            if sort_key.startswith("day#"):
                expression += " SET expires_at = :expires_at"
                item_values[":expires_at"] = {"N": str(expires)}
            items.append(
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": self._key(chat_id, sort_key),
                        "UpdateExpression": expression,
                        "ExpressionAttributeValues": item_values,
                    }
                }
            )
        return items

    def add(self, chat_id: int, tally: Tally, at: datetime) -> None:
        """Record `tally` in one transaction (retried when a concurrent write got in the way)."""
        items = self.updates(chat_id, tally, at)
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                self._dynamodb.transact_write_items(TransactItems=items)
                return
            except ClientError as error:
                if attempt == WRITE_ATTEMPTS or not transaction_conflict(error):
                    raise
            time.sleep(random.uniform(0.02, 0.1) * attempt)  # noqa: S311 - jitter, not a secret

    def summary(self, chat_id: int, at: datetime) -> UsageSummary:
        """Today, this month and all time for the chat, in one Query: from today's item on,
        the partition holds only month items (a dozen a year) and the total."""
        day, month = self._periods(at)
        response = self._dynamodb.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND sk >= :today",
            ExpressionAttributeValues={
                ":pk": {"S": f"{PREFIX}{chat_id}"},
                ":today": {"S": f"day#{day}"},
            },
            ConsistentRead=True,
        )
        found = {item["sk"]["S"]: item for item in response.get("Items", [])}
        return UsageSummary(
            chat_id,
            day,
            month,
            today=Tally.from_item(found.get(f"day#{day}")),
            this_month=Tally.from_item(found.get(f"month#{month}")),
            total=Tally.from_item(found.get(TOTAL)),
        )

    def chats(self) -> list[int]:
        """Every chat with recorded usage. A Scan of the table: for the operator's CLI only."""
        arguments: dict[str, Any] = {
            "TableName": self._table,
            "FilterExpression": "begins_with(pk, :prefix) AND sk = :total",
            "ExpressionAttributeValues": {":prefix": {"S": PREFIX}, ":total": {"S": TOTAL}},
            "ProjectionExpression": "pk",
        }
        chats: list[int] = []
        while True:
            response = self._dynamodb.scan(**arguments)
            chats.extend(int(item["pk"]["S"][len(PREFIX) :]) for item in response["Items"])
            if "LastEvaluatedKey" not in response:
                return sorted(chats)
            arguments["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def transaction_conflict(error: ClientError) -> bool:
    """A cancelled transaction that only collided with another write (no condition failed):
    worth trying again."""
    if error.response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return False
    codes = {reason.get("Code") for reason in error.response.get("CancellationReasons", [])}
    return "TransactionConflict" in codes and "ConditionalCheckFailed" not in codes


def _number(value: int | Decimal) -> str:
    return format(value, "f") if isinstance(value, Decimal) else str(value)


# -- the texts -------------------------------------------------------------------------------


def describe(tally: Tally) -> str:
    """One period's figures: turns, calls, tokens in (cached) and out, cost."""
    if tally.empty:
        return texts.load("usage_none")
    return texts.render(
        "usage_period",
        turns=f"{tally.turns:,}",
        model_calls=f"{tally.model_calls:,}",
        tool_calls=f"{tally.tool_calls:,}",
        prompt_tokens=f"{tally.prompt_tokens:,}",
        cached_tokens=f"{tally.cached_tokens:,}",
        completion_tokens=f"{tally.completion_tokens:,}",
        cost=_cost(tally),
    )


def _cost(tally: Tally) -> str:
    if not tally.cost_known:
        return texts.load("usage_cost_unknown")
    cost = f"${tally.cost_usd:.4f}"
    if tally.unpriced_calls:
        return texts.render("usage_cost_partial", cost=cost, unpriced=tally.unpriced_calls)
    return cost


def periods(summary: UsageSummary) -> str:
    """Today, this month and all time, a line each."""
    return texts.render(
        "usage_periods",
        day=summary.day,
        month=summary.month,
        today=describe(summary.today),
        this_month=describe(summary.this_month),
        total=describe(summary.total),
    )


def usage_report(store: UsageStore, chat_id: int | None, at: datetime) -> str:
    """The operator's view (`nanobot-lambda usage`): one chat, or every chat with usage."""
    chats = [chat_id] if chat_id is not None else store.chats()
    if not chats:
        return "No usage recorded yet."
    return "\n\n".join(f"chat {chat}\n{periods(store.summary(chat, at))}" for chat in chats)


# -- counting --------------------------------------------------------------------------------


@dataclass
class _JobUsage:
    chat_id: int | None = None
    continued: bool = False  # a turn's continuation: the turn was counted by its first part
    started: float = field(default_factory=time.monotonic)
    used: Tally = field(default_factory=Tally)  # the whole job, for the metrics
    unwritten: Tally = field(default_factory=Tally)  # not yet in DynamoDB
    tools: Counter[str] = field(default_factory=Counter)


class UsageMeter:
    """Counts what each job of agent_turn uses and writes it to the job's chat."""

    def __init__(
        self,
        store: UsageStore,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        port: metrics.MetricsPort = metrics.EMF,
    ) -> None:
        self._store = store
        self._clock = clock
        self._port = port
        self._job = _JobUsage()

    def metered(self, model: ChatModel) -> ChatModel:
        return MeteredModel(model, self)

    @contextmanager
    def job(self, job: AnyJob) -> Iterator[None]:
        """Count the job's usage for its chat; write what is still unwritten when it ends."""
        self._job = _JobUsage(chat_of(job), continued=isinstance(job, ContinuationJob))
        try:
            yield
        except Exception as error:
            metrics.error(
                "telegram_error" if isinstance(error, TelegramError) else "turn_failed", self._port
            )
            raise
        finally:
            self._finish_job()

    @contextmanager
    def folded(self) -> Iterator[list[TransactWriteItemTypeDef]]:
        """The unwritten usage as transaction items, for the write that saves the turn; counted
        as written once that write succeeds."""
        job = self._job
        if job.chat_id is None or job.unwritten.empty:
            yield []
            return
        yield self._store.updates(job.chat_id, job.unwritten, self._clock())
        job.unwritten = Tally()

    def report(self, chat_id: int) -> str:
        """The /usage answer."""
        return texts.render("usage", periods=periods(self._store.summary(chat_id, self._clock())))

    # -- what MeteredModel reports ---------------------------------------------------------

    def answered(self, reply: ModelReply, *, offered: list[dict[str, Any]], agent: bool) -> None:
        """A model call returned. `agent`: a call of the agent loop (not a forced tool call
        for structured output), whose tool calls the loop will run."""
        job = self._job
        counted = Tally.of_call(reply.usage)
        if agent:
            names = {definition["function"]["name"] for definition in offered}
            for call in reply.tool_calls:
                job.tools[call.name if call.name in names else UNKNOWN_TOOL] += 1
            turn = 0 if job.used.turns or job.continued else 1
            counted += Tally(turns=turn, tool_calls=len(reply.tool_calls))
        job.used += counted
        job.unwritten += counted

    def failed(self) -> None:
        metrics.error("model_error", self._port)

    def _finish_job(self) -> None:
        job, self._job = self._job, _JobUsage()
        used = job.used
        if used.turns:
            metrics.turn((time.monotonic() - job.started) * 1000, self._port)
        if used.model_calls:
            metrics.model_usage(
                calls=used.model_calls,
                prompt_tokens=used.prompt_tokens,
                completion_tokens=used.completion_tokens,
                cached_tokens=used.cached_tokens,
                cost_usd=float(used.cost_usd) if used.cost_known else None,
                port=self._port,
            )
        metrics.tool_calls(job.tools, self._port)
        if job.chat_id is None or job.unwritten.empty:
            return
        try:
            self._store.add(job.chat_id, job.unwritten, self._clock())
        except (ClientError, BotoCoreError) as error:
            logger.warning("usage not recorded: %s", type(error).__name__)


class MeteredModel:
    """A `ChatModel` that reports each call to the meter, in a trace subsegment of its own."""

    def __init__(self, model: ChatModel, meter: UsageMeter) -> None:
        self._model = model
        self._meter = meter

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        tool_choice: ToolChoice = None,
        timeout: float | None = None,
    ) -> ModelReply:
        with tracing.span("model"):
            try:
                reply = self._model.complete(
                    messages, tools, tool_choice=tool_choice, timeout=timeout
                )
            except ModelError:
                self._meter.failed()
                raise
        self._meter.answered(reply, offered=tools, agent=tool_choice is None)
        return reply
