"""Usage counts in DynamoDB, in the sessions table: partition `usage#<chat_id>`, items
`day#YYYY-MM-DD` (in the user's time zone, expiring after `DAY_ITEM_DAYS`), `month#YYYY-MM` and
`total`, each changed with atomic `ADD`s; and `by-model#YYYY-MM#<model>`, a month's figures of one
model (sorting before the days: the summary's Query never reads them). See `core/usage.py` for
what is counted.

All chats together have the same items, counted only while a spending limit needs them
(`overall`), spread over `OVERALL_SHARDS` partitions `usage#all#<NN>` (NN: the chat's id modulo
their number), so that every chat's calls do not update the same three items in their
transactions (each would cancel the others it ran beside: `TransactionConflict`); the overall
figure is their sum, read with one BatchGetItem. Items `usage#all` written before the shards count
as one more shard. Notices of a limit reached are items `notice#<key>` in the partition of the
chat told (`core/spend.py`)."""

from __future__ import annotations

import random
import time
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from botocore.exceptions import ClientError

from nanobot_lambda.adapters.aws.errors import aws_errors, cancellation_reasons, written
from nanobot_lambda.adapters.aws.numbers import number_value
from nanobot_lambda.core.errors import StorageError
from nanobot_lambda.core.ports import StoredWrite
from nanobot_lambda.core.usage_counts import (
    FIELDS,
    MODEL_NAME_MAX,
    MODEL_PREFIX,
    ByModel,
    Tally,
    UsageSummary,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

PREFIX = "usage#"
OVERALL = "all"  # all chats together: usage#all (before the shards), usage#all#<NN>
OVERALL_SHARDS = 16  # 3 items each (day, month, total): 51 keys in one BatchGetItem (100 at most)
TOTAL = "total"
NOTICE_PREFIX = "notice#"
NOTICE_DAYS = 40  # a notice holds for a day or a month
DAY_ITEM_DAYS = 400  # a day's figures are kept a little over a year; months and totals stay
WRITE_ATTEMPTS = 3


def tally_from_item(item: dict[str, Any] | None) -> Tally:
    if not item:
        return Tally()
    values: dict[str, Any] = {}
    for entry in FIELDS:
        number = item.get(entry.name, {}).get("N", "0")
        values[entry.name] = Decimal(number) if entry.name == "cost_usd" else int(number)
    return Tally(**values)


class DynamoUsageStore:
    def __init__(self, table: str, dynamodb: DynamoDBClient, *, timezone: str) -> None:
        self._table = table
        self._dynamodb = dynamodb
        self._zone = ZoneInfo(timezone)

    def _periods(self, at: datetime) -> tuple[str, str]:
        local = at.astimezone(self._zone)
        return local.strftime("%Y-%m-%d"), local.strftime("%Y-%m")

    def _key(self, owner: int | str, sort_key: str) -> dict[str, Any]:
        return {"pk": {"S": f"{PREFIX}{owner}"}, "sk": {"S": sort_key}}

    def updates(
        self,
        chat_id: int,
        tally: Tally,
        at: datetime,
        *,
        overall: bool = False,
        by_model: ByModel | None = None,
    ) -> list[StoredWrite]:
        """The three `ADD` updates (day, month, total) recording `tally`, as transaction items;
        six with `overall`; and one per model of `by_model`."""
        return list(self._all_updates(chat_id, tally, at, overall, by_model or {}))

    def _all_updates(
        self, chat_id: int, tally: Tally, at: datetime, overall: bool, by_model: ByModel
    ) -> list[TransactWriteItemTypeDef]:
        day, month = self._periods(at)
        periods = (f"day#{day}", f"month#{month}", TOTAL)
        items = [self._update(chat_id, key, tally, at) for key in periods]
        if overall:
            items += [self._update(overall_shard(chat_id), key, tally, at) for key in periods]
        for model, used in by_model.items():
            key = f"{MODEL_PREFIX}{month}#{model[:MODEL_NAME_MAX]}"
            items.append(self._update(chat_id, key, used, at))
        return items

    def _update(
        self, owner: int | str, sort_key: str, tally: Tally, at: datetime
    ) -> TransactWriteItemTypeDef:
        values = {f":{entry.name}": number_value(getattr(tally, entry.name)) for entry in FIELDS}
        expression = "ADD " + ", ".join(f"{entry.name} :{entry.name}" for entry in FIELDS)
        if sort_key.startswith("day#"):
            expression += " SET expires_at = :expires_at"
            expires = int((at + timedelta(days=DAY_ITEM_DAYS)).timestamp())
            values[":expires_at"] = number_value(expires)
        return {
            "Update": {
                "TableName": self._table,
                "Key": self._key(owner, sort_key),
                "UpdateExpression": expression,
                "ExpressionAttributeValues": values,
            }
        }

    @aws_errors
    def add(
        self,
        chat_id: int,
        tally: Tally,
        at: datetime,
        *,
        overall: bool = False,
        by_model: ByModel | None = None,
    ) -> None:
        """Record `tally` in one transaction (retried when a concurrent write got in the way)."""
        items = self._all_updates(chat_id, tally, at, overall, by_model or {})
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                self._dynamodb.transact_write_items(TransactItems=items)
                return
            except ClientError as error:
                if attempt == WRITE_ATTEMPTS or not transaction_conflict(error):
                    raise
            time.sleep(random.uniform(0.02, 0.1) * attempt)  # noqa: S311 - jitter, not a secret

    def summary(self, chat_id: int, at: datetime) -> UsageSummary:
        return self._summary(chat_id, chat_id, at)

    @aws_errors
    def overall_summary(self, at: datetime) -> UsageSummary:
        """The sum of every shard's today, this month and total (and of the items written
        before the shards), in one BatchGetItem."""
        day, month = self._periods(at)
        sort_keys = (f"day#{day}", f"month#{month}", TOTAL)
        keys = [self._key(owner, sort_key) for owner in OVERALL_OWNERS for sort_key in sort_keys]
        found: dict[str, Tally] = dict.fromkeys(sort_keys, Tally())
        for item in self._batch_get(keys):
            found[item["sk"]["S"]] += tally_from_item(item)
        return UsageSummary(
            0,
            day,
            month,
            today=found[sort_keys[0]],
            this_month=found[sort_keys[1]],
            total=found[TOTAL],
        )

    def _batch_get(self, keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The items of `keys` that exist (strongly consistent), asking again for those
        DynamoDB left unprocessed."""
        items: list[dict[str, Any]] = []
        request: dict[str, Any] = {self._table: {"Keys": keys, "ConsistentRead": True}}
        for attempt in range(1, WRITE_ATTEMPTS + 2):
            response = self._dynamodb.batch_get_item(RequestItems=request)
            items += response.get("Responses", {}).get(self._table, [])
            request = dict(response.get("UnprocessedKeys") or {})
            if not request:
                return items
            time.sleep(random.uniform(0.02, 0.1) * attempt)  # noqa: S311 - jitter, not a secret
        raise StorageError("usage: the overall figures could not be read (throttled)")

    @aws_errors
    def _summary(self, owner: int | str, chat_id: int, at: datetime) -> UsageSummary:
        """Today, this month and all time, in one Query: from today's item on, the partition
        holds only month items (a dozen a year), the total and a few notices."""
        day, month = self._periods(at)
        response = self._dynamodb.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND sk >= :today",
            ExpressionAttributeValues={
                ":pk": {"S": f"{PREFIX}{owner}"},
                ":today": {"S": f"day#{day}"},
            },
            ConsistentRead=True,
        )
        found = {item["sk"]["S"]: item for item in response.get("Items", [])}
        return UsageSummary(
            chat_id,
            day,
            month,
            today=tally_from_item(found.get(f"day#{day}")),
            this_month=tally_from_item(found.get(f"month#{month}")),
            total=tally_from_item(found.get(TOTAL)),
        )

    @aws_errors
    def periods(self, chat_id: int | None) -> dict[str, Tally]:
        """One Query of the chat's partition (a year of days is about 400 small items); all chats
        together, one of each shard's, summed."""
        if chat_id is not None:
            return self._periods_of(chat_id)
        summed: dict[str, Tally] = {}
        for owner in OVERALL_OWNERS:
            for key, tally in self._periods_of(owner).items():
                summed[key] = summed.get(key, Tally()) + tally
        return summed

    def _periods_of(self, owner: int | str) -> dict[str, Tally]:
        arguments: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": f"{PREFIX}{owner}"}},
        }
        found: dict[str, Tally] = {}
        while True:
            response = self._dynamodb.query(**arguments)
            for item in response.get("Items", []):
                key = item["sk"]["S"]
                if key.startswith(("day#", "month#", MODEL_PREFIX)) or key == TOTAL:
                    found[key] = tally_from_item(item)
            if "LastEvaluatedKey" not in response:
                return found
            arguments["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    @aws_errors
    def models(self, chat_id: int, at: datetime) -> dict[str, Tally]:
        """One Query of the month's model items (models are few)."""
        prefix = f"{MODEL_PREFIX}{self._periods(at)[1]}#"
        response = self._dynamodb.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={
                ":pk": {"S": f"{PREFIX}{chat_id}"},
                ":prefix": {"S": prefix},
            },
        )
        return {
            item["sk"]["S"][len(prefix) :]: tally_from_item(item)
            for item in response.get("Items", [])
        }

    @aws_errors
    def first_notice(self, chat_id: int, key: str, turn_id: str, at: datetime) -> bool:
        expires = int((at + timedelta(days=NOTICE_DAYS)).timestamp())
        return written(
            lambda: self._dynamodb.put_item(
                TableName=self._table,
                Item={
                    **self._key(chat_id, f"{NOTICE_PREFIX}{key}"),
                    "turn": {"S": turn_id},
                    "expires_at": number_value(expires),
                },
                ConditionExpression="attribute_not_exists(pk) OR #turn = :turn",
                ExpressionAttributeNames={"#turn": "turn"},
                ExpressionAttributeValues={":turn": {"S": turn_id}},
            )
        )

    @aws_errors
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
            owners = (item["pk"]["S"][len(PREFIX) :] for item in response["Items"])
            chats.extend(int(owner) for owner in owners if not owner.startswith(OVERALL))
            if "LastEvaluatedKey" not in response:
                return sorted(chats)
            arguments["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def overall_shard(chat_id: int) -> str:
    """The partition (after `usage#`) where the chat's calls count for all chats together."""
    return f"{OVERALL}#{chat_id % OVERALL_SHARDS:02d}"


OVERALL_OWNERS = (OVERALL, *(f"{OVERALL}#{shard:02d}" for shard in range(OVERALL_SHARDS)))


def transaction_conflict(error: ClientError) -> bool:
    """A cancelled transaction that only collided with another write (no condition failed):
    worth trying again."""
    codes = set(cancellation_reasons(error))
    return "TransactionConflict" in codes and "ConditionalCheckFailed" not in codes
