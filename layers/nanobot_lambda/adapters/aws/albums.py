"""Albums in the sessions table: one item per album (`album#<session>:<media group id>` /
`parts`), kept `ALBUM_RECORD_SECONDS` (as long as a dead-lettered part can wait for a redrive).

Each part is an attribute of its own (`part_<update id>`, the update as JSON), so concurrent
webhook deliveries add parts without reading the item; `last_part_at` (epoch ms) is when the
latest arrived. A lead's claim sets `lead` and `claimed` (a number set) once, conditionally.
Why albums are buffered at all: see `core/albums.py`.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from nanobot_lambda.adapters.aws.errors import CONDITION_FAILED, aws_errors, error_code
from nanobot_lambda.adapters.aws.numbers import number_value, plain
from nanobot_lambda.core.albums import AlbumRecord
from nanobot_lambda.core.errors import StorageError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

ALBUM_PREFIX = "album#"
PART_PREFIX = "part_"
ALBUM_RECORD_SECONDS = 14 * 24 * 3600  # the dead-letter queue's retention


class DynamoAlbumBook:
    """The `AlbumBook` port on the sessions table."""

    def __init__(self, table: str, dynamodb: Callable[[], DynamoDBClient]) -> None:
        self._table = table
        # Created on first use: the webhook needs it only for albums, not at every cold start.
        self._dynamodb = functools.cache(dynamodb)

    def _key(self, key: str) -> dict[str, dict[str, str]]:
        return {"pk": {"S": f"{ALBUM_PREFIX}{key}"}, "sk": {"S": "parts"}}

    @aws_errors
    def add_part(self, key: str, update_id: int, update: Mapping[str, Any]) -> None:
        now_ms = int(time.time() * 1000)
        self._dynamodb().update_item(
            TableName=self._table,
            Key=self._key(key),
            UpdateExpression="SET #part = :update, last_part_at = :now, expires_at = :expires",
            ExpressionAttributeNames={"#part": f"{PART_PREFIX}{update_id}"},
            ExpressionAttributeValues={
                ":update": {"S": json.dumps(update, ensure_ascii=False)},
                ":now": number_value(now_ms),
                ":expires": number_value(now_ms // 1000 + ALBUM_RECORD_SECONDS),
            },
        )

    @aws_errors
    def get(self, key: str) -> AlbumRecord | None:
        item = (
            self._dynamodb()
            .get_item(TableName=self._table, Key=self._key(key), ConsistentRead=True)
            .get("Item")
        )
        return None if item is None else _record(item)

    @aws_errors
    def claim(self, key: str, lead: int, parts: frozenset[int]) -> AlbumRecord:
        try:
            item = self._dynamodb().update_item(
                TableName=self._table,
                Key=self._key(key),
                UpdateExpression="SET #lead = :lead, claimed = :parts",
                ConditionExpression="attribute_not_exists(#lead) OR #lead = :lead",
                ExpressionAttributeNames={"#lead": "lead"},  # a reserved word
                ExpressionAttributeValues={
                    ":lead": number_value(lead),
                    ":parts": {"NS": [plain(part) for part in sorted(parts)]},
                },
                ReturnValues="ALL_NEW",
            )["Attributes"]
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
            claimed = self.get(key)  # another turn claimed it first
            if claimed is None:
                raise StorageError("DynamoAlbumBook.claim: the album's record is gone") from None
            return claimed
        return _record(item)


def _record(item: Mapping[str, Any]) -> AlbumRecord:
    parts = {
        int(name.removeprefix(PART_PREFIX)): json.loads(value["S"])
        for name, value in item.items()
        if name.startswith(PART_PREFIX)
    }
    return AlbumRecord(
        parts=parts,
        last_part_ms=int(item.get("last_part_at", {}).get("N", "0")),
        lead=int(item["lead"]["N"]) if "lead" in item else None,
        claimed=frozenset(int(part) for part in item.get("claimed", {}).get("NS", [])),
    )
