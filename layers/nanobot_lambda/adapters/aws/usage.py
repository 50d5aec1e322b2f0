"""Usage counts in DynamoDB, in the sessions table: partition `usage#<chat_id>`, items
`day#YYYY-MM-DD` (in the user's time zone, expiring after `DAY_ITEM_DAYS`), `month#YYYY-MM` and
`total`, each changed with atomic `ADD`s. See `core/usage.py` for what is counted.

All chats together have the same items in partition `usage#all`, counted only while a spending
limit needs them (`overall`); notices of a limit reached are items `notice#<key>` in the
partition of the chat told (`core/spend.py`)."""

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
from nanobot_lambda.core.ports import StoredWrite
from nanobot_lambda.core.usage_counts import FIELDS, Tally, UsageSummary

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

PREFIX = "usage#"
OVERALL = "all"  # the partition of all chats together: usage#all
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
        self, chat_id: int, tally: Tally, at: datetime, *, overall: bool = False
    ) -> list[StoredWrite]:
        """The three `ADD` updates (day, month, total) recording `tally`, as transaction items;
        six with `overall`."""
        return list(self._all_updates(chat_id, tally, at, overall))

    def _all_updates(
        self, chat_id: int, tally: Tally, at: datetime, overall: bool
    ) -> list[TransactWriteItemTypeDef]:
        items = self._updates(chat_id, tally, at)
        return [*items, *self._updates(OVERALL, tally, at)] if overall else items

    def _updates(
        self, owner: int | str, tally: Tally, at: datetime
    ) -> list[TransactWriteItemTypeDef]:
        day, month = self._periods(at)
        values = {f":{entry.name}": number_value(getattr(tally, entry.name)) for entry in FIELDS}
        adds = ", ".join(f"{entry.name} :{entry.name}" for entry in FIELDS)
        expires = int((at + timedelta(days=DAY_ITEM_DAYS)).timestamp())
        items: list[TransactWriteItemTypeDef] = []
        for sort_key in (f"day#{day}", f"month#{month}", TOTAL):
            expression = f"ADD {adds}"
            item_values = dict(values)
            if sort_key.startswith("day#"):
                expression += " SET expires_at = :expires_at"
                item_values[":expires_at"] = number_value(expires)
            items.append(
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": self._key(owner, sort_key),
                        "UpdateExpression": expression,
                        "ExpressionAttributeValues": item_values,
                    }
                }
            )
        return items

    @aws_errors
    def add(self, chat_id: int, tally: Tally, at: datetime, *, overall: bool = False) -> None:
        """Record `tally` in one transaction (retried when a concurrent write got in the way)."""
        items = self._all_updates(chat_id, tally, at, overall)
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

    def overall_summary(self, at: datetime) -> UsageSummary:
        return self._summary(OVERALL, 0, at)

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
        """One Query of the chat's partition (a year of days is about 400 small items)."""
        arguments: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {
                ":pk": {"S": f"{PREFIX}{OVERALL if chat_id is None else chat_id}"}
            },
        }
        found: dict[str, Tally] = {}
        while True:
            response = self._dynamodb.query(**arguments)
            for item in response.get("Items", []):
                key = item["sk"]["S"]
                if key.startswith(("day#", "month#")) or key == TOTAL:
                    found[key] = tally_from_item(item)
            if "LastEvaluatedKey" not in response:
                return found
            arguments["ExclusiveStartKey"] = response["LastEvaluatedKey"]

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
            chats.extend(int(owner) for owner in owners if owner != OVERALL)
            if "LastEvaluatedKey" not in response:
                return sorted(chats)
            arguments["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def transaction_conflict(error: ClientError) -> bool:
    """A cancelled transaction that only collided with another write (no condition failed):
    worth trying again."""
    codes = set(cancellation_reasons(error))
    return "TransactionConflict" in codes and "ConditionalCheckFailed" not in codes
