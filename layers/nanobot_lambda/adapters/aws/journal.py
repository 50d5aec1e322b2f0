"""The turn journal in DynamoDB: the item `~turn#<turn id>` in the turn's session partition.

Attributes: `messages` (zlib JSON), `iterations`, `sends`, `continuations`, one `shown_<n>` per
message n the turn sent (zlib JSON `{"id", "text"}`: its identity and text), `parts` (a string
set of `<message>.<part>`), `partial_of` and `partial_text` (zlib), `aside` (a list of
`{"at", "text"}`: messages shown by an earlier run that a later one did not say again),
`ended` and `ended_at` (the text a turn ended with, unanswered, and its number), `context`
(the runtime-context block the request was sent with), `answered` (a boolean, only when true:
the answer was delivered and only the turn's save is left), `pending` (zlib JSON: a call
waiting for a person's approval, core/approvals.py), `untrusted` (a boolean, only when true),
or `done` for a finished turn that saves no session. Records written
before messages had identities hold `sent` (a number set) instead of `shown_<n>`: those
messages are read with an unknown identity and skipped by number, as they were then. The items
sort after the session header, so the session Query a turn makes anyway returns them
(`adapters/aws/sessions.py`). See `core/journal.py` for what the journal guarantees.
"""

from __future__ import annotations

import json
import logging
import time
import zlib
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from nanobot_lambda.adapters.aws.errors import CONDITION_FAILED, aws_errors, error_code
from nanobot_lambda.adapters.aws.numbers import number_value, plain
from nanobot_lambda.core.approvals import Pending
from nanobot_lambda.core.journal import Aside, Message, Shown, TurnProgress
from nanobot_lambda.core.ports import StoredWrite
from nanobot_lambda.core.sessions import cut_to_fit

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

logger = logging.getLogger(__name__)

TURN_PREFIX = "~turn#"
SHOWN_PREFIX = "shown_"
# An unfinished turn (it went to the dead-letter queue) is forgotten after a week.
OPEN_TURN_SECONDS = 7 * 24 * 3600
# Turns without a session (heartbeat, background task) keep a "done" record this long.
DONE_TURN_SECONDS = 3 * 24 * 3600
# DynamoDB items stop at 400 KB; a checkpoint's messages are packed within this, the rest of
# the item (what was shown, in parts) within what is left.
MAX_CHECKPOINT_BYTES = 350_000


def turn_sort_key(turn_id: str) -> str:
    return f"{TURN_PREFIX}{turn_id}"


def _packed(value: Any) -> bytes:
    return zlib.compress(json.dumps(value, ensure_ascii=False).encode())


def _packed_within_limit(messages: list[Message]) -> bytes | None:
    """The messages packed for a checkpoint; over the item limit (huge tool results), their
    longest strings cut in the middle, with a note, until they fit (`cut_to_fit`): a run
    that resumes from them reads them cut, as the saved session would keep them. Skipping the
    record instead would lose more than the step: an `answered` record (saving.py) too, and
    the retry would ask the model again. None (skipped) only if even that cannot fit."""
    packed = _packed(messages)
    if len(packed) <= MAX_CHECKPOINT_BYTES:
        return packed
    try:
        fitted = cut_to_fit(messages, lambda cut: len(_packed(cut)) <= MAX_CHECKPOINT_BYTES)
    except ValueError:
        logger.error(
            "turn checkpoint skipped: %d bytes compressed, over the item limit", len(packed)
        )
        return None
    logger.warning("turn checkpoint cut to fit the item limit (%d bytes compressed)", len(packed))
    return _packed(fitted)


def _unpacked(value: bytes) -> Any:
    return json.loads(zlib.decompress(value))


def _shown_attribute(shown: Shown) -> dict[str, Any]:
    return {"B": _packed({"id": shown.identity, "text": shown.text})}


def _shown_of(value: dict[str, Any]) -> Shown:
    unpacked = _unpacked(value["B"])
    return Shown(unpacked.get("id"), str(unpacked.get("text", "")))


def _aside_attribute(aside: list[Aside]) -> dict[str, Any]:
    return {"L": [{"M": {"at": number_value(e.at), "text": {"B": _packed(e.text)}}} for e in aside]}


