"""The DynamoDB session store on moto server: one item per message, windowed loads."""

from __future__ import annotations

import json
import time
from datetime import datetime

import boto3
import pytest

from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.adapters.aws.usage import DynamoUsageStore
from nanobot_lambda.core.errors import StorageConflict, StorageError
from nanobot_lambda.core.ports import StoredWrite
from nanobot_lambda.core.sessions import ChatPreferences, SessionConflict
from nanobot_lambda.core.usage_counts import Tally
from nanobot_lambda.operator.local.cfn import TemplateContext
from tests.support.aws_requests import RequestCounter


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


def seed(resources: TemplateContext, key: str, messages: list[dict[str, object]]) -> None:
    """Write a session's items as the store lays them out (msg# items and the ~meta header)."""
    table = boto3.resource("dynamodb").Table(resources.refs["SessionsTable"])
    with table.batch_writer() as batch:
        for seq, message in enumerate(messages):
            batch.put_item(
                Item={"pk": key, "sk": f"msg#{seq:012d}", "message": json.dumps(message)}
            )
        batch.put_item(Item={"pk": key, "sk": "~meta", "next_seq": len(messages)})


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


def test_a_2000_message_session_loads_its_window_in_one_query(resources: TemplateContext) -> None:
    counter = RequestCounter()
    try:
        store = DynamoSessionStore(resources.refs["SessionsTable"], dynamodb_client())
        # Seeded directly (moto's transactions slow down with partition size), then a real
        # append on top: 500 turns of 4 messages, tool calls included.
        seed(resources, "telegram:long", [m for n in range(499) for m in turn(n, tool=True)])
        history = store.load("telegram:long", 0)
        assert history.next_seq == 1996
        store.append(history, turn(499, tool=True))
        assert history.next_seq == 2000
        counter.reset()
        window = store.load("telegram:long", 50)
        assert counter.operations("dynamodb") == {"Query": 1}
        assert window.next_seq == 2000
        assert window.messages[0]["role"] == "user"
        assert window.messages[-1] == {"role": "assistant", "content": "answer 499"}
        assert len(window.messages) == 48  # 50 newest, cut back to the start of a turn
    finally:
        counter.close()


def test_cursor_hides_consolidated_messages(store: DynamoSessionStore) -> None:
    history = store.load("telegram:1", 10)
    for n in range(3):
        store.append(history, turn(n))
    assert store.advance_cursor("telegram:1", 0, 4)
    assert not store.advance_cursor("telegram:1", 0, 6)  # someone else moved it already
    loaded = store.load("telegram:1", 10)
    assert loaded.consolidated_upto == 4 and loaded.unconsolidated == 2
    assert loaded.messages == turn(2)
    assert [seq for seq, _ in store.load_range("telegram:1", 1, 4)] == [1, 2, 3]


def test_summarised_messages_expire_and_the_rest_stay(resources: TemplateContext) -> None:
    """Once the cursor passes them, messages get the table's TTL attribute (their content is in
    HISTORY.md); those after the cursor, and the header, keep none. Without a retention, none."""
    table = resources.refs["SessionsTable"]
    raw = boto3.client("dynamodb")
    for key, days in (("telegram:7", 90), ("telegram:8", None)):
        store = DynamoSessionStore(table, dynamodb_client(), summarised_keep_days=days)
        history = store.load(key, 10)
        for n in range(3):
            store.append(history, turn(n))
            history = store.load(key, 10)
        before = int(time.time())
        assert store.advance_cursor(key, 0, 4)
        assert not store.advance_cursor(key, 0, 6)  # another run moved it: nothing more expires
        items = raw.query(
            TableName=table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": key}},
        )["Items"]
        expiring = {
            item["sk"]["S"]: int(item["expires_at"]["N"]) for item in items if "expires_at" in item
        }
        if days is None:
            assert expiring == {}
            continue
        assert sorted(expiring) == [f"msg#{seq:012d}" for seq in range(4)]
        assert all(
            before + days * 86_400 <= at <= time.time() + days * 86_400 for at in expiring.values()
        )
        assert store.load(key, 10).messages == turn(2)  # the window is untouched


