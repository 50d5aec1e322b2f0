"""/stop flags in the sessions table (moto server)."""

from __future__ import annotations

import boto3

from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.adapters.aws.stop_flags import STOP_FLAG_SECONDS, DynamoStopFlags
from nanobot_lambda.operator.local.cfn import TemplateContext


def test_request_check_clear(resources: TemplateContext) -> None:
    table = resources.refs["SessionsTable"]
    flags = DynamoStopFlags(table, dynamodb_client)
    assert not flags.requested_since("telegram:1", 0)
    flags.request("telegram:1", at_ms=5_000)
    assert flags.requested_since("telegram:1", 4_000)
    assert not flags.requested_since("telegram:1", 6_000)  # raised before this turn began
    assert not flags.requested_since("telegram:2", 0)
    item = boto3.client("dynamodb").get_item(
        TableName=table, Key={"pk": {"S": "stop#telegram:1"}, "sk": {"S": "flag"}}
    )["Item"]
    assert int(item["expires_at"]["N"]) == 5 + STOP_FLAG_SECONDS
    assert flags.clear("telegram:1") is True
    assert flags.clear("telegram:1") is False


def test_flags_do_not_disturb_the_session(resources: TemplateContext) -> None:
    table = resources.refs["SessionsTable"]
    store = DynamoSessionStore(table, dynamodb_client())
    history = store.load("telegram:1", 10)
    store.append(history, [{"role": "user", "content": "hi"}])
    DynamoStopFlags(table, dynamodb_client).request("telegram:1")
    assert store.load("telegram:1", 10).messages == [{"role": "user", "content": "hi"}]
