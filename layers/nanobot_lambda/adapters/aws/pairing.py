"""Pairing in the sessions table: one partition, `pairing`, so the owner's /people is one Query
and the webhook's rights can be limited to it. Items (sort key):
- `person#<user id>`: an approved person (name, username, approved_at);
- `code#<code>`: an open code and whom it is for, expiring with the code;
- `ask#<user id>`: a person's open code, how many codes they got that day, a refusal's end;
- `hour#<YYYY-MM-DDTHH>`: how many codes everyone got in that hour.
Why and how pairing works: `core/pairing.py`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from nanobot_lambda.adapters.aws.errors import TRANSACTION_CANCELLED, aws_errors, written
from nanobot_lambda.adapters.aws.numbers import number_value
from nanobot_lambda.adapters.aws.queries import count_within, items_under
from nanobot_lambda.core.pairing import Asker, AskRecord, PairingCode, Person

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PARTITION = "pairing"
KEEP_ASKS = timedelta(days=2)  # an ask holds the day's count and a refusal of a day


class DynamoPairingStore:
    def __init__(self, table: str, dynamodb: Callable[[], DynamoDBClient]) -> None:
        self._table = table
        # Created on first use: the webhook needs it only for strangers and approved people.
        self._dynamodb = functools.cache(dynamodb)

    def _key(self, sort_key: str) -> dict[str, dict[str, str]]:
        return {"pk": {"S": PARTITION}, "sk": {"S": sort_key}}

    def _get(self, sort_key: str) -> dict[str, Any] | None:
        item: dict[str, Any] | None = (
            self._dynamodb()
            .get_item(TableName=self._table, Key=self._key(sort_key), ConsistentRead=True)
            .get("Item")
        )
        return item

    def _items(self, prefix: str) -> list[dict[str, Any]]:
        return items_under(self._dynamodb(), self._table, PARTITION, prefix)

    def _transaction(self, items: list[Any]) -> bool:
        """All of `items`, or (a condition refused one) none: False then."""
        client = self._dynamodb()
        return written(
            lambda: client.transact_write_items(TransactItems=items), TRANSACTION_CANCELLED
        )

    @aws_errors
    def person(self, user_id: int) -> Person | None:
        item = self._get(f"person#{user_id}")
        return None if item is None else _person(item)

    @aws_errors
    def people(self) -> list[Person]:
        return [_person(item) for item in self._items("person#")]

    @aws_errors
    def ask_record(self, user_id: int) -> AskRecord | None:
        item = self._get(f"ask#{user_id}")
        if item is None:
            return None
        denied = item.get("denied_until", {}).get("N")
        return AskRecord(
            code=item["code"]["S"] if "code" in item else None,
            expires=_time(item["code_expires"]["N"]) if "code_expires" in item else _EPOCH,
            day=item.get("day", {}).get("S", ""),
            count=int(item.get("count", {}).get("N", "0")),
            denied_until=_time(denied) if denied else None,
        )

    @aws_errors
    def take_hour_slot(self, hour: str, limit: int) -> bool:
        expires = int((datetime.now(UTC) + timedelta(days=1)).timestamp())
        return count_within(
            self._dynamodb(), self._table, self._key(f"hour#{hour}"), limit, expires
        )

    @aws_errors
    def open_code(self, pairing: PairingCode, day: str, count: int) -> bool:
        asker = pairing.asker
        items: list[Any] = [
            {
                "Put": {
                    "TableName": self._table,
                    "Item": {
                        **self._key(f"code#{pairing.code}"),
                        **asker_attributes(asker),
                        "code_expires": number_value(_seconds(pairing.expires)),
                        "expires_at": number_value(_seconds(pairing.expires)),
                    },
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {
                "Put": {
                    "TableName": self._table,
                    "Item": {
                        **self._key(f"ask#{asker.user_id}"),
                        "code": {"S": pairing.code},
                        "code_expires": number_value(_seconds(pairing.expires)),
                        "day": {"S": day},
                        "count": number_value(count),
                        "expires_at": number_value(_seconds(pairing.expires + KEEP_ASKS)),
                    },
                }
            },
        ]
        return self._transaction(items)

    @aws_errors
    def code(self, code: str) -> PairingCode | None:
        item = self._get(f"code#{code}")
        return None if item is None else _code(item)

    @aws_errors
    def open_codes(self) -> list[PairingCode]:
        return [_code(item) for item in self._items("code#")]

    @aws_errors
    def approve(self, pairing: PairingCode, at: datetime) -> bool:
        person = {
            **self._key(f"person#{pairing.asker.user_id}"),
            **asker_attributes(pairing.asker),
            "approved_at": number_value(_seconds(at)),
        }
        ask = self._key(f"ask#{pairing.asker.user_id}")
        return self._close(
            pairing,
            {"Put": {"TableName": self._table, "Item": person}},
            {"Delete": {"TableName": self._table, "Key": ask}},
        )

    @aws_errors
    def deny(self, pairing: PairingCode, until: datetime) -> bool:
        refusal = {
            **self._key(f"ask#{pairing.asker.user_id}"),
            "denied_until": number_value(_seconds(until)),
            "expires_at": number_value(_seconds(until + KEEP_ASKS)),
        }
        return self._close(pairing, {"Put": {"TableName": self._table, "Item": refusal}})

    def _close(self, pairing: PairingCode, *writes: Mapping[str, Any]) -> bool:
        """Delete the code (it must still be open: a code is used once) with `writes`."""
        code = {
            "Delete": {
                "TableName": self._table,
                "Key": self._key(f"code#{pairing.code}"),
                "ConditionExpression": "attribute_exists(pk)",
            }
        }
        items: list[Any] = [code, *writes]
        return self._transaction(items)

    @aws_errors
    def remove(self, user_id: int) -> bool:
        response = self._dynamodb().delete_item(
            TableName=self._table, Key=self._key(f"person#{user_id}"), ReturnValues="ALL_OLD"
        )
        return "Attributes" in response


_EPOCH = datetime.fromtimestamp(0, UTC)


def _seconds(at: datetime) -> int:
    return int(at.timestamp())


def _time(seconds: str) -> datetime:
    return datetime.fromtimestamp(int(seconds), UTC)


def asker_attributes(asker: Asker) -> dict[str, Any]:
    attributes: dict[str, Any] = {"user_id": number_value(asker.user_id), "name": {"S": asker.name}}
    if asker.username:
        attributes["username"] = {"S": asker.username}
    return attributes


def _asker(item: Mapping[str, Any]) -> Asker:
    username = item.get("username", {}).get("S")
    return Asker(int(item["user_id"]["N"]), item["name"]["S"], username)


def _person(item: Mapping[str, Any]) -> Person:
    return Person(_asker(item), _time(item["approved_at"]["N"]))


def _code(item: Mapping[str, Any]) -> PairingCode:
    return PairingCode(
        item["sk"]["S"].removeprefix("code#"), _asker(item), _time(item["code_expires"]["N"])
    )
