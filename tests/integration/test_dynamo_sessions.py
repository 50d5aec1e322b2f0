"""The DynamoDB session store on moto server: one item per message, windowed loads."""

from __future__ import annotations

import boto3
import pytest

from nanobot_lambda.aws import dynamodb_client
from nanobot_lambda.local.cfn import TemplateContext
from nanobot_lambda.sessions import DynamoSessionStore, SessionConflict


@pytest.fixture
def store(resources: TemplateContext) -> DynamoSessionStore:
    return DynamoSessionStore(resources.refs["SessionsTable"], dynamodb_client())


def turn(n: int, tool: bool = False) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = [{"role": "user", "content": f"question {n}"}]
    if tool:
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "list_dir", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{n}", "name": "list_dir", "content": "x"},
        ]
    messages.append({"role": "assistant", "content": f"answer {n}"})
    return messages


def test_empty_session(store: DynamoSessionStore) -> None:
    history = store.load("telegram:1", 50)
    assert history.messages == [] and history.next_seq == 0


def test_append_and_reload_in_order(store: DynamoSessionStore) -> None:
    history = store.load("telegram:1", 50)
    store.append(history, turn(1))
    store.append(history, turn(2, tool=True))
    reloaded = store.load("telegram:1", 50)
    assert reloaded.messages == turn(1) + turn(2, tool=True)
    assert reloaded.next_seq == 6
    assert store.load("telegram:2", 50).messages == []  # sessions are separate


def test_window_starts_at_a_user_message_and_keeps_tool_pairs(store: DynamoSessionStore) -> None:
    history = store.load("telegram:1", 0)
    for n in range(5):
        store.append(history, turn(n, tool=True))  # 4 messages per turn
    window = store.load("telegram:1", 6).messages  # cuts into turn 3's tool call
    assert window[0] == {"role": "user", "content": "question 4"}
    assert window == turn(4, tool=True)


def test_each_message_is_its_own_item(
    store: DynamoSessionStore, resources: TemplateContext
) -> None:
    history = store.load("telegram:1", 0)
    store.append(history, [{"role": "user", "content": "x" * 300_000}])
    store.append(history, [{"role": "assistant", "content": "y" * 300_000}])  # 600 KB in total
    items = boto3.client("dynamodb").query(
        TableName=resources.refs["SessionsTable"],
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "telegram:1"}},
    )["Items"]
    assert [item["sk"]["S"] for item in items] == [
        "msg#000000000000",
        "msg#000000000001",
        "~meta",
    ]
    assert len(store.load("telegram:1", 10).messages) == 2


def test_a_turn_of_more_than_100_messages(store: DynamoSessionStore) -> None:
    history = store.load("telegram:1", 0)
    messages = [{"role": "user", "content": "go"}] + [
        {"role": "assistant", "content": f"step {n}"} for n in range(150)
    ]
    store.append(history, messages)
    assert len(store.load("telegram:1", 500).messages) == 151


def test_concurrent_append_never_overwrites(store: DynamoSessionStore) -> None:
    first = store.load("telegram:1", 10)
    second = store.load("telegram:1", 10)
    store.append(first, turn(1))
    with pytest.raises(SessionConflict):
        store.append(second, turn(2))
    assert store.load("telegram:1", 10).messages == turn(1)
