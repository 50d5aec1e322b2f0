"""/stop flags in the sessions table (moto server)."""

from __future__ import annotations

import boto3

from nanobot_lambda.aws import dynamodb_client
from nanobot_lambda.commands import STOP_FLAG_SECONDS, StopFlags
from nanobot_lambda.local.cfn import TemplateContext
from nanobot_lambda.sessions import DynamoSessionStore


def test_request_check_clear(resources: TemplateContext) -> None:
    table = resources.refs["SessionsTable"]
    flags = StopFlags(table, dynamodb_client)
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
    StopFlags(table, dynamodb_client).request("telegram:1")
    assert store.load("telegram:1", 10).messages == [{"role": "user", "content": "hi"}]
