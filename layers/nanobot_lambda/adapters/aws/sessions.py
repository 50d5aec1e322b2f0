"""Sessions in DynamoDB: one item per message, so a session can grow for years.

Items of a session (partition `pk` = session key):
- `msg#<12-digit seq>`: one chat message as JSON, append-only; once consolidation has moved the
  cursor past it, it gets an `expires_at` (`summarised_keep_days` later: SESSION_RETENTION_DAYS)
  and the table's TTL removes it then, so a chat's items stay bounded;
- `~meta`: the header (`next_seq`, `consolidated_upto`, `recent_turns` and `turn_log`, their
  records as JSON strings (core/sessions.py, `TurnRecord`); the chat's `/model` and
  `/think` choices `model_preset`, `thinking` when it made any; `noticed_upto` once a
  consolidation moved the cursor, and `noticed_at` (ISO 8601, UTC) once the chat was told of
  one, see core/sessions.py). It sorts after every `msg#` item, so one Query, newest first,
  returns the header and the recent window together;
- `~turn#<turn id>`: an unfinished turn's progress (`adapters/aws/journal.py`), returned by
  the same Query.

Appending a turn is one TransactWriteItems: the new messages plus the header, conditional on
`next_seq` being what was loaded, with whatever other writes the turn folds in (its journal
closing, its usage counts). A cancelled transaction is read item by item (its
`CancellationReasons`, in the order of the items), and only one cause means the session moved:
- a message's or the header's condition failed: another writer appended since the load
  (`SessionConflict`: the caller reloads the header and saves again);
- a folded write's condition failed: that store's item was not what it expected, and a reload
  of the session cannot change it (`StorageConflict` naming the store);
- DynamoDB was only busy (a concurrent transaction on one of the items, throttling): the same
  transaction is sent again, `WRITE_ATTEMPTS` in all, then a `StorageError` (the job's retry);
- anything else (an invalid item, an item collection full): a `StorageError` naming the code
  and the item it came from, never what the item holds.
A message over DynamoDB's item limit is refused before anything is written, so an append of
more than one transaction never stops half-way for it.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from nanobot_lambda.adapters.aws.errors import (
    BUSY_REASONS,
    CONDITION_FAILED,
    aws_errors,
    cancellation_reasons,
    error_code,
)
from nanobot_lambda.adapters.aws.journal import TURN_PREFIX, parse_turn_item
from nanobot_lambda.adapters.aws.numbers import number_value
from nanobot_lambda.adapters.aws.usage import PREFIX as USAGE_PREFIX
from nanobot_lambda.core.errors import StorageConflict, StorageError
from nanobot_lambda.core.ports import StoredWrite
from nanobot_lambda.core.sessions import (
    RECENT_TURNS,
    ChatPreferences,
    Message,
    SessionConflict,
    SessionHistory,
    TurnRecord,
    align_to_user_turn,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

logger = logging.getLogger(__name__)

MESSAGE_PREFIX = "msg#"
META_KEY = "~meta"
TRANSACTION_LIMIT = 100
ITEM_LIMIT_BYTES = 400 * 1024  # DynamoDB's: attribute names and values, UTF-8
WRITE_ATTEMPTS = 3  # a transaction DynamoDB was only busy for is sent this often in all
# Unfinished turns the session Query reads past before the header (rarely more than one).
OPEN_TURNS_READ = 4


def _seq(item: dict[str, Any]) -> int:
    return int(item["sk"]["S"][len(MESSAGE_PREFIX) :])


def _sort_key(seq: int) -> str:
    return f"{MESSAGE_PREFIX}{seq:012d}"


def _number(item: dict[str, Any] | None, name: str) -> int:
    if item is None or name not in item:
        return 0
    return int(item[name]["N"])


def _text(item: dict[str, Any] | None, name: str) -> str | None:
    if item is None or name not in item:
        return None
    return str(item[name]["S"])


def _moment(item: dict[str, Any] | None, name: str) -> datetime | None:
    """A time written as ISO 8601; None when absent or unreadable (as if never)."""
    text = _text(item, name)
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def _meta(items: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((item for item in items if item["sk"]["S"] == META_KEY), None)


class DynamoSessionStore:
    def __init__(
        self, table: str, dynamodb: DynamoDBClient, *, summarised_keep_days: int | None = None
    ) -> None:
        """`summarised_keep_days`: how long messages are kept once consolidated (None: always)."""
        self._table = table
        self._dynamodb = dynamodb
        self._summarised_keep_days = summarised_keep_days

    @aws_errors
    def load(self, key: str, limit: int) -> SessionHistory:
        wanted = limit + 1 + OPEN_TURNS_READ  # unfinished turns, the header, the window
        arguments: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": key}},
            "ScanIndexForward": False,
            "Limit": wanted,
        }
        items: list[dict[str, Any]] = []
        while True:  # a Query page stops at 1 MB: long tool results can fill one before `limit`
            response = self._dynamodb.query(**arguments)
            items.extend(response.get("Items", []))
            if "LastEvaluatedKey" not in response or len(items) >= wanted:
                break
            if items[-1]["sk"]["S"].startswith(MESSAGE_PREFIX) and (
                _seq(items[-1]) < _number(_meta(items), "consolidated_upto")
            ):
                break  # past the consolidation cursor: nothing older is sent
            arguments["ExclusiveStartKey"] = response["LastEvaluatedKey"]
            arguments["Limit"] = wanted - len(items)
        open_turns = [
            parse_turn_item(item) for item in items if item["sk"]["S"].startswith(TURN_PREFIX)
        ]
        meta = _meta(items)
        cursor = _number(meta, "consolidated_upto")
        newest_first = [
            json.loads(item["message"]["S"])
            for item in items
            if item["sk"]["S"].startswith(MESSAGE_PREFIX) and _seq(item) >= cursor
        ][:limit]
        recent = [value["S"] for value in (meta or {}).get("recent_turns", {}).get("L", [])]
        logged = [value["S"] for value in (meta or {}).get("turn_log", {}).get("L", [])]
        records = [record for text in logged if (record := TurnRecord.from_json(text))]
        return SessionHistory(
            key,
            align_to_user_turn(newest_first[::-1]),
            next_seq=_number(meta, "next_seq"),
            consolidated_upto=cursor,
            recent_turns=tuple(recent),
            turn_log=tuple(records),
            open_turns={progress.turn_id: progress for progress in open_turns},
            preferences=ChatPreferences(
                model_preset=_text(meta, "model_preset"), thinking=_text(meta, "thinking")
            ),
            noticed_upto=_number(meta, "noticed_upto") if meta and "noticed_upto" in meta else None,
            noticed_at=_moment(meta, "noticed_at"),
        )

    @aws_errors
    def append(
        self,
        history: SessionHistory,
        messages: list[Message],
        *,
        turn_id: str | None = None,
        also: Sequence[StoredWrite] = (),
        record: TurnRecord | None = None,
    ) -> None:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        bodies = [json.dumps(message, ensure_ascii=False) for message in messages]
        for number, body in enumerate(bodies, start=1):
            size = _item_bytes(self._message_item(history.key, 0, body, now))
            if size > ITEM_LIMIT_BYTES:  # refused before any write: the append keeps nothing
                raise StorageError(
                    f"DynamoSessionStore.append: message {number} of {len(bodies)} is {size} "
                    f"bytes, over DynamoDB's item limit of {ITEM_LIMIT_BYTES}; nothing was saved"
                )
        chunk_size = TRANSACTION_LIMIT - 1 - len(also)  # room for the header and `also`
        starts = list(range(0, len(messages), chunk_size)) or [0]
        for start in starts:
            chunk = messages[start : start + chunk_size]
            last = start == starts[-1]
            first = history.next_seq
            items: list[TransactWriteItemTypeDef] = [
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": self._message_item(history.key, first + offset, body, now),
                        "ConditionExpression": "attribute_not_exists(sk)",
                    }
                }
                for offset, body in enumerate(bodies[start : start + chunk_size])
            ]
            recent, log = history.recent_turns, history.turn_log
            if last and turn_id is not None:
                recent = (*recent, turn_id)[-RECENT_TURNS:]
            if last and record is not None:
                log = (*log, record)[-RECENT_TURNS:]
            header = self._header_update(history, first, first + len(chunk), recent, log)
            items.append(header)
            if last:
                items.extend(also)  # type: ignore[arg-type]  # the other stores' writes
            self._transact(history.key, items, session_items=len(chunk) + 1)
            history.next_seq += len(chunk)
            history.messages.extend(chunk)
            history.recent_turns, history.turn_log = recent, log

    @staticmethod
    def _message_item(key: str, seq: int, body: str, now: str) -> dict[str, Any]:
        return {
            "pk": {"S": key},
            "sk": {"S": _sort_key(seq)},
            "message": {"S": body},
            "created_at": {"S": now},
        }

    def _transact(
        self, key: str, items: list[TransactWriteItemTypeDef], *, session_items: int
    ) -> None:
        """Write `items` (the session's first `session_items`: messages, then the header; then
        the folded writes) in one transaction; a cancellation raised as what caused it (see
        the module's docstring)."""
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                self._dynamodb.transact_write_items(TransactItems=items)
                return
            except ClientError as error:
                reasons = cancellation_reasons(error)
                if not reasons:
                    raise  # not a cancellation (e.g. a ValidationException): aws_errors maps it
                causes = {index: code for index, code in enumerate(reasons) if code != "None"}
                busy = bool(causes) and set(causes.values()) <= BUSY_REASONS
                if not busy or attempt == WRITE_ATTEMPTS:
                    raise _cancellation(key, causes, items, session_items, attempt) from error
            time.sleep(random.uniform(0.02, 0.1) * attempt)  # noqa: S311 - jitter, not a secret

    def _header_update(
        self,
        history: SessionHistory,
        expected: int,
        new: int,
        recent_turns: tuple[str, ...],
        turn_log: tuple[TurnRecord, ...],
    ) -> TransactWriteItemTypeDef:
        condition = "next_seq = :expected"
        if expected == 0:
            condition = "attribute_not_exists(next_seq) OR next_seq = :expected"
        update = "SET next_seq = :new, recent_turns = :recent"
        values: dict[str, Any] = {
            ":expected": number_value(expected),
            ":new": number_value(new),
            ":recent": {"L": [{"S": turn} for turn in recent_turns]},
        }
        if turn_log:
            update += ", turn_log = :log"
            values[":log"] = {"L": [{"S": record.to_json()} for record in turn_log]}
        if history.noticed_upto is not None:  # how far the chat was told of consolidation
            update += ", noticed_upto = :noticed"
            values[":noticed"] = number_value(history.noticed_upto)
        if history.noticed_at is not None:  # and when it was last told
            update += ", noticed_at = :noticed_at"
            told = history.noticed_at.astimezone(UTC).isoformat(timespec="seconds")
            values[":noticed_at"] = {"S": told}
        return {
            "Update": {
                "TableName": self._table,
                "Key": {"pk": {"S": history.key}, "sk": {"S": META_KEY}},
                "UpdateExpression": update,
                "ConditionExpression": condition,
                "ExpressionAttributeValues": values,
            }
        }

    @aws_errors
    def load_range(self, key: str, start: int, end: int) -> list[tuple[int, Message]]:
        if end <= start:
            return []
        arguments: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :first AND :last",
            "ExpressionAttributeValues": {
                ":pk": {"S": key},
                ":first": {"S": _sort_key(start)},
                ":last": {"S": _sort_key(end - 1)},
            },
        }
        found: list[tuple[int, Message]] = []
        while True:
            response = self._dynamodb.query(**arguments)
            found.extend(
                (_seq(item), json.loads(item["message"]["S"])) for item in response["Items"]
            )
            if "LastEvaluatedKey" not in response:
                return found
            arguments["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    @aws_errors
    def set_preferences(self, key: str, preferences: ChatPreferences) -> None:
        # Its own attributes of the header: the appends' condition (next_seq) is untouched, so
        # a choice made while a turn runs neither fails that turn's save nor is lost by it.
        chosen = {
            name: value
            for name, value in (
                ("model_preset", preferences.model_preset),
                ("thinking", preferences.thinking),
            )
        }
        sets = [f"{name} = :{name}" for name, value in chosen.items() if value is not None]
        removes = [name for name, value in chosen.items() if value is None]
        expression = " ".join(
            part
            for part in (
                f"SET {', '.join(sets)}" if sets else "",
                f"REMOVE {', '.join(removes)}" if removes else "",
            )
            if part
        )
        values = {f":{name}": {"S": value} for name, value in chosen.items() if value is not None}
        self._dynamodb.update_item(
            TableName=self._table,
            Key={"pk": {"S": key}, "sk": {"S": META_KEY}},
            UpdateExpression=expression,
            **({"ExpressionAttributeValues": values} if values else {}),  # type: ignore[arg-type]
        )

    @aws_errors
    def advance_cursor(self, key: str, expected: int, new: int, *, noticed: bool = False) -> bool:
        condition = "consolidated_upto = :expected"
        if expected == 0:
            condition = "attribute_not_exists(consolidated_upto) OR consolidated_upto = :expected"
        # The notice is due from the old cursor on, unless the caller tells the chat itself.
        notice = ":new" if noticed else "if_not_exists(noticed_upto, :expected)"
        try:
            self._dynamodb.update_item(
                TableName=self._table,
                Key={"pk": {"S": key}, "sk": {"S": META_KEY}},
                UpdateExpression=f"SET consolidated_upto = :new, noticed_upto = {notice}",
                ConditionExpression=condition,
                ExpressionAttributeValues={
                    ":expected": number_value(expected),
                    ":new": number_value(new),
                },
            )
        except ClientError as error:
            if error_code(error) == CONDITION_FAILED:
                return False
            raise
        self._expire_summarised(key, expected, new)
        return True

    def _expire_summarised(self, key: str, start: int, end: int) -> None:
        """Give the messages consolidation has just summarised (`start` to `end`) their expiry:
        one conditional update each (never making an item that is not there). A consolidation
        covers about half the history budget, so this is tens of writes, rarely. One that fails
        leaves that message kept: the cursor has moved all the same."""
        if self._summarised_keep_days is None:
            return
        expires_at = number_value(int(time.time()) + self._summarised_keep_days * 86_400)
        for seq in range(start, end):
            try:
                self._dynamodb.update_item(
                    TableName=self._table,
                    Key={"pk": {"S": key}, "sk": {"S": _sort_key(seq)}},
                    UpdateExpression="SET expires_at = :expires",
                    ConditionExpression="attribute_exists(pk)",
                    ExpressionAttributeValues={":expires": expires_at},
                )
            except ClientError as error:
                if error_code(error) != CONDITION_FAILED:
                    logger.warning(
                        "a summarised message keeps no expiry (%s)",
                        error_code(error),
                        extra={"session": key, "seq": seq},
                    )


def _item_bytes(item: dict[str, Any]) -> int:
    """An item's size as DynamoDB counts it (its attributes here are all strings)."""
    return sum(len(name.encode()) + len(value["S"].encode()) for name, value in item.items())


def _cancellation(
    key: str,
    causes: dict[int, str],
    items: list[TransactWriteItemTypeDef],
    session_items: int,
    attempts: int,
) -> StorageError:
    """The core's error for a cancelled append, from the reason of each item that had one."""
    refused = [index for index, code in causes.items() if code == "ConditionalCheckFailed"]
    if any(index < session_items for index in refused):
        return SessionConflict(key)
    if refused:
        role = _item_role(items, refused[0], session_items)
        return StorageConflict(
            f"DynamoSessionStore.append: the condition of {role} failed (ConditionalCheckFailed);"
            " the session did not move and nothing was saved"
        )
    described = ", ".join(
        f"{code} on {_item_role(items, index, session_items)}" for index, code in causes.items()
    )
    if causes and set(causes.values()) <= BUSY_REASONS:
        return StorageError(
            f"DynamoSessionStore.append: DynamoDB was busy ({described}) "
            f"{attempts} times; nothing was saved, the job's retry may pass"
        )
    return StorageError(
        "DynamoSessionStore.append: the transaction was cancelled"
        f" ({described or 'no reason given'}); nothing was saved"
    )


def _item_role(items: list[TransactWriteItemTypeDef], index: int, session_items: int) -> str:
    """What the item at `index` of an append's transaction is, for an error (never its
    content): a message, the header, or whose folded write."""
    if index < session_items - 1:
        return f"message {index + 1} of {session_items - 1}"
    if index == session_items - 1:
        return "the session header"
    if index >= len(items):
        return f"item {index + 1} (of {len(items)})"
    written: Mapping[str, Any] = items[index]  # {operation: its parameters}
    operation, write = next(iter(written.items()))
    item_key: Mapping[str, Any] = write.get("Key") or write.get("Item") or {}
    partition = str(item_key.get("pk", {}).get("S", ""))
    sort_key = str(item_key.get("sk", {}).get("S", ""))
    if sort_key.startswith(TURN_PREFIX):
        owner = "the turn journal's record"
    elif partition.startswith(USAGE_PREFIX):
        owner = f"the usage counts ({sort_key})"
    else:
        owner = "another store's item"
    return f"{owner}, a folded {operation}"
