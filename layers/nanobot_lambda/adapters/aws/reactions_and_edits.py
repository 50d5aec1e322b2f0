"""Reactions and edits in the sessions table (core/reactions_and_edits.py). Items:
- partition `feedback#<chat id>`, sort key `reaction#<12-digit message id>#<person id>`: the
  emojis the person shows on the message now (`emojis`, a JSON list: an emptied reaction is
  kept as `[]`) and Telegram's `date`, expiring `FEEDBACK_KEEP_SECONDS` after its last change.
  One Query reads a chat's reactions, oldest message first;
- partition `feedback#<chat id>`, sort key `answer#<12-digit message id>`: a message the bot sent
  to the chat (no other attribute but its expiry, `FEEDBACK_KEEP_SECONDS` after it was sent).
  The reactions to answers are those whose message has one: read with one Query of the answers
  between the first and last message reacted to;
- partition `edit#<session key>`, sort key `<12-digit message id>`: the message's latest text
  (`text`, `edit_date`, `update_id`), written only over an older edit, expiring after
  `EDIT_KEEP_SECONDS` (as long as a dead-lettered message can wait for a redrive).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from nanobot_lambda.adapters.aws.errors import aws_errors, written
from nanobot_lambda.adapters.aws.numbers import number_value
from nanobot_lambda.adapters.aws.queries import items_under
from nanobot_lambda.core.ports import StoredWrite
from nanobot_lambda.core.reactions_and_edits import Edit, Reaction

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

FEEDBACK_PREFIX = "feedback#"
REACTION_PREFIX = "reaction#"
ANSWER_PREFIX = "answer#"
EDIT_PREFIX = "edit#"
EDIT_KEEP_SECONDS = 14 * 24 * 3600  # the dead-letter queue's retention
# Reactions tell how recent answers landed: a chat's partition stays bounded by its last months.
FEEDBACK_KEEP_SECONDS = 90 * 24 * 3600


class DynamoFeedbackBook:
    """The `FeedbackBook` port on the sessions table."""

    def __init__(self, table: str, dynamodb: Callable[[], DynamoDBClient]) -> None:
        self._table = table
        # Created on first use: the webhook needs it only for reactions and edits.
        self._dynamodb = functools.cache(dynamodb)

    @aws_errors
    def record_reaction(self, reaction: Reaction) -> None:
        # A person's later change may arrive first: an older one never replaces it.
        written(
            lambda: self._dynamodb().put_item(
                TableName=self._table,
                Item={
                    "pk": {"S": f"{FEEDBACK_PREFIX}{reaction.chat_id}"},
                    "sk": {
                        "S": f"{REACTION_PREFIX}{reaction.message_id:012d}#{reaction.person_id}"
                    },
                    "emojis": {"S": json.dumps(list(reaction.emojis), ensure_ascii=False)},
                    "date": number_value(reaction.date),
                    "expires_at": number_value(int(time.time()) + FEEDBACK_KEEP_SECONDS),
                },
                ConditionExpression="attribute_not_exists(pk) OR #date <= :date",
                ExpressionAttributeNames={"#date": "date"},
                ExpressionAttributeValues={":date": number_value(reaction.date)},
            )
        )

    @aws_errors
    def reactions(self, chat_id: int) -> list[Reaction]:
        partition = f"{FEEDBACK_PREFIX}{chat_id}"
        items = items_under(self._dynamodb(), self._table, partition, REACTION_PREFIX)
        return [_reaction(chat_id, item) for item in items]

    @aws_errors
    def record_answers(self, chat_id: int, message_ids: Sequence[int]) -> None:
        for message_id in message_ids:  # a run's few messages: a put each
            self._dynamodb().put_item(TableName=self._table, Item=_answer_item(chat_id, message_id))

    def answer_writes(self, chat_id: int, message_ids: Sequence[int]) -> list[StoredWrite]:
        return [
            {"Put": {"TableName": self._table, "Item": _answer_item(chat_id, message_id)}}
            for message_id in message_ids
        ]

    @aws_errors
    def answers_among(self, chat_id: int, message_ids: Collection[int]) -> set[int]:
        if not message_ids:
            return set()
        answers: set[int] = set()
        arguments: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :first AND :last",
            "ExpressionAttributeValues": {
                ":pk": {"S": f"{FEEDBACK_PREFIX}{chat_id}"},
                ":first": {"S": f"{ANSWER_PREFIX}{min(message_ids):012d}"},
                ":last": {"S": f"{ANSWER_PREFIX}{max(message_ids):012d}"},
            },
            "ProjectionExpression": "sk",
        }
        while True:
            response = self._dynamodb().query(**arguments)
            for item in response.get("Items", []):
                answers.add(int(item["sk"]["S"].removeprefix(ANSWER_PREFIX)))
            if "LastEvaluatedKey" not in response:
                return answers & set(message_ids)
            arguments["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    @aws_errors
    def record_edit(self, edit: Edit) -> None:
        # A later edit may arrive first (webhook deliveries run side by side): keep the newest.
        written(
            lambda: self._dynamodb().put_item(
                TableName=self._table,
                Item={
                    **self._edit_key(edit.session_key, edit.message_id),
                    "chat_id": number_value(edit.chat_id),
                    "update_id": number_value(edit.update_id),
                    "edit_date": number_value(edit.edit_date),
                    "text": {"S": edit.text},
                    "expires_at": number_value(int(time.time()) + EDIT_KEEP_SECONDS),
                },
                ConditionExpression="attribute_not_exists(pk) OR edit_date <= :date",
                ExpressionAttributeValues={":date": number_value(edit.edit_date)},
            )
        )

    @aws_errors
    def latest_edit(self, session_key: str, message_id: int) -> Edit | None:
        item = (
            self._dynamodb()
            .get_item(
                TableName=self._table,
                Key=self._edit_key(session_key, message_id),
                ConsistentRead=True,
            )
            .get("Item")
        )
        if item is None:
            return None
        return Edit(
            session_key=session_key,
            chat_id=int(item["chat_id"]["N"]),
            message_id=message_id,
            update_id=int(item["update_id"]["N"]),
            edit_date=int(item["edit_date"]["N"]),
            text=item["text"]["S"],
        )

    def _edit_key(self, session_key: str, message_id: int) -> dict[str, dict[str, str]]:
        return {"pk": {"S": f"{EDIT_PREFIX}{session_key}"}, "sk": {"S": f"{message_id:012d}"}}


def _answer_item(chat_id: int, message_id: int) -> dict[str, Any]:
    return {
        "pk": {"S": f"{FEEDBACK_PREFIX}{chat_id}"},
        "sk": {"S": f"{ANSWER_PREFIX}{message_id:012d}"},
        "expires_at": number_value(int(time.time()) + FEEDBACK_KEEP_SECONDS),
    }


def _reaction(chat_id: int, item: dict[str, Any]) -> Reaction:
    _, message_id, person_id = item["sk"]["S"].split("#")
    return Reaction(
        chat_id=chat_id,
        message_id=int(message_id),
        person_id=int(person_id),
        emojis=tuple(json.loads(item["emojis"]["S"])),
        date=int(item["date"]["N"]),
    )
