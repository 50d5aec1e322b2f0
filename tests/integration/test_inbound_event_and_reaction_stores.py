"""Hooks, their requests' records, reactions and edits in the sessions table (moto server)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3

from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.inbound_events import DynamoHookStore
from nanobot_lambda.adapters.aws.reactions_and_edits import DynamoFeedbackBook
from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.core.inbound_events import (
    DELIVERIES_KEEP,
    DELIVERIES_KEPT,
    Delivery,
    new_hook,
)
from nanobot_lambda.core.reactions_and_edits import Edit, Reaction, reactions_to_answers
from nanobot_lambda.operator.local.cfn import TemplateContext

NOW = datetime.now(UTC)


def test_hooks_are_added_once_listed_read_and_removed(resources: TemplateContext) -> None:
    store = DynamoHookStore(resources.refs["SessionsTable"], dynamodb_client)
    ci = new_hook("ci", -1001234567890, 600, quiet=True, now=NOW, created_by=111111111)
    uptime = new_hook("uptime", 111111111, None, quiet=False, now=NOW, created_by=None)
    assert store.add(ci) and store.add(uptime)
    taken = new_hook("ci", 222222222, None, quiet=False, now=NOW, created_by=None)
    assert not store.add(taken)  # the first one stands, its secret too
    assert store.hook("ci") == ci
    assert [hook.name for hook in store.hooks()] == ["ci", "uptime"]
    assert store.remove("ci") and not store.remove("ci")
    assert store.hook("ci") is None


def test_a_hook_keeps_the_update_that_made_it_and_one_kept_before_reads_without(
    resources: TemplateContext,
) -> None:
    table = resources.refs["SessionsTable"]
    store = DynamoHookStore(table, dynamodb_client)
    made = new_hook(
        "ci", 111111111, None, quiet=False, now=NOW, created_by=111111111, made_in="update-7"
    )
    assert store.add(made) and store.hook("ci") == made
    assert store.hooks()[0].made_in == "update-7"
    # An item as hooks were kept before `made_in`: it reads, made by no update.
    boto3.client("dynamodb").put_item(
        TableName=table,
        Item={
            "pk": {"S": "hooks"},
            "sk": {"S": "hook#old"},
            "name": {"S": "old"},
            "chat_id": {"N": "111111111"},
            "quiet": {"BOOL": False},
            "secret": {"S": "kept-before"},
            "created_at": {"S": "2026-11-01T00:00:00+00:00"},
            "created_by": {"N": "111111111"},
        },
    )
    old = store.hook("old")
    assert old is not None and old.made_in is None
    assert old.secret.get_secret_value() == "kept-before"


def test_a_hooks_rate_and_deliveries_are_its_own(resources: TemplateContext) -> None:
    store = DynamoHookStore(resources.refs["SessionsTable"], dynamodb_client)
    minute = NOW.strftime("%Y-%m-%dT%H:%M")
    assert [store.take_slot("ci", minute, 3) for _ in range(4)] == [True, True, True, False]
    assert store.take_slot("deploys", minute, 3)  # another hook's minute
    assert not store.seen("ci", ["sig#abc", "delivery#d-1"])
    store.remember("ci", ["sig#abc", "delivery#d-1"], NOW + timedelta(days=1))
    assert store.seen("ci", ["delivery#d-1"]) and store.seen("ci", ["sig#zzz", "sig#abc"])
    assert not store.seen("deploys", ["sig#abc"])
    store.remember("ci", ["sig#old"], NOW - timedelta(seconds=1))  # expired, not yet deleted
    assert not store.seen("ci", ["sig#old"])


def delivery(n: int, at: datetime = NOW, **fields: object) -> Delivery:
    values: dict[str, Any] = {
        "at": at.isoformat(timespec="seconds"),
        "outcome": "refused",
        "status": 401,
        "reason": "wrong signature",
        "size": n,
        "digest": "ab" * 32,
        **fields,
    }
    return Delivery(**values)


def test_a_hook_keeps_its_last_deliveries_in_a_ring_newest_first(
    resources: TemplateContext,
) -> None:
    table = resources.refs["SessionsTable"]
    store = DynamoHookStore(table, dynamodb_client)
    store.remember("ci", ["delivery#d-1"], NOW + timedelta(days=1))  # a replay's record
    queued = delivery(
        0,
        outcome="queued",
        status=202,
        reason=None,
        delivery_id="d-1",
        event="push",
        turn_id="hook-ci-d-1",
        chat_id=-1001234567890,
        thread_id=600,
    )
    store.record("ci", queued)
    assert store.deliveries("ci") == [queued]
    for n in range(1, DELIVERIES_KEPT + 5):
        store.record("ci", delivery(n, digest=None))
    kept = store.deliveries("ci")
    assert [each.size for each in kept] == list(range(DELIVERIES_KEPT + 4, 4, -1))
    assert kept[0] == delivery(DELIVERIES_KEPT + 4, digest=None)
    assert store.deliveries("deploys") == []  # another hook's
    items = boto3.client("dynamodb").query(
        TableName=table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "hook#ci"}},
    )["Items"]
    # The ring's slots, its counter and the replay's record: no more however many came.
    assert len(items) == DELIVERIES_KEPT + 2
    assert all(int(item["expires_at"]["N"]) > NOW.timestamp() for item in items)


def test_an_expired_delivery_is_no_delivery(resources: TemplateContext) -> None:
    store = DynamoHookStore(resources.refs["SessionsTable"], dynamodb_client)
    store.record("old", delivery(1, at=NOW - DELIVERIES_KEEP - timedelta(seconds=1)))
    store.record("old", delivery(2))
    assert [each.size for each in store.deliveries("old")] == [2]


def test_the_bots_answers_are_told_apart_from_other_messages(resources: TemplateContext) -> None:
    book = DynamoFeedbackBook(resources.refs["SessionsTable"], dynamodb_client)
    book.record_answers(111111111, [5, 11, 1_000_000_000_001])
    book.record_answers(222222222, [12])
    book.record_reaction(Reaction(111111111, 11, 111111111, ("👍",), 100))
    book.record_reaction(Reaction(111111111, 12, 111111111, ("👍",), 100))
    assert book.answers_among(111111111, {4, 11, 12, 1_000_000_000_001}) == {
        11,
        1_000_000_000_001,
    }
    assert book.answers_among(111111111, set()) == set()
    assert book.answers_among(222222222, {11, 12}) == {12}
    assert [reaction.message_id for reaction in book.reactions(111111111)] == [11, 12]
    assert [r.message_id for r in reactions_to_answers(book, 111111111)] == [11]

    # Folded into the transaction that saves a turn, as agent_turn records its answers.
    sessions = DynamoSessionStore(resources.refs["SessionsTable"], dynamodb_client())
    history = sessions.load("telegram:111111111", 10)
    sessions.append(
        history, [{"role": "user", "content": "hi"}], also=book.answer_writes(111111111, [12])
    )
    assert [r.message_id for r in reactions_to_answers(book, 111111111)] == [11, 12]

    # Each reaction and answer expires by the table's TTL, about 90 days on: a chat's
    # feedback partition holds its last months, not its whole life.
    items = boto3.client("dynamodb").query(
        TableName=resources.refs["SessionsTable"],
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "feedback#111111111"}},
    )["Items"]
    assert len(items) == 6  # four answers, two reactions
    for item in items:
        left = int(item["expires_at"]["N"]) - datetime.now(UTC).timestamp()
        assert timedelta(days=89) < timedelta(seconds=left) <= timedelta(days=90), item


def test_reactions_and_edits_keep_the_newest_and_leave_the_session_alone(
    resources: TemplateContext,
) -> None:
    table = resources.refs["SessionsTable"]
    book = DynamoFeedbackBook(table, dynamodb_client)
    sessions = DynamoSessionStore(table, dynamodb_client())
    history = sessions.load("telegram:111111111", 10)
    sessions.append(history, [{"role": "user", "content": "hi", "message_id": 10}])

    book.record_reaction(Reaction(111111111, 11, 111111111, ("👍",), 100))
    book.record_reaction(Reaction(111111111, 11, 111111111, ("👎", "🔥"), 120))
    book.record_reaction(Reaction(111111111, 11, 111111111, ("❤",), 110))  # late, older
    book.record_reaction(Reaction(111111111, 9, 111111111, (), 90))
    book.record_reaction(Reaction(222222222, 11, 222222222, ("👍",), 100))
    assert book.reactions(111111111) == [
        Reaction(111111111, 9, 111111111, (), 90),
        Reaction(111111111, 11, 111111111, ("👎", "🔥"), 120),
    ]

    book.record_edit(Edit("telegram:111111111", 111111111, 10, 5, 200, "second"))
    book.record_edit(Edit("telegram:111111111", 111111111, 10, 4, 150, "first"))
    assert book.latest_edit("telegram:111111111", 10) == Edit(
        "telegram:111111111", 111111111, 10, 5, 200, "second"
    )
    assert book.latest_edit("telegram:111111111", 12) is None
    item = boto3.client("dynamodb").get_item(
        TableName=table, Key={"pk": {"S": "edit#telegram:111111111"}, "sk": {"S": "000000000010"}}
    )["Item"]
    assert "expires_at" in item
    assert sessions.load("telegram:111111111", 10).messages == [
        {"role": "user", "content": "hi", "message_id": 10}
    ]
