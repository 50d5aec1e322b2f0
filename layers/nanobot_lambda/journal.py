"""The turn journal: a turn survives a re-delivery, a crash and Lambda's time limit, and does
not send the same message twice.

Every turn has a stable id taken from its job (the Telegram update, the cron firing, the
background task). While it runs, its progress is kept in the item `~turn#<turn id>` of its
session's partition:
- `messages`: the assistant and tool messages of the iterations completed so far (zlib JSON);
- `sends`: how many messages the turn had sent when those iterations were done;
- `sent`: the sequence numbers of all messages it has sent, each recorded with a conditional
  write right after Telegram accepted it.
A re-delivered or continued turn resumes from there: completed iterations are not redone, and a
message whose number is in `sent` is not sent again. The one send that can repeat is one whose
process died between Telegram's answer and the record (a few milliseconds).

When the turn is saved, the same transaction deletes its `~turn#` item and adds its id to the
session header's `recent_turns`, so a job delivered again afterwards is recognised and skipped.
The items sort after the header, so the session Query a turn makes anyway returns them: a turn
that finishes in one invocation costs no extra request.
"""

from __future__ import annotations

import json
import logging
import time
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from nanobot_lambda.sessions import TURN_PREFIX, SessionHistory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

logger = logging.getLogger(__name__)

# An unfinished turn (it went to the dead-letter queue) is forgotten after a week.
OPEN_TURN_SECONDS = 7 * 24 * 3600
# Turns without a session (heartbeat, background task) keep a "done" record this long.
DONE_TURN_SECONDS = 3 * 24 * 3600
# DynamoDB items stop at 400 KB; a checkpoint bigger than this is skipped (the turn then
# resumes from its previous checkpoint).
MAX_CHECKPOINT_BYTES = 350_000

Message = dict[str, Any]


@dataclass
class TurnProgress:
    """What a turn has done so far, as recorded."""

    turn_id: str
    messages: list[Message] = field(default_factory=list)
    iterations: int = 0
    sends: int = 0
    sent: set[int] = field(default_factory=set)
    continuations: int = 0
    done: bool = False
    recorded: bool = False  # an item exists, so finishing the turn deletes it

    @property
    def resumed(self) -> bool:
        return self.recorded and (self.iterations > 0 or bool(self.sent))


def turn_sort_key(turn_id: str) -> str:
    return f"{TURN_PREFIX}{turn_id}"


def parse_turn_item(item: dict[str, Any]) -> TurnProgress:
    turn_id = item["sk"]["S"][len(TURN_PREFIX) :]
    messages: list[Message] = []
    if "messages" in item:
        messages = json.loads(zlib.decompress(item["messages"]["B"]))
    return TurnProgress(
        turn_id=turn_id,
        messages=messages,
        iterations=int(item.get("iterations", {}).get("N", 0)),
        sends=int(item.get("sends", {}).get("N", 0)),
        sent={int(number) for number in item.get("sent", {}).get("NS", [])},
        continuations=int(item.get("continuations", {}).get("N", 0)),
        done=item.get("done", {}).get("BOOL", False),
        recorded=True,
    )


def progress_in(history: SessionHistory, turn_id: str) -> TurnProgress:
    """The turn's record among the unfinished turns the session Query returned (or a new one)."""
    key = turn_sort_key(turn_id)
    found = [item for item in history.open_turns if item["sk"]["S"] == key]
    return parse_turn_item(found[0]) if found else TurnProgress(turn_id)


class TurnJournal:
    def __init__(self, table: str, dynamodb: DynamoDBClient) -> None:
        self._table = table
        self._dynamodb = dynamodb

    def _key(self, session_key: str, turn_id: str) -> dict[str, Any]:
        return {"pk": {"S": session_key}, "sk": {"S": turn_sort_key(turn_id)}}

    def get(self, session_key: str, turn_id: str) -> TurnProgress:
        """The turn's record (one GetItem), for turns whose session Query does not return it."""
        item = self._dynamodb.get_item(
            TableName=self._table, Key=self._key(session_key, turn_id), ConsistentRead=True
        ).get("Item")
        return parse_turn_item(item) if item else TurnProgress(turn_id)

    def checkpoint(self, session_key: str, progress: TurnProgress) -> None:
        """Record the completed iterations (one PutItem, carrying the sends recorded so far)."""
        packed = zlib.compress(json.dumps(progress.messages, ensure_ascii=False).encode())
        if len(packed) > MAX_CHECKPOINT_BYTES:
            logger.warning(
                "turn checkpoint skipped: %d bytes compressed is over the item limit", len(packed)
            )
            return
        item: dict[str, Any] = {
            **self._key(session_key, progress.turn_id),
            "messages": {"B": packed},
            "iterations": {"N": str(progress.iterations)},
            "sends": {"N": str(progress.sends)},
            "continuations": {"N": str(progress.continuations)},
            "expires_at": {"N": str(int(time.time()) + OPEN_TURN_SECONDS)},
        }
        if progress.sent:
            item["sent"] = {"NS": [str(number) for number in sorted(progress.sent)]}
        self._dynamodb.put_item(TableName=self._table, Item=item)
        progress.recorded = True

    def record_send(self, session_key: str, progress: TurnProgress, number: int) -> None:
        """Record that message `number` of the turn was sent (a conditional UpdateItem: the
        number must not be there yet, or two runs of the turn sent it)."""
        try:
            self._dynamodb.update_item(
                TableName=self._table,
                Key=self._key(session_key, progress.turn_id),
                UpdateExpression="ADD sent :number SET expires_at = :expires",
                ConditionExpression="attribute_not_exists(sent) OR NOT contains(sent, :one)",
                ExpressionAttributeValues={
                    ":number": {"NS": [str(number)]},
                    ":one": {"N": str(number)},
                    ":expires": {"N": str(int(time.time()) + OPEN_TURN_SECONDS)},
                },
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            logger.warning("message %d of the turn was recorded by another run", number)
        progress.sent.add(number)
        progress.recorded = True

    def finish(self, session_key: str, progress: TurnProgress) -> list[TransactWriteItemTypeDef]:
        """The transaction items that close the turn's record (none if it never had one)."""
        if not progress.recorded:
            return []
        return [
            {"Delete": {"TableName": self._table, "Key": self._key(session_key, progress.turn_id)}}
        ]

    def discard(self, session_key: str, progress: TurnProgress) -> None:
        """Forget an unfinished turn's record (the user was told it failed)."""
        if progress.recorded:
            self._dynamodb.delete_item(
                TableName=self._table, Key=self._key(session_key, progress.turn_id)
            )
            progress.recorded = False

    def mark_done(self, session_key: str, progress: TurnProgress) -> None:
        """For a turn that saves no session (heartbeat, background task): a short-lived record
        that it is done, replacing its progress."""
        self._dynamodb.put_item(
            TableName=self._table,
            Item={
                **self._key(session_key, progress.turn_id),
                "done": {"BOOL": True},
                "expires_at": {"N": str(int(time.time()) + DONE_TURN_SECONDS)},
            },
        )
        progress.done = True
