"""Conversation history in DynamoDB: one item per message, so a session can grow for years.

Items: `pk` = session key, `sk` = `msg#<12-digit sequence>`, `message` = the chat message as JSON
(OpenAI format: role, content, tool_calls, tool_call_id, name). Loading the recent window is one
Query (newest first, limited); appending a turn is one TransactWriteItems whose items are
conditional on not existing, so two writers can never overwrite each other's messages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

Message = dict[str, Any]
MESSAGE_PREFIX = "msg#"
TRANSACTION_LIMIT = 100


class SessionConflict(Exception):
    """Another writer appended to the session since it was loaded."""


@dataclass
class SessionHistory:
    key: str
    messages: list[Message] = field(default_factory=list)
    next_seq: int = 0


class SessionStore(Protocol):
    def load(self, key: str, limit: int) -> SessionHistory: ...

    def append(self, history: SessionHistory, messages: list[Message]) -> None: ...


def align_to_user_turn(messages: list[Message]) -> list[Message]:
    """Drop leading messages until a user message, so a window never starts mid-turn.

    A window cut between an assistant tool call and its tool results would be rejected by
    providers (orphan tool results); starting at a user message guarantees it cannot happen.
    """
    for index, message in enumerate(messages):
        if message.get("role") == "user":
            return messages[index:]
    return []


class DynamoSessionStore:
    def __init__(self, table: str, dynamodb: DynamoDBClient) -> None:
        self._table = table
        self._dynamodb = dynamodb

    def load(self, key: str, limit: int) -> SessionHistory:
        # At least one item is read even for limit 0: the newest sequence number is needed to
        # append after it.
        response = self._dynamodb.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={":pk": {"S": key}, ":prefix": {"S": MESSAGE_PREFIX}},
            ScanIndexForward=False,
            Limit=max(limit, 1),
        )
        items = response.get("Items", [])
        next_seq = int(items[0]["sk"]["S"][len(MESSAGE_PREFIX) :]) + 1 if items else 0
        newest_first = [json.loads(item["message"]["S"]) for item in items[:limit]]
        return SessionHistory(key, align_to_user_turn(newest_first[::-1]), next_seq)

    def append(self, history: SessionHistory, messages: list[Message]) -> None:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        items: list[TransactWriteItemTypeDef] = [
            {
                "Put": {
                    "TableName": self._table,
                    "Item": {
                        "pk": {"S": history.key},
                        "sk": {"S": f"{MESSAGE_PREFIX}{history.next_seq + offset:012d}"},
                        "message": {"S": json.dumps(message, ensure_ascii=False)},
                        "created_at": {"S": now},
                    },
                    "ConditionExpression": "attribute_not_exists(sk)",
                }
            }
            for offset, message in enumerate(messages)
        ]
        for start in range(0, len(items), TRANSACTION_LIMIT):
            try:
                self._dynamodb.transact_write_items(
                    TransactItems=items[start : start + TRANSACTION_LIMIT]
                )
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") == "TransactionCanceledException":
                    raise SessionConflict(history.key) from None
                raise
        history.next_seq += len(messages)
        history.messages.extend(messages)
