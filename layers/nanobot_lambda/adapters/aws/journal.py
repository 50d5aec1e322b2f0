"""The turn journal in DynamoDB: the item `~turn#<turn id>` in the turn's session partition.

Attributes: `messages` (zlib JSON), `iterations`, `sends`, `continuations`, `sent` (a number
set), `parts` (a string set of `<message>.<part>`), `partial_of` and `partial_text` (zlib),
`context` (the runtime-context block the request was sent with), or `done` for a finished turn
that saves no session. The items sort after the session header, so the session Query a turn
makes anyway returns them (`adapters/aws/sessions.py`). See `core/journal.py` for what the
journal guarantees.
"""

from __future__ import annotations

import json
import logging
import time
import zlib
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from nanobot_lambda.adapters.aws.errors import CONDITION_FAILED, aws_errors, error_code
from nanobot_lambda.core.journal import Message, TurnProgress
from nanobot_lambda.core.ports import StoredWrite

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

logger = logging.getLogger(__name__)

TURN_PREFIX = "~turn#"
# An unfinished turn (it went to the dead-letter queue) is forgotten after a week.
OPEN_TURN_SECONDS = 7 * 24 * 3600
# Turns without a session (heartbeat, background task) keep a "done" record this long.
DONE_TURN_SECONDS = 3 * 24 * 3600
# DynamoDB items stop at 400 KB; a checkpoint bigger than this is skipped (the turn then
# resumes from its previous checkpoint).
MAX_CHECKPOINT_BYTES = 350_000


def turn_sort_key(turn_id: str) -> str:
    return f"{TURN_PREFIX}{turn_id}"


def parse_turn_item(item: dict[str, Any]) -> TurnProgress:
    turn_id = item["sk"]["S"][len(TURN_PREFIX) :]
    messages: list[Message] = []
    if "messages" in item:
        messages = json.loads(zlib.decompress(item["messages"]["B"]))
    partial = None
    if "partial_of" in item:
        text = zlib.decompress(item["partial_text"]["B"]).decode()
        partial = (int(item["partial_of"]["N"]), text)
    return TurnProgress(
        turn_id=turn_id,
        messages=messages,
        iterations=int(item.get("iterations", {}).get("N", 0)),
        sends=int(item.get("sends", {}).get("N", 0)),
        sent={int(number) for number in item.get("sent", {}).get("NS", [])},
        parts={_part_of(value) for value in item.get("parts", {}).get("SS", [])},
        partial=partial,
        continuations=int(item.get("continuations", {}).get("N", 0)),
        context=item.get("context", {}).get("S"),
        done=item.get("done", {}).get("BOOL", False),
        recorded=True,
    )


def _part_label(message: int, part: int) -> str:
    return f"{message}.{part}"


def _part_of(label: str) -> tuple[int, int]:
    message, part = label.split(".")
    return int(message), int(part)


def _partial_attributes(number: int, text: str) -> dict[str, Any]:
    return {
        "partial_of": {"N": str(number)},
        "partial_text": {"B": zlib.compress(text.encode())},
    }


def _context_attribute(progress: TurnProgress) -> dict[str, Any]:
    return {} if progress.context is None else {"context": {"S": progress.context}}


class DynamoTurnJournal:
    def __init__(self, table: str, dynamodb: DynamoDBClient) -> None:
        self._table = table
        self._dynamodb = dynamodb

    def _key(self, session_key: str, turn_id: str) -> dict[str, Any]:
        return {"pk": {"S": session_key}, "sk": {"S": turn_sort_key(turn_id)}}

    @aws_errors
    def get(self, session_key: str, turn_id: str) -> TurnProgress:
        """The turn's record (one GetItem), for turns whose session Query does not return it."""
        item = self._dynamodb.get_item(
            TableName=self._table, Key=self._key(session_key, turn_id), ConsistentRead=True
        ).get("Item")
        return parse_turn_item(item) if item else TurnProgress(turn_id)

    @aws_errors
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
        if progress.parts:
            item["parts"] = {"SS": [_part_label(*part) for part in sorted(progress.parts)]}
        if progress.partial is not None:
            item.update(_partial_attributes(*progress.partial))
        item.update(_context_attribute(progress))
        self._dynamodb.put_item(TableName=self._table, Item=item)
        progress.recorded = True

    @aws_errors
    def record_send(self, session_key: str, progress: TurnProgress, number: int) -> None:
        """Record that message `number` of the turn was sent in full (a conditional UpdateItem:
        the number must not be there yet, or two runs of the turn sent it)."""
        self._add_once(session_key, progress, "sent", {"N": str(number)}, f"message {number}")
        progress.sent.add(number)

    @aws_errors
    def record_part(
        self, session_key: str, progress: TurnProgress, number: int, part: int, text: str
    ) -> None:
        """Record that `part` (from 1) of message `number`, which goes out in several parts, was
        sent; with the first part, the message's `text`, which a retry finishes."""
        label = _part_label(number, part)
        partial = _partial_attributes(number, text) if part == 1 else {}
        self._add_once(session_key, progress, "parts", {"S": label}, f"part {label}", partial)
        progress.parts.add((number, part))
        if part == 1:
            progress.partial = (number, text)

    def _add_once(
        self,
        session_key: str,
        progress: TurnProgress,
        attribute: str,
        value: dict[str, str],
        what: str,
        also: dict[str, Any] | None = None,
    ) -> None:
        """ADD one number or string to a set attribute, unless it is there already (then
        another run of the turn sent it too: reported, not raised). `also`: attributes SET."""
        kind = "NS" if "N" in value else "SS"
        values: dict[str, Any] = {
            ":item": {kind: [next(iter(value.values()))]},
            ":one": value,
            ":expires": {"N": str(int(time.time()) + OPEN_TURN_SECONDS)},
        }
        assignments = ["expires_at = :expires"]
        for name, attribute_value in {**(also or {}), **_context_attribute(progress)}.items():
            values[f":{name}"] = attribute_value
            assignments.append(f"{name} = :{name}")
        try:
            self._dynamodb.update_item(
                TableName=self._table,
                Key=self._key(session_key, progress.turn_id),
                UpdateExpression=f"ADD {attribute} :item SET {', '.join(assignments)}",
                ConditionExpression=(
                    f"attribute_not_exists({attribute}) OR NOT contains({attribute}, :one)"
                ),
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
            logger.warning("%s of the turn was recorded by another run", what)
        progress.recorded = True

    def finish(self, session_key: str, progress: TurnProgress) -> list[StoredWrite]:
        """The transaction items that close the turn's record (none if it never had one)."""
        if not progress.recorded:
            return []
        return [
            {"Delete": {"TableName": self._table, "Key": self._key(session_key, progress.turn_id)}}
        ]

    @aws_errors
    def discard(self, session_key: str, progress: TurnProgress) -> None:
        """Forget an unfinished turn's record (the user was told it failed)."""
        if progress.recorded:
            self._dynamodb.delete_item(
                TableName=self._table, Key=self._key(session_key, progress.turn_id)
            )
            progress.recorded = False

    @aws_errors
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