def _sent_of(item: dict[str, Any]) -> dict[int, Shown]:
    sent = {int(number): Shown(None) for number in item.get("sent", {}).get("NS", [])}
    for name, value in item.items():
        if name.startswith(SHOWN_PREFIX):
            sent[int(name[len(SHOWN_PREFIX) :])] = _shown_of(value)
    return sent


def parse_turn_item(item: dict[str, Any]) -> TurnProgress:
    turn_id = item["sk"]["S"][len(TURN_PREFIX) :]
    messages: list[Message] = _unpacked(item["messages"]["B"]) if "messages" in item else []
    partial = None
    if "partial_of" in item:
        text = zlib.decompress(item["partial_text"]["B"]).decode()
        partial = (int(item["partial_of"]["N"]), text)
    aside = [
        Aside(int(entry["M"]["at"]["N"]), str(_unpacked(entry["M"]["text"]["B"])))
        for entry in item.get("aside", {}).get("L", [])
    ]
    return TurnProgress(
        turn_id=turn_id,
        messages=messages,
        iterations=int(item.get("iterations", {}).get("N", 0)),
        sends=int(item.get("sends", {}).get("N", 0)),
        sent=_sent_of(item),
        parts={_part_of(value) for value in item.get("parts", {}).get("SS", [])},
        partial=partial,
        aside=aside,
        ended=item.get("ended", {}).get("S"),
        ended_at=int(item.get("ended_at", {}).get("N", 0)),
        continuations=int(item.get("continuations", {}).get("N", 0)),
        context=item.get("context", {}).get("S"),
        answered=item.get("answered", {}).get("BOOL", False),
        pending=Pending.of_record(_unpacked(item["pending"]["B"])) if "pending" in item else None,
        untrusted=item.get("untrusted", {}).get("BOOL", False),
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
        "partial_of": number_value(number),
        "partial_text": {"B": zlib.compress(text.encode())},
    }


def _context_attribute(progress: TurnProgress) -> dict[str, Any]:
    return {} if progress.context is None else {"context": {"S": progress.context}}


