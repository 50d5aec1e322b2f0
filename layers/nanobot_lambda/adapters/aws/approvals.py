"""Approvals in the sessions table (core/approvals.py).

- `approval#<id>` / `approval`: an approval asked for (the turn waiting, its queue group, the
  approver, the deadline in epoch seconds, the message that asks, the turn's job as JSON),
  expiring a day after its deadline. The webhook reads it to check a press, the scheduler at the
  deadline; agent_turn writes it when it asks.
- `approvals` / `allow#<scope>#<action>`: a standing permission ("Always allow here"), listed by
  one Query for `/approvals`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from nanobot_lambda.adapters.aws.errors import CONDITION_FAILED, aws_errors, error_code
from nanobot_lambda.adapters.aws.numbers import number_value
from nanobot_lambda.core.approvals import Approval, Permission

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEPT_AFTER_DEADLINE_SECONDS = 24 * 3600
PERMISSIONS = "approvals"


class DynamoApprovalBook:
    def __init__(self, table: str, dynamodb: Callable[[], DynamoDBClient]) -> None:
        self._table = table
        self._dynamodb = functools.cache(dynamodb)  # made on first use (the webhook's)

    def _key(self, approval_id: str) -> dict[str, Any]:
        return {"pk": {"S": f"approval#{approval_id}"}, "sk": {"S": "approval"}}

    @aws_errors
    def put(self, approval: Approval) -> None:
        item: dict[str, Any] = {
            **self._key(approval.approval_id),
            "session_key": {"S": approval.session_key},
            "turn_id": {"S": approval.turn_id},
            "chat_id": number_value(approval.chat_id),
            "approver": number_value(approval.approver),
            "deadline": number_value(approval.deadline),
            "job": {"S": approval.job},
            "expires_at": number_value(approval.deadline + KEPT_AFTER_DEADLINE_SECONDS),
        }
        if approval.message_id is not None:
            item["message_id"] = number_value(approval.message_id)
        try:
            self._dynamodb().put_item(
                TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(pk)"
            )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise  # else: an earlier run of the turn recorded it

    @aws_errors
    def get(self, approval_id: str) -> Approval | None:
        item = (
            self._dynamodb()
            .get_item(TableName=self._table, Key=self._key(approval_id), ConsistentRead=True)
            .get("Item")
        )
        if item is None:
            return None
        return Approval(
            approval_id=approval_id,
            session_key=item["session_key"]["S"],
            turn_id=item["turn_id"]["S"],
            chat_id=int(item["chat_id"]["N"]),
            approver=int(item["approver"]["N"]),
            deadline=int(item["deadline"]["N"]),
            job=item["job"]["S"],
            message_id=int(item["message_id"]["N"]) if "message_id" in item else None,
        )

    @aws_errors
    def note_message(self, approval_id: str, message_id: int) -> None:
        self._dynamodb().update_item(
            TableName=self._table,
            Key=self._key(approval_id),
            UpdateExpression="SET message_id = :message",
            ExpressionAttributeValues={":message": number_value(message_id)},
        )

    def _permission_key(self, scope: str, action: str) -> dict[str, Any]:
        return {"pk": {"S": PERMISSIONS}, "sk": {"S": f"allow#{scope}#{action}"}}

    @aws_errors
    def allow_always(self, permission: Permission) -> None:
        self._dynamodb().put_item(
            TableName=self._table,
            Item={
                **self._permission_key(permission.scope, permission.action),
                "scope": {"S": permission.scope},
                "action": {"S": permission.action},
                "granted_by": number_value(permission.granted_by),
                "granted_at": {"S": permission.granted_at},
            },
        )

    @aws_errors
    def allowed(self, scope: str, action: str) -> bool:
        response = self._dynamodb().get_item(
            TableName=self._table, Key=self._permission_key(scope, action), ConsistentRead=True
        )
        return "Item" in response

    @aws_errors
    def permissions(self) -> list[Permission]:
        pages = (
            self._dynamodb()
            .get_paginator("query")
            .paginate(
                TableName=self._table,
                KeyConditionExpression="pk = :pk AND begins_with(sk, :allow)",
                ExpressionAttributeValues={":pk": {"S": PERMISSIONS}, ":allow": {"S": "allow#"}},
                ConsistentRead=True,
            )
        )
        return [
            Permission(
                item["scope"]["S"],
                item["action"]["S"],
                int(item["granted_by"]["N"]),
                item["granted_at"]["S"],
            )
            for page in pages
            for item in page["Items"]
        ]

    @aws_errors
    def revoke(self, scope: str, action: str) -> None:
        self._dynamodb().delete_item(TableName=self._table, Key=self._permission_key(scope, action))
