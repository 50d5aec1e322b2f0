"""The sessions table seen by the operator: which conversations exist, what they hold, reset.

A session is the items of one partition: `msg#<seq>` messages and the `~meta` header (see
`sessions.py`); `stop#…` and `album#…` partitions are /stop flags and album parts, not
sessions. Listing scans headers only (a filter on the sort key, a projection of a few
attributes), then reads the newest message of each session for its time. Resetting deletes a
session's items, nothing else: memory files in the workspace stay as they are.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nanobot_lambda.adapters.aws.sessions import MESSAGE_PREFIX, META_KEY
from nanobot_lambda.adapters.telegram.places import session_key_for
from nanobot_lambda.core.sessions import Message

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

BATCH_WRITE_LIMIT = 25


@dataclass(frozen=True)
class SessionSummary:
    key: str
    messages: int
    consolidated: int
    last_activity: str | None


@dataclass(frozen=True)
class StoredMessage:
    seq: int
    created_at: str | None
    message: Message


def session_key(chat: str) -> str:
    """A chat id (`111111111`, `-100123`) or a whole session key (`telegram:1:7`, `cron:ab12`)."""
    text = chat.strip()
    if text.lstrip("-").isdigit():
        return session_key_for(int(text))
    return text


class SessionAdmin:
    def __init__(self, table: str, dynamodb: DynamoDBClient) -> None:
        self._table = table
        self._dynamodb = dynamodb

    def _headers(self) -> Iterator[dict[str, Any]]:
        paginator = self._dynamodb.get_paginator("scan")
        for page in paginator.paginate(
            TableName=self._table,
            FilterExpression="sk = :meta",
            ProjectionExpression="pk, next_seq, consolidated_upto",
            ExpressionAttributeValues={":meta": {"S": META_KEY}},
        ):
            yield from page.get("Items", [])

    def sessions(self) -> list[SessionSummary]:
        found = []
        for header in self._headers():
            key = header["pk"]["S"]
            if key.startswith("stop#"):
                continue
            newest = self.recent(key, 1)
            found.append(
                SessionSummary(
                    key=key,
                    messages=int(header.get("next_seq", {}).get("N", "0")),
                    consolidated=int(header.get("consolidated_upto", {}).get("N", "0")),
                    last_activity=newest[-1].created_at if newest else None,
                )
            )
        return sorted(found, key=lambda summary: summary.last_activity or "", reverse=True)

    def recent(self, key: str, limit: int) -> list[StoredMessage]:
        """The newest `limit` messages, oldest first."""
        response = self._dynamodb.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={":pk": {"S": key}, ":prefix": {"S": MESSAGE_PREFIX}},
            ScanIndexForward=False,
            Limit=limit,
        )
        return [
            StoredMessage(
                seq=int(item["sk"]["S"][len(MESSAGE_PREFIX) :]),
                created_at=item.get("created_at", {}).get("S"),
                message=json.loads(item["message"]["S"]),
            )
            for item in reversed(response.get("Items", []))
        ]

    def _keys(self, key: str) -> Iterator[dict[str, Any]]:
        paginator = self._dynamodb.get_paginator("query")
        for page in paginator.paginate(
            TableName=self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": key}},
            ProjectionExpression="pk, sk",
        ):
            yield from page.get("Items", [])

    def count(self, key: str) -> int:
        return sum(1 for _ in self._keys(key))

    def reset(self, key: str) -> int:
        """Delete every item of the session; returns how many there were."""
        keys = list(self._keys(key))
        for start in range(0, len(keys), BATCH_WRITE_LIMIT):
            requests: Any = {
                self._table: [
                    {"DeleteRequest": {"Key": item}}
                    for item in keys[start : start + BATCH_WRITE_LIMIT]
                ]
            }
            while requests:
                response = self._dynamodb.batch_write_item(RequestItems=requests)
                requests = response.get("UnprocessedItems") or None
        return len(keys)


def message_preview(message: Message, limit: int = 500) -> str:
    """One message as the operator reads it: its text, or the tool calls it made."""
    content = message.get("content")
    if isinstance(content, list):
        parts = [
            part.get("text", "") if part.get("type") == "text" else f"[{part.get('type')}]"
            for part in content
            if isinstance(part, dict)
        ]
        content = " ".join(parts)
    text = " ".join(str(content or "").split())
    calls = [
        f"{call.get('function', {}).get('name', '?')}(…)"
        for call in message.get("tool_calls") or []
        if isinstance(call, dict)
    ]
    if calls:
        text = (text + " " if text else "") + "→ " + ", ".join(calls)
    if message.get("role") == "tool":
        text = f"{message.get('name', 'tool')}: {text}"
    return text if len(text) <= limit else text[: limit - 1] + "…"
