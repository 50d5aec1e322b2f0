"""What the stores share of DynamoDB: every item of a partition whose sort key starts with a
prefix, page after page; and a counter that stops at a limit (a rate)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nanobot_lambda.adapters.aws.errors import written
from nanobot_lambda.adapters.aws.numbers import number_value

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def items_under(
    dynamodb: DynamoDBClient, table: str, partition: str, prefix: str
) -> list[dict[str, Any]]:
    """The items of `partition` whose sort key starts with `prefix`, in sort key order
    (consistent reads: what was just written is seen)."""
    items: list[dict[str, Any]] = []
    arguments: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
        "ExpressionAttributeValues": {":pk": {"S": partition}, ":prefix": {"S": prefix}},
        "ConsistentRead": True,
    }
    while True:
        response = dynamodb.query(**arguments)
        items += response.get("Items", [])
        if "LastEvaluatedKey" not in response:
            return items
        arguments["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def count_within(
    dynamodb: DynamoDBClient, table: str, key: dict[str, Any], limit: int, expires_at: int
) -> bool:
    """Add one to the `count` of the item at `key` (made if missing, expiring at `expires_at`,
    epoch seconds); False, and nothing counted, once it has reached `limit`."""
    return written(
        lambda: dynamodb.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="ADD #count :one SET expires_at = :expires",
            ConditionExpression="attribute_not_exists(#count) OR #count < :limit",
            ExpressionAttributeNames={"#count": "count"},
            ExpressionAttributeValues={
                ":one": number_value(1),
                ":limit": number_value(limit),
                ":expires": number_value(expires_at),
            },
        )
    )