def _expiry() -> dict[str, str]:
    return number_value(int(time.time()) + OPEN_TURN_SECONDS)


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
        """Record the turn's messages so far (one PutItem, carrying the sends recorded so far)."""
        packed = _packed_within_limit(progress.messages)
        if packed is None:
            return
        item: dict[str, Any] = {
            **self._key(session_key, progress.turn_id),
            "messages": {"B": packed},
            "iterations": number_value(progress.iterations),
            "sends": number_value(progress.sends),
            "continuations": number_value(progress.continuations),
            "expires_at": _expiry(),
        }
        for number, shown in progress.sent.items():
            if shown.identity is None:  # recorded before identities: kept as it was
                item.setdefault("sent", {"NS": []})["NS"].append(plain(number))
            else:
                item[f"{SHOWN_PREFIX}{number}"] = _shown_attribute(shown)
        if progress.parts:
            item["parts"] = {"SS": [_part_label(*part) for part in sorted(progress.parts)]}
        if progress.partial is not None:
            item.update(_partial_attributes(*progress.partial))
        if progress.aside:
            item["aside"] = _aside_attribute(progress.aside)
        if progress.ended is not None:
            item["ended"] = {"S": progress.ended}
            item["ended_at"] = number_value(progress.ended_at)
        if progress.answered:
            item["answered"] = {"BOOL": True}
        if progress.pending is not None:
            item["pending"] = {"B": _packed(progress.pending.as_record())}
        if progress.untrusted:
            item["untrusted"] = {"BOOL": True}
        item.update(_context_attribute(progress))
        self._dynamodb.put_item(TableName=self._table, Item=item)
        progress.recorded = True

    @aws_errors
    def record_send(
        self, session_key: str, progress: TurnProgress, number: int, shown: Shown
    ) -> None:
        """Record that message `number` of the turn, `shown`, was sent in full (a conditional
        UpdateItem: no message may be recorded under that number yet, or two runs sent one)."""
        attribute = f"{SHOWN_PREFIX}{number}"
        self._update(
            session_key,
            progress,
            assign={attribute: _shown_attribute(shown)},
            condition=f"attribute_not_exists({attribute})",
            what=f"message {number}",
        )
        progress.sent[number] = shown

    @aws_errors
    def record_part(
        self, session_key: str, progress: TurnProgress, number: int, part: int, text: str
    ) -> None:
        """Record that `part` (from 1) of message `number`, which goes out in several parts, was
        sent; with the first part, the message's `text`, which a retry finishes."""
        label = _part_label(number, part)
        self._update(
            session_key,
            progress,
            assign=_partial_attributes(number, text) if part == 1 else {},
            add={"parts": {"SS": [label]}},
            condition="attribute_not_exists(parts) OR NOT contains(parts, :one)",
            values={":one": {"S": label}},
            what=f"part {label}",
        )
        progress.parts.add((number, part))
        if part == 1:
            progress.partial = (number, text)

    @aws_errors
    def set_aside(
        self, session_key: str, progress: TurnProgress, numbers: list[int], at: int
    ) -> None:
        """Messages `numbers` were sent by an earlier run, and this run says something else
        from there: their records go, and they are kept aside, shown before message `at` of
        the turn's messages."""
        aside = [
            Aside(at, progress.sent[number].text)
            for number in sorted(numbers)
            if number in progress.sent and progress.sent[number].identity is not None
        ]
        labels = sorted(_part_label(*part) for part in progress.parts if part[0] in numbers)
        partial_goes = progress.partial is not None and progress.partial[0] in numbers
        remove = [f"{SHOWN_PREFIX}{number}" for number in numbers if number in progress.sent]
        self._update(
            session_key,
            progress,
            append={"aside": _aside_attribute(aside)},
            delete={"parts": {"SS": labels}} if labels else {},
            remove=[*remove, *(["partial_of", "partial_text"] if partial_goes else [])],
            what="messages set aside",
        )
        for number in numbers:
            progress.sent.pop(number, None)
        progress.parts = {part for part in progress.parts if part[0] not in numbers}
        if partial_goes:
            progress.partial = None
        progress.aside.extend(aside)

    @aws_errors
    def end(self, session_key: str, progress: TurnProgress, text: str, number: int) -> None:
        """Record that the turn ends unanswered with `text`, message `number` (before it is
        sent)."""
        ended = {"ended": {"S": text}, "ended_at": number_value(number)}
        self._update(session_key, progress, assign=ended, what="its end")
        progress.ended, progress.ended_at = text, number

    def _update(
        self,
        session_key: str,
        progress: TurnProgress,
        *,
        assign: dict[str, Any] | None = None,
        append: dict[str, Any] | None = None,
        add: dict[str, Any] | None = None,
        delete: dict[str, Any] | None = None,
        remove: list[str] | None = None,
        condition: str | None = None,
        values: dict[str, Any] | None = None,
        what: str,
    ) -> None:
        """One UpdateItem of the turn's item (made if it does not exist), renewing its expiry
        and keeping its context: `assign` SETs attributes, `append` adds to lists, `add` to
        sets, `delete` takes from sets, `remove` drops attributes. A `condition` that fails
        means another run of the turn recorded the same: reported, not raised."""
        assignments = {"expires_at": _expiry(), **_context_attribute(progress), **(assign or {})}
        values = dict(values or {})
        sets = []
        for name, value in assignments.items():
            values[f":{name}"] = value
            sets.append(f"{name} = :{name}")
        for name, value in (append or {}).items():
            values[f":{name}"], values[":nothing"] = value, {"L": []}
            sets.append(f"{name} = list_append(if_not_exists({name}, :nothing), :{name})")
        clauses = [f"SET {', '.join(sets)}"]
        for verb, changes in (("ADD", add), ("DELETE", delete)):
            if changes:
                for name, value in changes.items():
                    values[f":{verb.lower()}_{name}"] = value
                clauses.append(f"{verb} " + ", ".join(f"{n} :{verb.lower()}_{n}" for n in changes))
        if remove:
            clauses.append(f"REMOVE {', '.join(remove)}")
        arguments: dict[str, Any] = {
            "TableName": self._table,
            "Key": self._key(session_key, progress.turn_id),
            "UpdateExpression": " ".join(clauses),
            "ExpressionAttributeValues": values,
        }
        if condition is not None:
            arguments["ConditionExpression"] = condition
        try:
            self._dynamodb.update_item(**arguments)
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
        """Forget an unfinished turn's record."""
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
                "expires_at": number_value(int(time.time()) + DONE_TURN_SECONDS),
            },
        )
        progress.done = True