def test_chat_preferences_load_with_the_session_and_survive_its_saves(
    store: DynamoSessionStore,
) -> None:
    """/model and /think choices live in the header: a turn loaded before the choice still
    saves (the choice does not touch next_seq), and the choice outlives that save."""
    assert store.load("telegram:7", 50).preferences == ChatPreferences()
    running = store.load("telegram:7", 50)
    store.set_preferences("telegram:7", ChatPreferences("smart", "high"))
    store.append(running, turn(1), turn_id="t1")

    history = store.load("telegram:7", 50)
    assert history.preferences == ChatPreferences("smart", "high")
    assert [m["content"] for m in history.messages] == ["question 1", "answer 1"]

    store.set_preferences("telegram:7", ChatPreferences("smart", None))
    assert store.load("telegram:7", 50).preferences == ChatPreferences("smart", None)
    store.set_preferences("telegram:7", ChatPreferences())
    assert store.load("telegram:7", 50).preferences == ChatPreferences()
    assert store.load("telegram:8", 50).preferences == ChatPreferences()  # each chat its own


def folded_usage(resources: TemplateContext, **condition: object) -> list[StoredWrite]:
    """The usage counts a turn folds into its save (DynamoUsageStore.updates), the day's made
    conditional as given: no store folds a conditional write today, a later one may."""
    usage = DynamoUsageStore(resources.refs["SessionsTable"], dynamodb_client(), timezone="UTC")
    writes = [dict(write) for write in usage.updates(1, Tally(turns=1), datetime(2026, 11, 22))]
    writes[0] = {"Update": {**writes[0]["Update"], **condition}}
    return writes


def test_a_folded_write_s_failed_condition_is_that_store_s_conflict_not_the_session_s(
    store: DynamoSessionStore, resources: TemplateContext
) -> None:
    """A reload of the session cannot change another store's item: the save is refused as a
    StorageConflict naming that store (the turn fails, and SQS retries it), never a
    SessionConflict (which the saver answers with a reload and another try). Nothing is kept."""
    history = store.load("telegram:1", 50)
    store.append(history, turn(1))
    counter = RequestCounter()  # before the client: it copies the session's handlers
    store = DynamoSessionStore(resources.refs["SessionsTable"], dynamodb_client())
    try:
        with pytest.raises(StorageConflict) as refused:
            store.append(
                history,
                turn(2),
                turn_id="t2",
                also=folded_usage(resources, ConditionExpression="attribute_exists(pk)"),
            )
        assert counter.operations("dynamodb") == {"TransactWriteItems": 1}  # not tried again
    finally:
        counter.close()
    assert not isinstance(refused.value, SessionConflict)
    assert "the usage counts (day#2026-11-22)" in str(refused.value)
    assert "question 2" not in str(refused.value)
    loaded = store.load("telegram:1", 50)
    assert loaded.messages == turn(1) and loaded.recent_turns == ()
    assert history.next_seq == 2
    usage = DynamoUsageStore(resources.refs["SessionsTable"], dynamodb_client(), timezone="UTC")
    assert usage.summary(1, datetime(2026, 11, 22)).total == Tally()


def test_a_session_that_moved_is_a_session_conflict_even_when_a_folded_write_fails_too(
    store: DynamoSessionStore, resources: TemplateContext
) -> None:
    """Both causes at once: the session's wins, since the save has to reload anyway."""
    stale = store.load("telegram:1", 50)
    store.append(store.load("telegram:1", 50), turn(1))
    with pytest.raises(SessionConflict):
        store.append(
            stale, turn(2), also=folded_usage(resources, ConditionExpression="attribute_exists(pk)")
        )


def test_an_invalid_folded_write_is_a_storage_error_naming_its_cause(
    store: DynamoSessionStore, resources: TemplateContext
) -> None:
    """A folded write DynamoDB refuses as invalid (here: a count added to a string) is neither
    conflict; the error names its code, not what the items hold; nothing is kept."""
    boto3.client("dynamodb").put_item(
        TableName=resources.refs["SessionsTable"],
        Item={"pk": {"S": "usage#1"}, "sk": {"S": "day#2026-11-22"}, "turns": {"S": "one"}},
    )
    history = store.load("telegram:1", 50)
    with pytest.raises(StorageError) as refused:
        store.append(history, turn(1), also=folded_usage(resources))
    assert not isinstance(refused.value, StorageConflict)
    assert str(refused.value).startswith("DynamoSessionStore.append: ")
    assert "question 1" not in str(refused.value)
    assert store.load("telegram:1", 50).messages == [] and history.next_seq == 0
