"""/stop flags in the sessions table: one item per session (`stop#<session>` / `flag`),
expiring after an hour. Why /stop needs a flag at all: see `functions/agent_turn/commands.py`."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from nanobot_lambda.adapters.aws.errors import aws_errors
from nanobot_lambda.adapters.aws.numbers import number_value

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

STOP_FLAG_SECONDS = 3600


def now_ms() -> int:
    return int(time.time() * 1000)


class DynamoStopFlags:
    """Stop requests, one item per session in the sessions table (`pk` = `stop#<session>`)."""

    def __init__(self, table: str, dynamodb: Callable[[], DynamoDBClient]) -> None:
        self._table = table
        # Created on first use: the webhook only needs it for /stop, not at every cold start.
        self._dynamodb = functools.cache(dynamodb)

    def _key(self, session_key: str) -> dict[str, dict[str, str]]:
        return {"pk": {"S": f"stop#{session_key}"}, "sk": {"S": "flag"}}

    @aws_errors
    def request(self, session_key: str, at_ms: int | None = None) -> None:
        at_ms = now_ms() if at_ms is None else at_ms
        self._dynamodb().put_item(
            TableName=self._table,
            Item={
                **self._key(session_key),
                "requested_at": number_value(at_ms),
                "expires_at": number_value(at_ms // 1000 + STOP_FLAG_SECONDS),
            },
        )

    @aws_errors
    def requested_since(self, session_key: str, since_ms: int) -> bool:
        item = (
            self._dynamodb()
            .get_item(TableName=self._table, Key=self._key(session_key), ConsistentRead=True)
            .get("Item")
        )
        return item is not None and int(item["requested_at"]["N"]) >= since_ms

    @aws_errors
    def clear(self, session_key: str) -> bool:
        """Remove the flag; True if there was one."""
        response = self._dynamodb().delete_item(
            TableName=self._table, Key=self._key(session_key), ReturnValues="ALL_OLD"
        )
        return "Attributes" in response
