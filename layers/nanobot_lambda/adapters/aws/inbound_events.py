"""Event hooks in the sessions table (core/inbound_events.py). Items:
- partition `hooks`, sort key `hook#<name>`: a hook (chat_id, thread_id, quiet, secret,
  created_at, created_by, made_in: the turn id of the update whose `/hooks add` made it; hooks
  kept before it was, and the operator's, have none), so `/hooks` is one Query and the webhook
  reads one item;
- partition `hook#<name>`, sort key `minute#<YYYY-MM-DDTHH:MM>`: the events queued in that
  minute (the rate limit), expiring after two minutes;
- partition `hook#<name>`, sort key `seen#<sig#… | delivery#…>`: a delivery queued, expiring
  when a replay of it could no longer pass (core/inbound_events.py: GENERIC_REPLAY_DAYS,
  GITHUB_REPLAY_DAYS);
- partition `hook#<name>`, sort key `delivery#<slot>`: the hook's last deliveries, a ring of
  `DELIVERIES_KEPT` slots (a delivery's number, from the counter `deliveries`, modulo their
  count: the newest takes the oldest's place, so a hook's records never grow past them, with
  no read and no delete), each expiring `DELIVERIES_KEEP` after it came.

The secret is kept as it is (HMAC needs it): the table is encrypted at rest, and only the
webhook (its own partitions: `hooks`, `hook#*`), agent_turn and the operator read it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from pydantic import SecretStr

from nanobot_lambda.adapters.aws.errors import aws_errors, written
from nanobot_lambda.adapters.aws.numbers import number_value
from nanobot_lambda.adapters.aws.queries import count_within, items_under
from nanobot_lambda.core.inbound_events import (
    DELIVERIES_KEEP,
    DELIVERIES_KEPT,
    Delivery,
    DeliveryOutcome,
    Hook,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PARTITION = "hooks"
HOOK_PREFIX = "hook#"
RATE_KEEP = timedelta(minutes=2)
DELIVERY_PREFIX = "delivery#"
DELIVERY_COUNTER = "deliveries"


class DynamoHookStore:
    """The `HookStore` and `HookInbox` ports on the sessions table."""

    def __init__(self, table: str, dynamodb: Callable[[], DynamoDBClient]) -> None:
        self._table = table
        # Created on first use: the webhook needs it only for hook requests.
        self._dynamodb = functools.cache(dynamodb)

    def _hook_key(self, name: str) -> dict[str, dict[str, str]]:
        return {"pk": {"S": PARTITION}, "sk": {"S": f"{HOOK_PREFIX}{name}"}}

    @aws_errors
    def hook(self, name: str) -> Hook | None:
        item = (
            self._dynamodb()
            .get_item(TableName=self._table, Key=self._hook_key(name), ConsistentRead=True)
            .get("Item")
        )
        return None if item is None else _hook(item)

    @aws_errors
    def hooks(self) -> list[Hook]:
        return [
            _hook(item)
            for item in items_under(self._dynamodb(), self._table, PARTITION, HOOK_PREFIX)
        ]

    @aws_errors
    def add(self, hook: Hook) -> bool:
        item: dict[str, Any] = {
            **self._hook_key(hook.name),
            "name": {"S": hook.name},
            "chat_id": number_value(hook.chat_id),
            "quiet": {"BOOL": hook.quiet},
            "secret": {"S": hook.secret.get_secret_value()},
            "created_at": {"S": hook.created_at},
        }
        if hook.thread_id is not None:
            item["thread_id"] = number_value(hook.thread_id)
        if hook.created_by is not None:
            item["created_by"] = number_value(hook.created_by)
        if hook.made_in is not None:
            item["made_in"] = {"S": hook.made_in}
        return written(
            lambda: self._dynamodb().put_item(
                TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(pk)"
            )
        )

    @aws_errors
    def remove(self, name: str) -> bool:
        response = self._dynamodb().delete_item(
            TableName=self._table, Key=self._hook_key(name), ReturnValues="ALL_OLD"
        )
        return "Attributes" in response

    # -- the webhook's records of a hook's requests (HookInbox) ------------------------------

    def _own_key(self, name: str, sort_key: str) -> dict[str, dict[str, str]]:
        return {"pk": {"S": f"{HOOK_PREFIX}{name}"}, "sk": {"S": sort_key}}

    @aws_errors
    def take_slot(self, name: str, minute: str, limit: int) -> bool:
        expires = int((datetime.now(UTC) + RATE_KEEP).timestamp())
        key = self._own_key(name, f"minute#{minute}")
        return count_within(self._dynamodb(), self._table, key, limit, expires)

    @aws_errors
    def seen(self, name: str, keys: Sequence[str]) -> bool:
        now = int(datetime.now(UTC).timestamp())
        for key in keys:  # one or two
            item = (
                self._dynamodb()
                .get_item(
                    TableName=self._table,
                    Key=self._own_key(name, f"seen#{key}"),
                    ConsistentRead=True,
                )
                .get("Item")
            )
            # TTL deletes within days of expiry, not at it: an expired record is no record.
            if item is not None and int(item["expires_at"]["N"]) > now:
                return True
        return False

    @aws_errors
    def remember(self, name: str, keys: Sequence[str], until: datetime) -> None:
        for key in keys:
            self._dynamodb().put_item(
                TableName=self._table,
                Item={
                    **self._own_key(name, f"seen#{key}"),
                    "expires_at": number_value(int(until.timestamp())),
                },
            )

    @aws_errors
    def record(self, name: str, delivery: Delivery) -> None:
        """Number the delivery (one counter per hook), then write it in its ring slot."""
        expires = number_value(int(datetime.fromisoformat(delivery.at).timestamp() + _KEEP))
        number = int(
            self._dynamodb().update_item(
                TableName=self._table,
                Key=self._own_key(name, DELIVERY_COUNTER),
                UpdateExpression="ADD #count :one SET expires_at = :expires",
                ExpressionAttributeNames={"#count": "count"},
                ExpressionAttributeValues={":one": number_value(1), ":expires": expires},
                ReturnValues="UPDATED_NEW",
            )["Attributes"]["count"]["N"]
        )
        item: dict[str, Any] = {
            **self._own_key(name, f"{DELIVERY_PREFIX}{number % DELIVERIES_KEPT:02d}"),
            "number": number_value(number),
            "at": {"S": delivery.at},
            "outcome": {"S": delivery.outcome},
            "status": number_value(delivery.status),
            "size": number_value(delivery.size),
            "expires_at": expires,
        }
        for field in ("reason", "digest", "delivery_id", "event", "turn_id"):
            value = getattr(delivery, field)
            if value is not None:
                item[field] = {"S": value}
        for field in ("chat_id", "thread_id"):
            value = getattr(delivery, field)
            if value is not None:
                item[field] = number_value(value)
        self._dynamodb().put_item(TableName=self._table, Item=item)

    @aws_errors
    def deliveries(self, name: str) -> list[Delivery]:
        now = int(datetime.now(UTC).timestamp())
        items = items_under(self._dynamodb(), self._table, f"{HOOK_PREFIX}{name}", DELIVERY_PREFIX)
        # TTL deletes within days of expiry, not at it: an expired record is no record (nor,
        # once the counter expired and started again, the newest).
        kept = [item for item in items if int(item["expires_at"]["N"]) > now]
        kept.sort(key=lambda item: int(item["number"]["N"]), reverse=True)
        return [_delivery(item) for item in kept]


_KEEP = DELIVERIES_KEEP.total_seconds()


def _delivery(item: dict[str, Any]) -> Delivery:
    def text(field: str) -> str | None:
        return item[field]["S"] if field in item else None

    def number(field: str) -> int | None:
        return int(item[field]["N"]) if field in item else None

    return Delivery(
        at=item["at"]["S"],
        outcome=cast(DeliveryOutcome, item["outcome"]["S"]),
        status=int(item["status"]["N"]),
        reason=text("reason"),
        size=int(item["size"]["N"]),
        digest=text("digest"),
        delivery_id=text("delivery_id"),
        event=text("event"),
        turn_id=text("turn_id"),
        chat_id=number("chat_id"),
        thread_id=number("thread_id"),
    )


def _hook(item: dict[str, Any]) -> Hook:
    return Hook(
        name=item["name"]["S"],
        chat_id=int(item["chat_id"]["N"]),
        thread_id=int(item["thread_id"]["N"]) if "thread_id" in item else None,
        quiet=bool(item.get("quiet", {}).get("BOOL", False)),
        secret=SecretStr(item["secret"]["S"]),
        created_at=item.get("created_at", {}).get("S", ""),
        created_by=int(item["created_by"]["N"]) if "created_by" in item else None,
        made_in=item.get("made_in", {}).get("S"),
    )
