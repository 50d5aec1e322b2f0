"""Invites in the sessions table, in the `pairing` partition beside the approved people (so the
webhook's rights, limited to that partition, cover them). Items (sort key):
- `invite#<SHA-256 of the token>`: the invite's expiry, uses and uses counted so far, expiring
  (TTL) with it;
- `person#<user or group id>`: whom an invite admitted, as `/approve` writes them
  (`adapters/aws/pairing.py`), with the invite's id in `invited_by`.
A use is one transaction: the invite's count goes up only while it is below its uses and the
invite has not expired, and the person is written only if they were not there; either refused,
neither happens. Why and how invites work: `core/invites.py`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from nanobot_lambda.adapters.aws.errors import BUSY_REASONS, aws_errors, cancellation_reasons
from nanobot_lambda.adapters.aws.numbers import number_value
from nanobot_lambda.adapters.aws.pairing import PARTITION, asker_attributes
from nanobot_lambda.adapters.aws.queries import items_under
from nanobot_lambda.core.invites import ID_LENGTH, Invite
from nanobot_lambda.core.pairing import Asker

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

BUSY_ATTEMPTS = 5  # concurrent uses of one invite conflict: each is tried again, briefly


class DynamoInviteStore:
    def __init__(self, table: str, dynamodb: Callable[[], DynamoDBClient]) -> None:
        self._table = table
        self._dynamodb = functools.cache(dynamodb)  # created on first use

    def _key(self, sort_key: str) -> dict[str, dict[str, str]]:
        return {"pk": {"S": PARTITION}, "sk": {"S": sort_key}}

    @aws_errors
    def make_invite(self, invite: Invite) -> None:
        self._dynamodb().put_item(
            TableName=self._table,
            Item={
                **self._key(f"invite#{invite.digest}"),
                "invite_expires": number_value(_seconds(invite.expires)),
                "max_uses": number_value(invite.max_uses),
                "uses": number_value(0),
                "made_at": number_value(_seconds(invite.made_at)),
                "expires_at": number_value(_seconds(invite.expires)),  # TTL
            },
            ConditionExpression="attribute_not_exists(pk)",
        )

    @aws_errors
    def invites(self) -> list[Invite]:
        return [_invite(item) for item in self._items("invite#")]

    @aws_errors
    def revoke_invite(self, invite_id: str) -> bool:
        found = self._items(f"invite#{invite_id[:ID_LENGTH]}")
        for item in found:
            self._dynamodb().delete_item(TableName=self._table, Key=self._key(item["sk"]["S"]))
        return bool(found)

    @aws_errors
    def use_invite(self, digest: str, admitted: Asker, at: datetime) -> bool:
        use = {
            "Update": {
                "TableName": self._table,
                "Key": self._key(f"invite#{digest}"),
                "UpdateExpression": "SET uses = uses + :one",
                "ConditionExpression": (
                    "attribute_exists(pk) AND uses < max_uses AND invite_expires > :now"
                ),
                "ExpressionAttributeValues": {
                    ":one": number_value(1),
                    ":now": number_value(_seconds(at)),
                },
            }
        }
        person = {
            "Put": {
                "TableName": self._table,
                "Item": {
                    **self._key(f"person#{admitted.user_id}"),
                    **asker_attributes(admitted),
                    "approved_at": number_value(_seconds(at)),
                    "invited_by": {"S": digest[:ID_LENGTH]},
                },
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
        client = self._dynamodb()
        for attempt in range(1, BUSY_ATTEMPTS + 1):
            try:
                client.transact_write_items(TransactItems=[use, person])  # type: ignore[list-item]
            except ClientError as error:
                reasons = cancellation_reasons(error)
                if not reasons or (set(reasons) & BUSY_REASONS and attempt == BUSY_ATTEMPTS):
                    raise  # still busy: the webhook answers 503, Telegram sends it again
                if not set(reasons) & BUSY_REASONS:
                    return False  # a condition refused it: nothing was written
                time.sleep(0.05 * 2**attempt)  # another use of the invite at the same moment
                continue
            return True
        return False

    def _items(self, prefix: str) -> list[dict[str, Any]]:
        return items_under(self._dynamodb(), self._table, PARTITION, prefix)


def _seconds(at: datetime) -> int:
    return int(at.timestamp())


def _time(seconds: str) -> datetime:
    return datetime.fromtimestamp(int(seconds), UTC)


def _invite(item: Mapping[str, Any]) -> Invite:
    return Invite(
        digest=item["sk"]["S"].removeprefix("invite#"),
        expires=_time(item["invite_expires"]["N"]),
        max_uses=int(item["max_uses"]["N"]),
        made_at=_time(item["made_at"]["N"]),
        uses=int(item["uses"]["N"]),
    )
